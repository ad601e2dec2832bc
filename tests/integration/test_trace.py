"""The trace: a known sequence comes back from `memtrace dump` exactly;
`memtrace stat TRACE` equals the live summary of the same run; a killed
process leaves a readable trace; fork and exec write separate files;
damaged files give clean errors; nothing is ever overwritten."""
import re
import json
import os
import stat
import signal
import struct
import subprocess
import time

import pytest

from mt import BACKENDS, CLI, PYTHON, clean_env, program, run, shim_env

BACKEND_LIST = BACKENDS


def dump(path, *flags, check=True):
    return run([CLI, "dump", *flags, str(path)], clean_env(), check=check)


def events(path):
    """(name, {field: value}) of each event line of a dump."""
    out = []
    for line in dump(path).stdout.splitlines():
        if line.startswith("#"):
            continue
        parts = line.split()
        fields = dict(p.split("=", 1) for p in parts[3:] if "=" in p)
        out.append((parts[2], fields))
    return out


def traced(tmp_path, cmd, backend="glibc", name="t.mt", **env):
    path = tmp_path / name
    summary = tmp_path / (name + ".json")
    r = run(cmd, shim_env(backend, summary=str(summary), MEMTRACE_OUT=str(path),
                          **env))
    return path, summary, r


@pytest.mark.parametrize("backend", BACKEND_LIST)
def test_known_sequence_round_trip(backend, tmp_path):
    path, _, _ = traced(tmp_path, [program("sequence")], backend)
    ev = events(path)
    begin = next(i for i, (n, _) in enumerate(ev) if n == "region_begin")
    end = next(i for i, (n, _) in enumerate(ev) if n == "region_end")
    # The allocator's own work inside the calls (mappings, heap moves) is
    # recorded too; the program's calls are these, in this order.
    mine = [(n, f) for n, f in ev[begin + 1:end]
            if f.get("by_allocator", "0") == "0"
            and n not in ("chunk_map", "heap_move")]
    names = [(n, f.get("entry")) for n, f in mine[:8]]
    assert names == [
        ("alloc", "malloc"), ("alloc", "calloc"), ("realloc", "realloc"),
        ("alloc", "posix_memalign"), ("malloc_usable_size", None), ("free", None),
        ("free", None), ("free", None),
    ]
    malloc, calloc, realloc, aligned, usable, f1, f2, f3 = [f for _, f in mine[:8]]
    assert malloc["size"] == "100" and calloc["size"] == "300"
    assert realloc["old_ptr"] == malloc["ptr"] and realloc["size"] == "1000"
    assert aligned["align"] == "256" and aligned["size"] == "512"
    assert usable["ptr"] == calloc["ptr"] == f1["ptr"]
    assert f2["ptr"] == realloc["ptr"] and f3["ptr"] == aligned["ptr"]
    assert int(f1["usable"]) >= 300
    # Then the mapping: the program's calls, and each kernel call once
    # (tcmalloc's own mmap reaches the kernel through syscall(), which is
    # recorded as well).
    rest = mine[8:]
    entries = [f["entry"] for n, f in rest if n == "syscall" and f["entry"] != "syscall"]
    kernel = [f["sys"] for n, f in rest if n == "sys"]
    assert entries == ["mmap64", "madvise", "munmap"]
    assert kernel == ["mmap", "madvise", "munmap"]
    madvise = next(f for n, f in rest if n == "syscall" and f["entry"] == "madvise")
    assert madvise["arg"] == "4"  # MADV_DONTNEED


def replayed(path):
    """path's own process (its children's files follow, a line each)."""
    r = run([CLI, "stat", "--json", str(path)], clean_env())
    return json.loads(r.stdout.splitlines()[0])


@pytest.mark.parametrize("backend", BACKEND_LIST)
@pytest.mark.parametrize("cmd", [["known_calls", "50"], ["regions", "20"],
                                 ["fork_exec", "leaf", "3000"],
                                 ["realloc_shrink", "10"],
                                 # (jemalloc's purges inside calloc: replayed
                                 # from the madvise events before calloc's)
                                 ["calloc_tables", "40", "2"]])
def test_stat_of_the_trace_equals_the_live_summary(backend, cmd, tmp_path):
    path, summary, _ = traced(tmp_path, [program(cmd[0])] + cmd[1:], backend)
    assert replayed(path) == json.loads(summary.read_text())


def test_stat_equals_live_for_numpy(tmp_path):
    script = os.path.join(os.path.dirname(__file__), "..", "..", "bench",
                          "numpy_temporaries.py")
    path, summary, _ = traced(
        tmp_path, [PYTHON, script, "--epochs", "1", "--repeats", "10"],
        PYTHONPATH=os.environ["MEMTRACE_PYTHON_DIR"])
    assert replayed(path) == json.loads(summary.read_text())


def test_compressed_trace_reads_the_same(tmp_path):
    plain, summary, _ = traced(tmp_path, [program("known_calls"), "200"])
    packed, summary2, _ = traced(tmp_path, [program("known_calls"), "200"],
                                 name="z.mt", MEMTRACE_COMPRESS="1")
    assert packed.stat().st_size < plain.stat().st_size / 2
    # (kernel samples the collector could not drain in time, on a loaded
    # machine, make the replay say so: a fact of the run, not the codec's;
    # the figures are compared without it)
    got, want = replayed(packed), json.loads(summary2.read_text())
    if got.get("lost_samples"):
        for key in ("incomplete", "lost_samples", "partial", "partial_reason",
                    "recording"):
            got.pop(key, None)
            want.pop(key, None)
    assert got == want


def test_killed_process_leaves_a_readable_trace(tmp_path):
    path = tmp_path / "killed.mt"
    env = shim_env("glibc", MEMTRACE_OUT=str(path))
    p = subprocess.Popen([program("sequence"), "forever"], env=env,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "sequence done\n"
    time.sleep(0.6)
    killed_ns = time.monotonic_ns()  # CLOCK_MONOTONIC, the trace's clock
    p.send_signal(signal.SIGKILL)
    p.wait()
    r = dump(path, "--salvage")
    start_ns = int(next(l for l in r.stdout.splitlines()
                        if l.startswith("# start_ns")).split()[2])
    lines = [l for l in r.stdout.splitlines() if not l.startswith("#")]
    assert any(" region_end " in l for l in lines)
    last_ns = start_ns + float(max(l.split()[0] for l in lines)) * 1e9
    # At most about 100 ms of events lost (chunks older than that are
    # written out at the thread's next event); a loaded machine may delay
    # the kill itself, so allow some more.
    assert killed_ns - last_ns <= 0.25e9, (killed_ns - last_ns) / 1e9
    # No closing record: stat gives what was recorded, and says what is
    # missing (tests/integration/test_postmortem.py).
    s = run([CLI, "stat", str(path)], clean_env(), check=False)
    assert s.returncode == 0 and "no closing record" in s.stderr


def program_events(path):
    """The names of the events the program's main thread recorded (the
    kernel's samples come from a thread of the shim's own, at times of
    their own)."""
    lines = [l.split() for l in dump(path).stdout.splitlines()
             if not l.startswith("#")]
    main = lines[0][1]
    return [l[2] for l in lines if l[1] == main and l[2] != "kernel_call"]


def test_a_killed_idle_process_keeps_its_last_events(tmp_path):
    """The thread records the whole sequence, then sleeps: no event of its
    own would write its chunk out; the shim's flusher writes a provisional
    copy, and the reader takes it (and only it)."""
    whole = tmp_path / "whole.mt"
    run([program("sequence")], shim_env("glibc", MEMTRACE_OUT=str(whole)))
    path = tmp_path / "idle.mt"
    p = subprocess.Popen([program("sequence"), "idle"],
                         env=shim_env("glibc", MEMTRACE_OUT=str(path)),
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "sequence done\n"
    time.sleep(0.3)
    p.send_signal(signal.SIGKILL)
    p.wait()
    killed = program_events(path)
    # Everything up to the end of the sequence, once; what only exit
    # writes (the closing record, its counters) is missing.
    expected = program_events(whole)
    expected = expected[:expected.index("region_end") + 1]
    assert killed[:len(expected)] == expected
    assert killed.count("region_end") == 1


def chunk_flags(path):
    """The flags of each chunk of a trace file (docs/trace-format.md)."""
    data = path.read_bytes()
    at = 24 + struct.unpack_from("<I", data, 12)[0]
    flags = []
    while at + 56 <= len(data):
        _, f, _, _, payload_len = struct.unpack_from("<5I", data, at)
        flags.append(f)
        at += 56 + payload_len
    return flags


def test_a_provisional_chunk_is_read_once(tmp_path):
    """An idle thread's chunk is written provisionally, then whole at exit:
    the reader takes the whole one only."""
    path, summary, _ = traced(tmp_path, [program("sequence"), "pause"])
    assert any(f & 2 for f in chunk_flags(path))  # MT_CHUNK_PROVISIONAL
    plain, _, _ = traced(tmp_path, [program("sequence")], name="plain.mt")
    assert program_events(path) == program_events(plain)
    assert replayed(path) == json.loads(summary.read_text())


def test_a_pause_costs_no_space(tmp_path):
    """One thread pauses (its chunk is written provisionally), then goes
    on: its next copy of that chunk goes over the provisional one, which is
    still the end of the file, so the file holds each chunk once.  (Without
    the kernel counters and the resident-memory sampler, whose threads
    record too and could write a chunk in between.)"""
    script = ("import time\n"
              "keep = [bytearray(100) for _ in range(2000)]\n"
              "time.sleep(0.3)\n"
              "keep += [bytearray(100) for _ in range(2000)]\n")
    path, summary, _ = traced(tmp_path, [PYTHON, "-c", script],
                              MEMTRACE_PERF="0", MEMTRACE_RSS="0")
    flags = chunk_flags(path)
    assert not any(f & 2 for f in flags), flags  # MT_CHUNK_PROVISIONAL
    assert replayed(path) == json.loads(summary.read_text())


def test_fork_writes_a_file_per_process(tmp_path):
    tmpl = tmp_path / "f.%p.mt"
    env = shim_env("glibc", summary=str(tmp_path / "s.%p.json"),
                   MEMTRACE_OUT=str(tmpl))
    r = run([program("fork_exec"), "fork", "100", "200"], env)
    pids = {role: int(pid) for role, pid in (l.split() for l in r.stdout.splitlines())}
    for role, pid in pids.items():
        trace = tmp_path / f"f.{pid}.mt"
        live = json.loads((tmp_path / f"s.{pid}.json").read_text())
        assert replayed(trace) == live, role
    child = events(tmp_path / f"f.{pids['child']}.mt")
    assert ("forked", {"parent": str(pids["parent"])}) in child


def test_exec_starts_a_new_file(tmp_path):
    tmpl = tmp_path / "e.%p.mt"
    env = shim_env("glibc", MEMTRACE_OUT=str(tmpl))
    r = run([program("fork_exec"), "exec", "100", "200"], env)
    pids = {role: int(pid) for role, pid in (l.split() for l in r.stdout.splitlines())}
    leaf = pids["leaf"]
    before = events(tmp_path / f"e.{leaf}.mt")    # the child, up to exec
    after = tmp_path / f"e.{leaf}.mt.1"           # the new image
    assert any(n == "exec" for n, _ in before)
    assert json.loads(run([CLI, "stat", "--json", str(after)], clean_env()).stdout)[
        "command"][1:] == ["leaf", "200"]


def test_an_existing_file_is_never_overwritten(tmp_path):
    path = tmp_path / "keep.mt"
    path.write_text("precious")
    env = shim_env("glibc", quiet=True, MEMTRACE_OUT=str(path))
    r = run([program("exits"), "return", "3"], env, check=False)
    assert r.returncode == 3 and path.read_text() == "precious"
    assert "never overwrites" in r.stderr
    # --force replaces a trace only
    r = run([CLI, "run", "-q", "-o", str(path), "--force", "--",
             program("known_calls"), "5"], clean_env())
    assert path.read_text() == "precious"
    assert "not a memtrace trace" in r.stderr
    trace = tmp_path / "old.mt"
    run([CLI, "run", "-q", "-o", str(trace), "--", program("known_calls"), "5"],
        clean_env())
    run([CLI, "run", "-q", "-o", str(trace), "--force", "--",
         program("known_calls"), "7"], clean_env())
    s = json.loads(run([CLI, "stat", "--json", str(trace)], clean_env()).stdout)
    assert s["command"][1:] == ["7"]
    assert oct(trace.stat().st_mode & 0o777) == "0o600"


def test_force_never_replaces_what_is_not_a_trace(tmp_path):
    """As root, --force once unlinked /dev/full and put a trace there."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    target = tmp_path / "target.mt"
    run([CLI, "run", "-q", "-o", str(target), "--", program("known_calls"),
         "5"], clean_env())
    link = tmp_path / "link.mt"
    link.symlink_to(target)
    victims = [fifo, link]
    if os.geteuid() == 0:
        device = tmp_path / "null"
        os.mknod(device, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        victims.append(device)
    for victim in victims:
        before = os.lstat(victim)
        r = run([CLI, "run", "-q", "-o", str(victim), "--force", "--",
                 program("exits"), "return", "3"], clean_env(), check=False)
        assert r.returncode == 3
        # (a link: "Too many levels of symbolic links", from O_NOFOLLOW)
        assert "recording nothing" in r.stderr, victim
        after = os.lstat(victim)
        assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_full_disk_stops_recording_and_the_program_runs_on(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    small = tmp_path / "small"
    small.mkdir()
    env = shim_env("glibc", quiet=True, MEMTRACE_OUT=str(small / "t.mt"))
    settings = [f"{k}={v}" for k, v in env.items() if k.startswith(("MEMTRACE", "LD_"))]
    script = (f"mount -t tmpfs -o size=64k none {small} || exit 200; "
              "exec env \"$@\"")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *settings,
                        program("known_calls"), "3000"],
                       env=clean_env(), capture_output=True, text=True)
    if r.returncode == 200:
        pytest.skip("cannot mount tmpfs here")
    assert r.returncode == 0
    warned = [l for l in r.stderr.splitlines() if "memtrace" in l]
    assert len(warned) == 1 and "recording stops" in warned[0]


def damaged(tmp_path):
    """A good trace and ways to break it: (name, bytes)."""
    good, _, _ = traced(tmp_path, [program("known_calls"), "300"])
    data = good.read_bytes()
    meta_len = int.from_bytes(data[12:16], "little")
    meta_end = first_chunk = 24 + meta_len
    if data[first_chunk + 4] & 4:  # the status record (1.8): the next
        first_chunk += 56 + 32
    flipped = bytearray(data)
    flipped[first_chunk + 56 + 10] ^= 0xFF
    bad_magic = bytearray(data)
    bad_magic[first_chunk] ^= 0xFF
    future = bytearray(data)
    future[8] = 9
    return data, [
        ("empty", b""),
        ("not a trace", b"hello world, this is not a trace file at all"),
        ("header only", data[:20]),
        ("cut in the metadata", data[:meta_end - 5]),
        ("flipped payload byte", bytes(flipped)),
        ("bad chunk magic", bytes(bad_magic)),
        ("future version", bytes(future)),
    ]


def test_damaged_files_give_clean_errors(tmp_path):
    _, cases = damaged(tmp_path)
    for name, blob in cases:
        path = tmp_path / "bad.mt"
        path.write_bytes(blob)
        for verb in (["dump"], ["stat"]):
            r = run([CLI, *verb, str(path)], clean_env(), check=False)
            assert r.returncode != 0, (name, verb)
            assert r.returncode in (1, 2), (name, verb, r.returncode)
            assert r.stderr.count("\n") <= 2, (name, r.stderr)
        r = run([CLI, "dump", str(path)], clean_env(), check=False)
        if name not in ("empty", "not a trace", "header only"):
            assert "offset" in r.stderr, (name, r.stderr)
        if name == "future version":
            assert "format 9." in r.stderr


def test_salvage_keeps_the_undamaged_chunks(tmp_path):
    data, cases = damaged(tmp_path)
    flipped = dict(cases)["flipped payload byte"]
    path = tmp_path / "flipped.mt"
    path.write_bytes(flipped)
    r = dump(path, "--salvage")
    assert "1 damaged chunk skipped" in r.stderr, r.stderr
    assert len(r.stdout.splitlines()) > 100
    # Every reader of a trace takes --salvage, and without it says so
    # (report, explain and export gave up at one flipped byte, and
    # explain called the file no trace: new-user trial 32).
    page = tmp_path / "f.html"
    for verb in (["explain"], ["report", "-o", str(page)],
                 ["export", "-f", "perfetto", "-o", str(tmp_path / "f.pb")]):
        r = run([CLI, *verb, str(path)], clean_env(), check=False)
        assert r.returncode == 1, (verb, r.stderr)
        assert "(damaged: --salvage skips it and reads the rest)" in r.stderr, r.stderr
        assert "expected a memtrace trace" not in r.stderr, r.stderr
        r = run([CLI, *verb, "--salvage", str(path)], clean_env(), check=False)
        assert r.returncode == 0, (verb, r.stderr)
    # (the page says it from the summary's reason, in its script)
    assert re.search(r"\b(1 damaged chunk|([02-9]|[0-9]{2,}) damaged chunks) skipped",
                     page.read_text()), page.read_text()[-2000:]


def test_reader_corpus_for_the_fuzzer(tmp_path):
    """Keeps tests/fuzz/corpus in step with the format: every file there
    must read (or fail) cleanly."""
    corpus = os.path.join(os.path.dirname(__file__), "..", "fuzz", "corpus")
    for name in sorted(os.listdir(corpus)):
        r = run([CLI, "dump", "--salvage", os.path.join(corpus, name)],
                clean_env(), check=False)
        assert r.returncode in (0, 1), name


def test_every_format_of_one_program_reads_the_same():
    """The same program recorded in format 1.4 and 1.7 (malloc's own tag):
    the newest reader reads both whole, and the program's events (the
    allocations among them) come back the same."""
    corpus = os.path.join(os.path.dirname(__file__), "..", "fuzz", "corpus")
    old, new = (os.path.join(corpus, n) for n in ("sequence.mt",
                                                   "sequence-1.7.mt"))
    for path in (old, new):
        assert run([CLI, "stat", path], clean_env()).returncode == 0

    def program_part(path):
        """Each allocation's fields but the address, in order."""
        names = program_events(path)
        part = names[names.index("region_begin"):names.index("region_end") + 1]
        allocs = [[f for f in l.split()[3:] if not f.startswith("ptr=")]
                  for l in dump(path).stdout.splitlines()
                  if not l.startswith("#") and l.split()[2] == "alloc"]
        return part, allocs

    assert program_part(new) == program_part(old)
    assert ["entry=malloc", "align=0", "size=100", "usable=104"] in \
        program_part(new)[1]


SITES_OVER_TIME = """
import time
def make(k):
    ns = {}
    exec(compile("def f(n):\\n    return bytearray(n)\\n", "gen%d.py" % k,
                 "exec"), ns)
    return ns["f"]
for k in range(5):
    f = make(k)
    for _ in range(3):
        f(300_000)
    time.sleep(0.7)
"""


def sites_events(path):
    """The JSON of each sites event of a dump, in the file's order."""
    return [json.loads(line.split(" sites ", 1)[1])
            for line in dump(path).stdout.splitlines()
            if not line.startswith("#") and " sites " in line]


def test_the_sites_stacks_are_a_tree_each_node_written_once(tmp_path):
    """Sites appear while the program runs (a sites event a second after
    each): each event brings only the stack nodes that are new, and the
    sites name their innermost node; the replay has the same stacks as
    the live summary, and the closing record does not repeat them."""
    path, summary, _ = traced(tmp_path, [PYTHON, "-c", SITES_OVER_TIME])
    got = sites_events(path)
    assert len(got) >= 3, got
    ids = [n["id"] for e in got for n in e["nodes"]]
    assert len(ids) == len(set(ids)), ids
    known = set()
    for e in got:
        known |= {n["id"] for n in e["nodes"]}
        assert all(n["parent"] == 0 or n["parent"] in known for n in e["nodes"])
        assert all(s["node"] in known for s in e["sites"] if "node" in s), e
    last = got[-1]["sites"]
    mine = [s for s in last if "node" in s]
    assert len(mine) >= 5, last
    live = json.loads(summary.read_text())
    assert replayed(path) == live
    lines = [f for s in live["sites"] for f in s["stack"]
             if f.get("file", "").startswith("gen")]
    assert len({f["file"] for f in lines}) == 5, live["sites"]
    exits = [l for l in dump(path).stdout.splitlines() if " exit {" in l]
    assert exits and '"sites"' not in exits[-1]
