"""memtrace report: one page that opens offline, drawn in a real browser
(Debian's chromium-headless-shell): no script error, the findings, the
regions and the charts there."""
import json
import os
import re
import shutil
import subprocess

import pytest

from mt import CLI, PYTHON, clean_env, program, run, shim_env

HERE = os.path.dirname(os.path.abspath(__file__))
STORED = os.path.join(HERE, "..", "traces")
NUMPY = os.path.join(HERE, "..", "..", "bench", "numpy_temporaries.py")
CHROMIUM = shutil.which("chromium-headless-shell")

needs_browser = pytest.mark.skipif(not CHROMIUM,
                                   reason="needs chromium-headless-shell")


def rendered(page):
    """The page's DOM once its scripts ran."""
    r = subprocess.run([CHROMIUM, "--no-sandbox", "--disable-gpu",
                        "--dump-dom", f"file://{page}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def charts(dom):
    m = re.search(r'id="rendered" data-charts="(\d+)"', dom)
    return int(m.group(1)) if m else None


@needs_browser
def test_a_stored_trace_with_regions(tmp_path):
    page = tmp_path / "r.html"
    r = run([CLI, "report", "-o", str(page), os.path.join(STORED, "numpy-regions.mt")],
            clean_env())
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    assert "<script src" not in html and "http" not in html.split("<script>")[0]
    dom = rendered(page)
    assert '<div id="errors"></div>' in dom, dom[-2000:]
    assert charts(dom) == 2  # memory, syscalls (no fault samples)
    assert "[heap-trim-churn]" in dom and "region func2" in dom
    assert "<td>func1</td>" in dom and "<td>func2</td>" in dom


def test_the_live_bytes_are_drawn_from_every_allocation(tmp_path):
    """The live line came from the resident-memory samples alone, which a
    short run has few of or none (a run of 13 ms drew nothing; new-user
    trial 32).  From the events, each interval's end: a single thread's
    reach the summary's exact peak."""
    page = tmp_path / "n.html"
    run([CLI, "report", "-o", str(page), os.path.join(STORED, "numpy-plain.mt")],
        clean_env())
    data = json.loads(re.search(r'id="data">(.*?)</script>', page.read_text(),
                                re.S).group(1))
    live = data["series"]["live_event_bytes"]
    assert len(live) > 100 and not data["series"]["live_bytes"], len(live)
    assert max(v for _, v in live) == data["summary"]["bytes"]["peak_live"]
    assert min(v for _, v in live) >= 0


@needs_browser
def test_a_partial_recording_says_so_on_the_page(tmp_path):
    """A run killed mid-way: the page said "wall ? s" and "Findings: none"
    and not why, where stat says PARTIAL (new-user trial 32)."""
    page = tmp_path / "k.html"
    r = run([CLI, "report", "-o", str(page), os.path.join(STORED, "killed-queue.mt")],
            clean_env())
    dom = rendered(page)
    assert '<div id="errors"></div>' in dom
    m = re.search(r'<p class="partial">Partial recording: killed \(no closing '
                  r'record[^<]*Incomplete figures \(marked \?\): [^<]*wall_s', dom)
    assert m, dom[:3000]


@needs_browser
def test_each_finding_names_its_sites_on_the_page(tmp_path):
    """The page gave the explanation, which names the top site, but not the
    sites explain lists under it (a second line of the churn; new-user
    trial 32)."""
    page = tmp_path / "p.html"
    run([CLI, "report", "-o", str(page), os.path.join(STORED, "numpy-plain.mt")],
        clean_env())
    dom = rendered(page)
    sites = re.findall(r'<div class="fix">site (\d+)%  ([^<]*)</div>', dom)
    assert ("50", "func2 (numpy_plain.py:17)") in sites, sites
    assert len({label for _, label in sites}) >= 2, sites


@needs_browser
def test_a_command_recorded_then_drawn(tmp_path):
    """-- CMD: recorded into a temporary trace (removed after), with its
    resident-memory samples drawn."""
    page = tmp_path / "r.html"
    before = set(os.listdir("/tmp"))
    r = run([CLI, "report", "-o", str(page), "--", PYTHON, NUMPY, "--epochs", "1",
             "--repeats", "20"], clean_env())
    assert r.returncode == 0, r.stderr
    assert not [d for d in set(os.listdir("/tmp")) - before
                if d.startswith("memtrace-report.")]
    dom = rendered(page)
    assert '<div id="errors"></div>' in dom
    assert charts(dom) == 2
    data = re.search(r'id="data">(.*?)</script>', page.read_text(), re.S).group(1)
    assert '"anon_bytes": [[' in data or '"anon_bytes":[[' in data


SPREAD = """
import mmap, time
for i in range(300):
    m = mmap.mmap(-1, 65536)
    m[0] = 1
    m.close()
    time.sleep(0.003)
"""


def test_the_kernels_samples_are_drawn_when_they_happened(tmp_path):
    """300 mmaps spread evenly over a second: the kernel's samples carry
    the time each call was made, their records the time the shim
    collected them, every 0.1 s, and the chart drew them as spikes at
    0.1, 0.2, 0.3 s (new-user trial 28)."""
    trace, page = tmp_path / "t.mt", tmp_path / "r.html"
    script = tmp_path / "spread.py"
    script.write_text(SPREAD)
    run([PYTHON, str(script)], shim_env("glibc", MEMTRACE_OUT=str(trace)))
    r = run([CLI, "report", "-o", str(page), str(trace)], clean_env())
    assert r.returncode == 0, r.stderr
    data = json.loads(re.search(r'id="data">(.*?)</script>', page.read_text(),
                                re.S).group(1).replace("<\\/", "</"))
    s = data["series"]
    if s["syscall_source"] != "kernel":
        pytest.skip("no kernel samples of system calls here")
    mmaps = s["syscalls"]["mmap"]
    assert sum(n for _, n in mmaps) >= 300, mmaps
    # (0.6 ms a point: as many points as the calls, nearly, not ten)
    assert len(mmaps) >= 150, (len(mmaps), s["interval_s"])


def test_the_sites_are_drawn_as_an_icicle(tmp_path):
    """The call sites of large blocks, outermost frame at the top, each as
    wide as its share of the bytes: the NumPy benchmark written plainly
    has func1's and func2's lines under the timeit frames."""
    page = tmp_path / "r.html"
    trace = os.path.join(os.path.dirname(__file__), "..", "traces", "numpy-plain.mt")
    r = run([CLI, "report", "-o", str(page), trace], clean_env())
    assert r.returncode == 0, r.stderr
    dom = rendered(page)
    assert '<div id="errors"></div>' in dom
    m = re.search(r'data-flame="(\d+)"', dom)
    assert m and int(m.group(1)) >= 5, dom[-2000:]
    boxes = re.findall(r'<text[^>]*>([^<]*)</text>', dom)
    assert boxes[0] == "all" and boxes[1].startswith("&lt;module&gt;"), boxes
    assert any(b.startswith("func2 (numpy_plain.py:") for b in boxes), boxes
    assert any(b.startswith("func1 (numpy_plain.py:") for b in boxes), boxes


def test_compare_draws_each_backend_on_the_same_axes(tmp_path):
    """compare --html: the table as compare prints it, and one recorded run
    of each backend drawn (memory and system calls), every chart on the
    same time axis; no temporary trace left behind."""
    page = tmp_path / "c.html"
    before = set(os.listdir("/tmp"))
    r = run([CLI, "compare", "--backends", "glibc,tcmalloc", "--repeat", "1",
             "--html", str(page), "--", program("churn"), "trim", "20"],
            clean_env())
    assert r.returncode == 0, r.stderr
    assert "region trim" in r.stdout
    assert not [d for d in set(os.listdir("/tmp")) - before
                if d.startswith("memtrace-compare.")]
    dom = rendered(page)
    assert '<div id="errors"></div>' in dom
    assert charts(dom) == 4
    assert "region trim" in dom and "glibc: wall" in dom and "tcmalloc: wall" in dom
    data = json.loads(re.search(r'id="data">(.*?)</script>', page.read_text(),
                                re.S).group(1).replace("<\\/", "</"))
    assert [x["backend"] for x in data["runs"]] == ["glibc", "tcmalloc"]
    # glibc's heap grows and is trimmed every call: brk calls drawn
    assert data["runs"][0]["series"]["syscalls"]["brk"]


def test_compare_html_to_an_unwritable_path_is_said(tmp_path):
    r = run([CLI, "compare", "--backends", "glibc", "--repeat", "1", "--html",
             "/nonexistent/dir/c.html", "--", program("churn"), "steady", "2"],
            clean_env(), check=False)
    assert r.returncode == 1 and "cannot write /nonexistent/dir/c.html" in r.stderr


def test_bad_input_is_said(tmp_path):
    r = run([CLI, "report", "-o", str(tmp_path / "r.html"), __file__], clean_env(),
            check=False)
    assert r.returncode == 1 and "is not a memtrace trace" in r.stderr
    r = run([CLI, "report", "-o", "/nonexistent/dir/r.html",
             os.path.join(STORED, "steady-tcmalloc.mt")], clean_env(), check=False)
    assert r.returncode == 1 and "cannot write /nonexistent/dir/r.html" in r.stderr
    r = run([CLI, "report"], clean_env(), check=False)
    assert r.returncode == 2 and "give a trace or -- CMD" in r.stderr
    # (a missing file is said as such, not as one that is no trace:
    # new-user trial 32)
    for verb in (["report", "-o", str(tmp_path / "m.html")], ["export", "-f", "collapsed"]):
        r = run([CLI, *verb, str(tmp_path / "missing.mt")], clean_env(), check=False)
        assert r.returncode == 1, r
        assert f"{tmp_path / 'missing.mt'}: no such file" in r.stderr, r.stderr
    # (a device is no program: read as a trace, not run)
    r = run([CLI, "stat", "/dev/null"], clean_env(), check=False)
    assert r.returncode == 1 and "expected a memtrace trace" in r.stderr, r.stderr


def test_a_report_of_a_command_exits_with_its_status(tmp_path):
    """As stat does: the page is written, and a failing command's status
    is not hidden by a 0 (new-user trial 32)."""
    page = tmp_path / "r.html"
    r = run([CLI, "report", "-o", str(page), "--", PYTHON, "-c",
             "import sys; sys.exit(3)"], clean_env(), check=False)
    assert r.returncode == 3 and page.exists(), r.stderr


def test_collapsed_stacks_add_up(tmp_path):
    """export --format collapsed: one line per site, outermost frame first,
    the values adding up to the sites' bytes in stat --json."""
    trace = os.path.join(STORED, "numpy-plain.mt")
    out = run([CLI, "export", "--format", "collapsed", trace], clean_env()).stdout
    lines = [l.rsplit(" ", 1) for l in out.splitlines()]
    assert lines and all(len(l) == 2 and l[1].isdigit() for l in lines)
    summary = json.loads(run([CLI, "stat", "--json", trace], clean_env()).stdout)
    assert sum(int(v) for _, v in lines) == \
        sum(s["large"]["bytes"] for s in summary["sites"])
    top = max(lines, key=lambda l: int(l[1]))[0].split(";")
    assert top[0].startswith("<module> (numpy_plain.py:")
    assert any("func2 (numpy_plain.py:17)" in l[0].split(";") for l in lines)
    # (stacks that read the same are one line: new-user trial 32)
    assert len({l[0] for l in lines}) == len(lines), lines
    r = run([CLI, "export", "--format", "pprof", trace], clean_env(), check=False)
    assert r.returncode == 2 and "collapsed" in r.stderr


def test_the_shims_own_threads_are_not_the_programs(tmp_path):
    """A single-threaded program's Perfetto timeline had a second thread,
    memtrace's collector, with system calls of its own (new-user trial
    32): its thread_start says it is the shim's, dump says so, and its
    kernel calls are left out of the export (and the report's chart)."""
    trace = tmp_path / "t.mt"
    run([CLI, "run", "-q", "-o", str(trace), "--", PYTHON, "-c",
         "import time; b = [bytearray(1 << 20) for _ in range(30)]; time.sleep(0.3)"],
        clean_env())
    dump = run([CLI, "dump", str(trace)], clean_env()).stdout.splitlines()
    starts = [l.split() for l in dump if " thread_start " in l]
    shim = {l[3].split("=")[1] for l in starts if l[-1] == "memtrace"}
    program_threads = [l for l in starts if l[-1] != "memtrace"]
    assert shim and len(program_threads) == 1, starts
    calls = [l.split() for l in dump if " kernel_call " in l and " enter " in l]
    if not calls:
        pytest.skip("no kernel samples (perf_event_open not allowed here)")
    mine = [c for c in calls if c[3].split("=")[1] not in shim]
    assert len(mine) < len(calls), "no call sampled on the shim's threads"
    r = run([CLI, "export", "-f", "perfetto", "-o", str(tmp_path / "t.pb"), str(trace)],
            clean_env())
    assert f", {len(mine)} syscalls (the kernel's view)" in r.stderr, (r.stderr, len(calls))


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 127) << shift
        shift += 7
        if b < 128:
            return v, i


def fields(buf):
    """(field, value) of a protobuf message; length-delimited values as
    bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        else:
            raise AssertionError(f"wire type {wire}")
        yield field, v


@pytest.mark.skipif(not shutil.which("protoc"), reason="needs protobuf-compiler")
def test_perfetto_packets_match_the_trace(tmp_path):
    """export --format perfetto: valid protobuf (protoc --decode_raw), a
    slice per region call, an instant event per memory syscall the kernel
    saw, counters for the heap; counted against stat and dump."""
    trace = os.path.join(STORED, "numpy-regions.mt")
    out = tmp_path / "t.pftrace"
    run([CLI, "export", "--format", "perfetto", "-o", str(out), trace], clean_env())
    data = out.read_bytes()
    with open(out, "rb") as f:
        assert subprocess.run(["protoc", "--decode_raw"], stdin=f,
                              capture_output=True).returncode == 0
    kinds, names, tracks = {}, {}, 0
    for field, packet in fields(data):
        assert field == 1
        for f, v in fields(packet):
            if f == 60:
                tracks += 1
            if f == 11:
                event = dict(fields(v))
                kinds[event[9]] = kinds.get(event[9], 0) + 1
                if 23 in event:
                    names[event[23].decode()] = names.get(event[23].decode(), 0) + 1
    summary = json.loads(run([CLI, "stat", "--json", trace], clean_env()).stdout)
    calls = sum(r["count"] for r in summary["regions"])
    assert kinds[1] == kinds[2] == calls  # slice begin, end
    assert names["func1"] == names["func2"] == 100
    dump = run([CLI, "dump", trace], clean_env()).stdout
    enters = [l.split()[4] for l in dump.splitlines()
              if " kernel_call " in l and " enter " in l]
    assert kinds[3] == len(enters)  # instant: each syscall at entry
    for sys in ("brk", "mmap", "munmap", "madvise"):
        assert names.get(sys, 0) == enters.count(f"sys={sys}"), sys
    moves = sum(1 for l in dump.splitlines() if " heap_move " in l
                and l.split()[3] != l.split()[4].replace("to=", "from="))
    assert kinds[4] >= moves > 0  # counters: the heap at least
    assert tracks >= 6  # the process, 5 counters, its threads


def packed(buf):
    i, out = 0, []
    while i < len(buf):
        v, i = varint(buf, i)
        out.append(v)
    return out


@pytest.mark.skipif(not shutil.which("protoc"), reason="needs protobuf-compiler")
def test_pprof_profile_of_the_sites(tmp_path):
    """export --format pprof: a gzipped profile.proto (protoc --decode_raw
    reads it), one sample per site, the leaf first, its values adding up to
    the sites' blocks and bytes in stat --json."""
    import gzip
    trace = os.path.join(STORED, "numpy-plain.mt")
    out = tmp_path / "p.pb.gz"
    run([CLI, "export", "--format", "pprof", "-o", str(out), trace], clean_env())
    data = gzip.decompress(out.read_bytes())
    assert subprocess.run(["protoc", "--decode_raw"], input=data,
                          capture_output=True).returncode == 0
    samples, strings, functions = [], [], {}
    for field, v in fields(data):
        if field == 2:
            s = dict(fields(v))
            samples.append((packed(s[1]), packed(s[2])))
        elif field == 6:
            strings.append(v.decode())
        elif field == 5:
            f = dict(fields(v))
            functions[f[1]] = f[2]
    summary = json.loads(run([CLI, "stat", "--json", trace], clean_env()).stdout)
    sites = summary["sites"]
    assert strings[0] == "" and len(samples) == len(sites)
    assert sum(v[0] for _, v in samples) == sum(s["large"]["allocations"] for s in sites)
    assert sum(v[1] for _, v in samples) == sum(s["large"]["bytes"] for s in sites)
    # the heaviest site's stack, leaf first: NumPy's C code, then func2
    top = max(samples, key=lambda s: s[1][1])
    names = [strings[functions[loc]] for loc in top[0]]
    assert "func2" in names and names.index("func2") > 0
    assert names[-1] == "<module>"
