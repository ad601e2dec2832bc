"""The runs people most need to analyze are the ones that died: stat and
explain read what a killed, crashed, exec'd or disk-starved process
recorded, say how it ended (the status record of format 1.8, or inferred
from the events of an older file), mark the figures partial and name the
ones that are incomplete; anything lost is said (issue 11)."""
import json
import re
import os
import shutil
import signal
import subprocess
import time

import pytest

from mt import CLI, PYTHON, clean_env, program, run, shim_env
from tracefile import (EXIT, LOST, chunk, chunks, event, header_end,
                       with_status)

CORPUS = os.path.join(os.path.dirname(__file__), "..", "fuzz", "corpus")
AT_EXIT = {"syscalls", "page_faults", "cpu_s", "wall_s", "threads",
           "peak_rss_bytes", "shim_syscalls"}


def stat(path, *flags, check=True):
    r = run([CLI, "stat", "--json", *flags, str(path)], clean_env(), check=check)
    # (the first line: path's own process; its children's files follow)
    return (json.loads(r.stdout.splitlines()[0]) if r.returncode == 0 else None), r


def explain(path):
    r = run([CLI, "explain", "--json", str(path)], clean_env())
    return json.loads(r.stdout), r


def ids(report, region):
    return {f["id"] for f in report["findings"] if f["region"] == region}


def record(tmp_path, cmd, name="t.mt", **env):
    path = tmp_path / name
    r = run(cmd, shim_env("glibc", MEMTRACE_OUT=str(path), **env), check=False)
    return path, r


# A recording with no progress events (format 1.19): a file written
# before them, or with the resident samples off, whose thread writes them.
NO_PROGRESS = {"MEMTRACE_RSS": "0"}


def proc_figures(pid):
    """(minor faults, CPU seconds) of a live process, as the kernel has them."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # (fields 10, 14 and 15 of proc(5); the first after the name is 3)
    return int(fields[7]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kill_recorded(cmd, path, seconds, env=None, before_kill=None):
    """cmd recording into path, killed with SIGKILL (as the OOM killer
    does) mid-run; before_kill(pid)'s result, if given."""
    p = subprocess.Popen(cmd, env=shim_env("glibc", MEMTRACE_OUT=str(path),
                                           **(env or {})),
                         stdout=subprocess.DEVNULL)
    # From its first chunks on disk (a loaded machine starts it late),
    # then `seconds` more.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
            not path.exists() or path.stat().st_size < 64 * 1024):
        time.sleep(0.05)
    time.sleep(seconds)
    seen = before_kill(p.pid) if before_kill else None
    p.send_signal(signal.SIGKILL)
    p.wait()
    return seen


def killed_churn(tmp_path, seconds=1.0, mode="trim", env=NO_PROGRESS):
    """churn, killed mid-run."""
    path = tmp_path / "killed.mt"
    kill_recorded([program("churn"), mode, "100000000"], path, seconds, env)
    return path


def test_a_killed_churn_is_analyzed_like_a_finished_one(tmp_path):
    """(without progress events: MEMTRACE_RSS=0, or a file before 1.19)"""
    path = killed_churn(tmp_path)
    s, r = stat(path)
    assert s["partial"] is True
    assert s["recording"]["end"] == "killed"
    assert s["recording"]["said_by"] == "status record"
    assert "killed (no closing record: SIGKILL, the OOM killer" in s["partial_reason"]
    # What only exit knows is not made up: null, and listed.
    assert AT_EXIT <= set(s["incomplete"])
    assert s["wall_s"] is None and s["cpu_s"] == {"user": None, "system": None}
    # What was recorded is there: the calls of the region, its brk moves.
    trim = next(g for g in s["regions"] if g["name"] == "trim")
    assert trim["count"] > 20
    assert s["calls"]["malloc"] >= 2 * trim["count"]
    assert trim["brk"]["shrink"] >= trim["count"] - 1
    assert s["recording"]["recorded_s"] > 0.1
    assert "partial figures: killed" in r.stderr
    # The table says so too, and shows no made-up zero.
    table = run([CLI, "stat", str(path)], clean_env()).stdout
    assert "PARTIAL: killed" in table and "not recorded  wall" in table

    # explain finds on it what it finds on a finished run of the program.
    report, r = explain(path)
    finished, _ = record(tmp_path, [program("churn"), "trim", "40"], "whole.mt")
    whole, _ = explain(finished)
    assert "heap-trim-churn" in ids(whole, "trim")
    # threshold rests on glibc's thresholds at exit, which a killed
    # process never reports: the one finding that cannot be made.
    assert ids(report, "trim") == ids(whole, "trim") - {"threshold"}
    assert "glibc_thresholds" in s["incomplete"]
    assert report["partial"] is True and "partial" not in whole
    for f in report["findings"]:
        assert f["incomplete_data"].startswith("killed")
    assert "partial recording: killed" in r.stderr


def test_a_killed_process_is_measured_to_its_last_progress_record(tmp_path):
    """A process killed before exit had no time, CPU, page faults or
    system calls, which only its closing record carried, and no finding
    about the whole run could be made: the shim's sampling thread writes
    them every 100 ms (the progress event, format 1.19).  A killed churn
    of 40 MiB blocks is found as a finished run of it is, its figures
    those the kernel had a moment before the kill."""
    path = tmp_path / "killed.mt"
    churn = os.path.join(os.path.dirname(__file__), "..", "programs",
                         "large_churn.py")
    start = time.monotonic()
    faults, cpu = kill_recorded([PYTHON, churn, "1000000"], path, 1.0,
                                before_kill=proc_figures)
    elapsed = time.monotonic() - start
    s, r = stat(path)
    assert s["recording"]["end"] == "killed"
    measured = s["recording"]["measured_to_s"]
    assert 0.5 < measured <= elapsed, s["recording"]
    assert f"those its last progress record had, {measured:.2f} s into the run" \
        in s["partial_reason"]
    assert not {"syscalls", "page_faults", "cpu_s", "wall_s", "threads",
                "peak_rss_bytes"} & set(s["incomplete"]), s["incomplete"]
    assert {"shim_syscalls", "glibc_thresholds"} <= set(s["incomplete"])
    assert s["wall_s"] == pytest.approx(measured)
    # What /proc said just before the kill bounds them (the last record
    # is at most 100 ms older, more on a loaded machine; one written
    # between the look and the kill adds a few faults; /proc's CPU is in
    # whole ticks).
    assert 0.5 * faults <= s["page_faults"]["minor"] <= faults + 64, (s["page_faults"], faults)
    used = s["cpu_s"]["user"] + s["cpu_s"]["system"]
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert 0.5 * cpu <= used <= cpu + 3 * tick, (s["cpu_s"], cpu)
    assert s["sources"]["page_faults"] == "kernel"
    assert s["syscalls"]["munmap"] >= 5, s["syscalls"]
    # (the most resident sampled: a 40 MiB block is live, part touched,
    # most of each round)
    assert s["peak_rss_bytes"] >= 20 << 20, s["peak_rss_bytes"]
    table = run([CLI, "stat", str(path)], clean_env()).stdout
    assert "peak resident, most sampled" in table, table

    # explain analyzes the whole run, and finds what it finds on a
    # finished one.
    report, r = explain(path)
    finished, _ = record(tmp_path, [PYTHON, churn, "30"], "whole.mt")
    whole, _ = explain(finished)
    assert "mmap-churn" in ids(whole, "(whole program)")
    assert ids(report, "(whole program)") == ids(whole, "(whole program)")
    for f in report["findings"]:
        assert "last progress record had" in f["incomplete_data"]
    text = run([CLI, "explain", str(path)], clean_env()).stdout
    assert "[recorded, not measured]" not in text, text

    # Without them, the whole run is not analyzed, and no "0 page faults"
    # is said of it as measured.
    kill_recorded([PYTHON, churn, "1000000"], tmp_path / "none.mt", 1.0,
                  NO_PROGRESS)
    text = run([CLI, "explain", str(tmp_path / "none.mt")], clean_env()).stdout
    assert "[recorded, not measured]" in text, text
    assert "[no finding]" not in text, text


def test_a_killed_or_crashed_process_keeps_its_sites(tmp_path):
    """The sites are written now and then while they change (format 1.11),
    and before a fatal signal: a process that never reaches exit keeps
    them, where they were in its closing record only."""
    path = killed_churn(tmp_path, env=None)
    s, _ = stat(path)
    assert s["sites"], "no sites in a killed trace"
    churn_c = os.path.join(os.path.dirname(__file__), "..", "programs", "churn.c")
    assert any(f.get("file", "").endswith("churn.c") or
               f.get("object", "").endswith("/churn")
               for x in s["sites"] for f in x["stack"]), s["sites"]
    assert os.path.exists(churn_c)
    # a crash: the sites written by the fatal signal's handler
    crashed, r = record(tmp_path, [program("hostile"), "crash", "30", "1048576"],
                        "crash.mt")
    assert r.returncode != 0
    s, _ = stat(crashed)
    assert s["recording"]["end"] == "signal"
    made = sum(x["large"]["allocations"] for x in s.get("sites") or [])
    assert made == s["large"]["allocations"] == 30, (made, s["large"])


def test_a_python_run_killed_early_keeps_the_sites_of_its_churn(tmp_path):
    """New sites are written within a quarter of the run so far (100 ms
    to 1 s), not 1 s after they appear: a NumPy script killed at 0.85 s
    had on disk only the sites of its imports, written at 0.05 s, and
    its churn was said done "on the allocator's own time" (new-user
    trial 39).  Sites written before the figures were are told as
    such, their shares among themselves."""
    prog = os.path.join(os.path.dirname(__file__), "..", "programs", "np_concat.py")
    path = tmp_path / "killed.mt"
    kill_recorded([PYTHON, prog, "200"], path, 0.6)
    report, r = explain(path)
    churn = [f for f in report["findings"] if f["id"] == "mmap-churn"]
    assert churn, report["findings"]
    lines = [fr for x in churn[0]["sites"] for fr in x["stack"]
             if fr.get("file", "").endswith("np_concat.py")]
    assert any(fr["line"] == 11 for fr in lines), churn[0]["sites"]
    assert "its own time" not in churn[0]["explanation"]
    s, _ = stat(path)
    assert 0 < s["recording"]["sites_to_s"] < s["recording"]["measured_to_s"]
    assert "its call sites those last written" in r.stderr
    # (and headed as what it is: not "the whole run"; new-user trial 40)
    text = run([CLI, "explain", str(path)], clean_env()).stdout
    assert "[mmap-churn] the run as far as it was recorded (no regions marked)" \
        in text, text


def test_dump_reads_a_killed_trace_without_salvage(tmp_path):
    path = killed_churn(tmp_path, 0.5, env=None)
    r = run([CLI, "dump", str(path)], clean_env())
    assert "# status end=recording" in r.stdout
    assert " region_end " in r.stdout
    # (an event of a tag above 31, format 1.19)
    assert re.search(r" progress wall_us=\d+ user_us=", r.stdout), r.stdout[-2000:]


def test_how_the_process_ended_is_said(tmp_path):
    path, _ = record(tmp_path, [program("exits"), "abort", "0"])
    s, r = stat(path)
    assert s["recording"]["end"] == "signal"
    assert s["recording"]["signal"] == signal.SIGABRT
    assert s["partial"] is True and AT_EXIT <= set(s["incomplete"])
    # Every buffer was written out: the events are whole.
    assert "calls" not in s["incomplete"]
    assert s["calls"]["malloc"] >= 1
    said = "fatal signal 6 (SIGABRT)"
    assert said in s["partial_reason"] and said in r.stderr


def test_a_process_that_leaves_by_exit_now_has_its_closing_record(tmp_path):
    """_exit (Python's os._exit, a worker's usual end) writes the closing
    record as exit does, the status still saying _exit and its value: the
    figures at exit are whole (they were lost, and explain of a program
    that ends itself so had nothing to say: new-user trial 16)."""
    path, _ = record(tmp_path, [program("exits"), "_exit", "6"])
    s, r = stat(path)
    assert s["recording"]["end"] == "_exit"
    assert s["recording"]["exit_status"] == 6
    assert not s.get("partial"), s.get("incomplete")
    assert AT_EXIT <= set(s), set(s)
    assert s["calls"]["malloc"] >= 1
    assert "complete figures: left by _exit(6)" in r.stderr, r.stderr


@pytest.mark.parametrize("how,cmd,status", [
    ("return", [program("exits"), "return", "4"], 4),
    ("exit from a thread", [program("exits"), "thread", "300"], 300 & 0xff),
    ("sys.exit", [PYTHON, "-c", "import sys; sys.exit(2)"], 2),
    ("success", [program("exits"), "exit", "0"], 0),
])
def test_a_normal_exits_status_is_in_the_status_record(how, cmd, status, tmp_path):
    """A return from main and Python's sys.exit reach exit() inside libc,
    where no interposed call sees them: the status record said -1.  The
    shim wraps the program's start to be told it (start_main.c)."""
    path, r = record(tmp_path, cmd)
    assert r.returncode == status
    s, st = stat(path)
    if status == 0:
        # (a run that succeeded has nothing to say about its end)
        assert "recording" not in s and "partial_reason" not in s, s
        assert "# status end=exit value=0 " in run([CLI, "dump", str(path)],
                                                   clean_env()).stdout
        return
    assert s["recording"]["end"] == "exit"
    assert s["recording"]["exit_status"] == status
    assert not s.get("partial") and AT_EXIT <= set(s), s.get("incomplete")
    assert f"complete figures: exited with status {status}" in st.stderr
    e = run([CLI, "explain", str(path)], clean_env())
    assert f"exited with status {status}; the findings are of that run" in e.stderr


def test_an_image_that_ended_in_exec_was_not_killed(tmp_path):
    tmpl = tmp_path / "e.%p.mt"
    r = run([program("fork_exec"), "exec", "100", "200"],
            shim_env("glibc", MEMTRACE_OUT=str(tmpl)))
    leaf = next(int(l.split()[1]) for l in r.stdout.splitlines()
                if l.startswith("leaf"))
    s, _ = stat(tmp_path / f"e.{leaf}.mt")
    assert s["recording"]["end"] == "exec"
    assert s["partial_reason"].startswith("ended in exec")
    assert "calls" not in s["incomplete"]
    after, _ = stat(tmp_path / f"e.{leaf}.mt.1")
    assert "partial" not in after


def test_a_full_disk_is_said_and_what_fit_is_analyzed(tmp_path):
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root to mount a small tmpfs")
    small = tmp_path / "small"
    small.mkdir()
    env = shim_env("glibc", MEMTRACE_OUT=str(small / "t.mt"))
    settings = [f"{k}={v}" for k, v in env.items() if k.startswith(("MEMTRACE", "LD_"))]
    kept = tmp_path / "kept.mt"
    # The mount is the namespace's: the trace is copied out before it goes.
    script = (f"mount -t tmpfs -o size=256k none {small} || exit 200; "
              f"env \"$@\"; s=$?; cp {small}/t.mt {kept}; exit $s")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *settings,
                        program("churn"), "trim", "3000"],
                       env=clean_env(), capture_output=True, text=True)
    if r.returncode == 200:
        pytest.skip("cannot mount tmpfs here")
    assert r.returncode == 0, r.stderr
    s, err = stat(kept)
    assert s["recording"]["end"] == "write_failed"
    assert s["recording"]["errno"] == 28
    offset = s["recording"]["offset"]
    assert f"the disk was full at offset {offset}" in s["partial_reason"]
    assert "checksum" not in err.stderr
    trim = next(g for g in s["regions"] if g["name"] == "trim")
    assert 0 < trim["count"] < 3000
    assert {"calls", "regions"} <= set(s["incomplete"])


def first_event_tag(data, at):
    return data[at + 56] & 31


def without_exit(data):
    """The file without its closing record (the chunk of the exit event)."""
    for at, flags, tid, seq, plen in chunks(data):
        if not flags and first_event_tag(data, at) == EXIT:
            return data[:at] + data[at + 56 + plen:]
    raise AssertionError("no exit chunk")


@pytest.fixture
def finished(tmp_path):
    """A whole trace of a known run, and its summary."""
    path, _ = record(tmp_path, [program("known_calls"), "50"], "whole.mt")
    s, _ = stat(path)
    assert "partial" not in s
    return path.read_bytes(), s


@pytest.mark.parametrize("end,value,at,says", [
    ("recording", 0, 0, "killed (no closing record: SIGKILL, the OOM killer, "
                        "or still running)"),
    ("exec", 0, 0, "ended in exec"),
    ("_exit", 3, 0, "left by _exit(3)"),
    ("signal", 11, 0, "ended by fatal signal 11 (SIGSEGV)"),
    ("write_failed", 28, 4096, "the disk was full at offset 4096"),
    ("write_failed", 5, 4096, "a write failed at offset 4096 (Input/output error)"),
])
def test_each_end_of_the_status_record(finished, end, value, at, says, tmp_path):
    data, whole = finished
    path = tmp_path / "ended.mt"
    path.write_bytes(with_status(without_exit(data), end, value, at))
    s, _ = stat(path)
    assert s["partial"] is True
    assert s["recording"]["end"] == ("killed" if end == "recording" else end)
    assert s["partial_reason"].startswith(says)
    assert s["recording"]["said_by"] == "status record"
    assert s["calls"]["valloc"] == whole["calls"]["valloc"] == 50


def test_a_file_older_than_the_status_record(tmp_path):
    """1.7: no status; an exit event means it finished, else it was killed
    (or left by _exit, which it cannot tell)."""
    data = open(os.path.join(CORPUS, "sequence-1.7.mt"), "rb").read()
    path = tmp_path / "old.mt"
    path.write_bytes(data)
    s, _ = stat(path)
    assert "partial" not in s
    path.write_bytes(without_exit(data))
    s, _ = stat(path)
    assert s["recording"] == {**s["recording"], "end": "killed",
                              "said_by": "inferred from the events"}
    assert "without a status record (format 1.8), _exit looks the same" in \
        s["partial_reason"]


def test_a_file_that_ends_inside_a_chunk(finished, tmp_path):
    """The writer was stopped part way: what came before is read, and the
    end is said as such, not as a checksum error."""
    data, whole = finished
    at, plen = next((at, plen) for at, flags, _, _, plen in chunks(data)
                    if not flags and first_event_tag(data, at) == EXIT)
    path = tmp_path / "cut.mt"
    path.write_bytes(with_status(data[:at + 56 + plen // 2], "recording"))
    says = f"the file ends inside a chunk at offset {at}"
    r = run([CLI, "dump", str(path)], clean_env())
    assert says in r.stderr and "checksum" not in r.stderr
    s, r = stat(path)
    assert s["recording"]["truncated_at"] == at
    assert says in s["partial_reason"] and "checksum" not in r.stderr
    assert s["calls"]["valloc"] == whole["calls"]["valloc"] == 50


def test_a_hole_never_written_is_skipped_and_said(finished, tmp_path):
    """A thread reserved its place in the file and was killed before it
    wrote: zeros, then the chunks of the other threads."""
    data, whole = finished
    at, _, _, _, plen = chunks(data)[1]
    holed = data[:at] + bytes(56 + plen) + data[at + 56 + plen:]
    path = tmp_path / "hole.mt"
    path.write_bytes(holed)
    s, _ = stat(path)
    assert s["recording"]["unwritten_bytes"] == 56 + plen
    assert s["recording"]["unwritten_at"] == at
    assert f"{56 + plen} bytes from offset {at} were never written" in s["partial_reason"]


def test_lost_events_are_said_with_the_thread(tmp_path):
    """A lost record (events the shim could not record) makes the figures
    partial: stat names the count and the thread, explain marks its
    findings."""
    path, _ = record(tmp_path, [program("churn"), "trim", "40"])
    data = path.read_bytes()
    tid = chunks(data)[1][2]
    lost = chunk(tid, 0x7fffffff, event(LOST, 17), 1)
    path.write_bytes(data + lost)
    s, r = stat(path)
    assert s["lost_events"] == 17
    assert s["lost_events_by_thread"] == {str(tid): 17}
    assert s["partial"] is True and "calls" in s["incomplete"]
    assert f"17 events were not recorded (thread {tid} says 17)" in r.stderr
    report, r = explain(path)
    assert report["findings"]
    assert all("17 events were not recorded" in f["incomplete_data"]
               for f in report["findings"])
    # The status counts them too (the same events): not twice.
    path.write_bytes(with_status(data + lost, "exit", -1, lost=17))
    s, _ = stat(path)
    assert s["lost_events"] == 17


def test_a_status_record_that_does_not_read_whole(finished, tmp_path):
    data, _ = finished
    data = bytearray(with_status(data, "exit", -1))
    data[header_end(data) + 56] ^= 0xFF  # its end, without a new checksum
    path = tmp_path / "torn.mt"
    path.write_bytes(bytes(data))
    s, _ = stat(path)
    assert "status record does not read whole" in s["partial_reason"]
    r = run([CLI, "dump", str(path)], clean_env())
    assert "# status damaged" in r.stdout


def test_a_threads_signal_handler_stream_counts_with_it(tmp_path):
    """Format 1.8: a thread's second stream (seq from 2^31, its signal
    handlers' events) is read with the main one; a provisional copy in it
    is superseded by its whole chunk, as in the main stream."""
    from tracefile import MALLOC, PROVISIONAL, exit_chunk, trace, zigzag
    signal_seq = 0x80000000

    def mallocs(n):
        return b"".join(event(MALLOC, 64, zigzag(0x1000), zigzag(8)) for _ in range(n))

    path = tmp_path / "signal.mt"
    path.write_bytes(trace([
        chunk(7, signal_seq, mallocs(1), 1, flags=PROVISIONAL),
        chunk(7, 0, mallocs(3), 3),
        chunk(7, signal_seq, mallocs(2), 2),
        exit_chunk(7, 1),
    ]))
    s, _ = stat(path)
    assert s["calls"]["malloc"] == 5
    assert s["bytes"]["allocated"] == 5 * 72


def test_a_killed_recording_says_what_it_recorded(tmp_path):
    """No finding about the whole run can rest on a killed recording (its
    time, CPU and faults are measured at exit), but what it recorded is
    said where it shows a churn's pattern, the counts as stat reads them
    (a trace of 6,536 heap grows and 3,251 trims said only '0 findings':
    new-user trial 17)."""
    path = killed_churn(tmp_path, 0.5)
    s, _ = stat(path)
    trims = s["brk"]["shrink"]
    assert trims >= 10, s["brk"]
    r = run([CLI, "explain", str(path)], clean_env())
    assert "[recorded, not measured]" in r.stdout, r.stdout
    assert f"was trimmed back {trims} times" in r.stdout, r.stdout
    assert "killed" in r.stdout, r.stdout
    # --json says the same (it said nothing of it)
    r = run([CLI, "explain", "--json", str(path)], clean_env())
    (recorded,) = json.loads(r.stdout)["recorded_not_measured"]
    assert recorded["brk_shrink"] == trims, recorded
    assert recorded["brk_grow"] == s["brk"]["grow"], recorded
    assert "killed" in recorded["partial"], recorded


def test_stat_of_a_killed_recording_says_what_exit_would_have_told(tmp_path):
    """stat of a killed recording said "live at exit" and "anonymous at
    exit 0 B" for a process that never exited, and "0 munmap" where
    explain said 1,112 mappings were unmapped: glibc's own, inferred, had
    their bytes and not their count (new-user trial 18)."""
    path = killed_churn(tmp_path, 0.3, mode="mmap", env=None)
    s, _ = stat(path)
    unmaps = s["syscalls_inferred"]["munmap"]
    assert unmaps >= 2, s["syscalls_inferred"]
    r = run([CLI, "stat", str(path)], clean_env())
    text = r.stdout + r.stderr
    assert "live when recording ended" in text and "live at exit" not in text, text
    assert re.search(r"not recorded\s+anonymous at exit", text), text
    (row,) = [l for l in text.splitlines() if re.search(r"\smunmap\s+\(", l)]
    assert f"glibc's own, inferred: {unmaps:,} of " in row, row
