"""Bad settings: one warning line naming the variable, the value and what is
accepted, then the default; the program runs on with its own output and
exit status.  A backend that cannot be had is an error, never a silent run
on another allocator."""
import os
import shutil
import subprocess

import pytest

from mt import CLI, SHIM, clean_env, program, run, summary

KNOWN = [program("known_calls"), "3"]


def warnings_of(stderr):
    return [l for l in stderr.splitlines() if l.startswith("memtrace: warning:")]


@pytest.mark.parametrize("var,value,accepted", [
    ("MEMTRACE_QUIET", "maybe", "accepted: 1, true"),
    ("MEMTRACE_PERF", "sometimes", "accepted: 1, true"),
    ("MEMTRACE_BACKEND", "hoard", "accepted: glibc, jemalloc"),
    ("MEMTRACE_BACKEND", "lib/libfoo.so", "absolute path"),
    ("MEMTRACE_SUMMARY", "/tmp/%d.json", "'%p' stands for the pid"),
    ("MEMTRACE_SUMMARY", "", "non-empty"),
    ("MEMTRACE_SITES", "sample:64k", "accepted: 1/on, large, sample:BYTES"),
])
def test_bad_value_warns_once_and_runs_on(var, value, accepted):
    env = clean_env(LD_PRELOAD=SHIM, **{var: value})
    r = run([program("exits"), "return", "3"], env, check=False)
    warned = warnings_of(r.stderr)
    assert len(warned) == 1, r.stderr
    assert f"{var}='{value}'" in warned[0]
    assert accepted in warned[0]
    assert r.returncode == 3
    assert r.stdout == "output before exit via return\n"


def test_unknown_backend_falls_back_to_glibc_and_says_so():
    s = summary(KNOWN, "hoard")
    assert s["backend"]["name"] == "glibc"


def test_unwritable_summary_path_warns_and_runs_on():
    env = clean_env(LD_PRELOAD=SHIM, MEMTRACE_QUIET="1",
                    MEMTRACE_SUMMARY="/nonexistent-dir/s.json")
    r = run([program("exits"), "exit", "5"], env, check=False)
    warned = warnings_of(r.stderr)
    assert len(warned) == 1 and "/nonexistent-dir/s.json" in warned[0]
    assert "MEMTRACE_SUMMARY" in warned[0]
    assert r.returncode == 5


def test_missing_backend_library_is_an_error():
    env = clean_env(LD_PRELOAD=SHIM, MEMTRACE_BACKEND="/nonexistent/libfoo.so")
    r = run(KNOWN, env, check=False)
    assert r.returncode == 127
    assert "memtrace: error:" in r.stderr
    assert "/nonexistent/libfoo.so" in r.stderr


def test_backend_that_is_not_an_allocator_is_an_error(tmp_path):
    """Asked for a library that does not define malloc: the shim says so
    rather than running on glibc as if it were the one asked for."""
    libz = "/usr/lib/" + subprocess.run(
        ["gcc", "-print-multiarch"], capture_output=True, text=True
    ).stdout.strip() + "/libz.so.1"
    if not os.path.exists(libz):
        pytest.skip("no libz to stand in for a non-allocator")
    env = clean_env(LD_PRELOAD=SHIM, MEMTRACE_BACKEND=libz)
    r = run(KNOWN, env, check=False)
    assert r.returncode == 127
    assert "malloc is served by" in r.stderr and "libz" in r.stderr


def test_backend_named_but_not_installed_names_the_package(tmp_path):
    """jemalloc hidden in a private mount namespace (an overlay whose upper
    layer deletes the file), as on a machine without the package."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare to hide a library")
    libdir = "/usr/lib/" + subprocess.run(
        ["gcc", "-print-multiarch"], capture_output=True, text=True
    ).stdout.strip()
    hide = (
        f"mount -t tmpfs none {tmp_path} && mkdir {tmp_path}/u {tmp_path}/w && "
        f"mknod {tmp_path}/u/libjemalloc.so.2 c 0 0 && "
        f"mount -t overlay overlay -o lowerdir={libdir},upperdir={tmp_path}/u,"
        f"workdir={tmp_path}/w {libdir} || exit 200; exec \"$@\"")
    env = clean_env(LD_PRELOAD=SHIM, MEMTRACE_BACKEND="jemalloc")
    r = subprocess.run(["unshare", "-m", "sh", "-c", hide, "sh"] + KNOWN,
                       env=env, capture_output=True, text=True)
    if r.returncode == 200:
        pytest.skip("cannot hide the library here: " + r.stderr.strip())
    assert r.returncode == 127, r.stderr
    assert "backend jemalloc is not installed" in r.stderr
    assert "apt-get install libjemalloc2" in r.stderr


@pytest.mark.parametrize("content", [
    b"hello world, this is not a trace file at all",
    b"\x7fELF\x02\x01\x01" + bytes(100),
    b"",
])
def test_explain_of_a_file_that_is_no_trace_says_so(content, tmp_path):
    path = tmp_path / "garbage"
    path.write_bytes(content)
    r = run([CLI, "explain", str(path)], clean_env(), check=False)
    assert r.returncode == 1
    assert f"{path}: not a memtrace trace" in r.stderr
    assert "expected near" not in r.stderr and "'[' or '{'" not in r.stderr
    assert r.stderr.count("\n") == 1


@pytest.mark.parametrize("depth", ["0", "33", "x", ""])
def test_a_bad_depth_is_a_usage_error(depth):
    r = run([CLI, "stat", "--by-site", "--depth", depth, "--", "true"],
            clean_env(), check=False)
    assert r.returncode == 2, r
    assert f"--depth '{depth}' is not a number of frames" in r.stderr, r.stderr


@pytest.mark.parametrize("verb", ["report", "explain", "stat"])
def test_an_option_after_the_trace_says_where_it_goes(verb, tmp_path):
    """`memtrace report t.mt -o t.html` said "one trace at a time", and
    `explain t.mt -o x` "-o: no such file" (new-user trial 18): an option
    after the files is a usage error that says options go before them,
    and nothing is written."""
    trace = tmp_path / "t.mt"
    run([CLI, "run", "--quiet", "-o", str(trace), "--", program("known_calls"), "5"],
        clean_env())
    out = tmp_path / "out"
    r = run([CLI, verb, str(trace), "-o", str(out)], clean_env(), check=False)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"option '-o' after the file {trace}: options go before the files" \
        in r.stderr, r.stderr
    assert not out.exists()
    # before it, as usage says, it is read
    r = run([CLI, verb, "-o", str(out), str(trace)], clean_env(), check=False)
    assert r.returncode == 0 and out.exists(), r.stderr


def test_run_says_a_trace_it_cannot_write_before_running(tmp_path):
    """An unwritable or existing -o: the command ran to its end recording
    nothing, exit 0, a warning at its start the only sign (new-user trial
    31).  The CLI asks first, and runs nothing."""
    marker = tmp_path / "ran"
    cmd = ["sh", "-c", f"touch {marker}"]
    existing = tmp_path / "old.mt"
    existing.write_text("keep")
    for path, said in [("/proc/nope/t.mt", "cannot create the trace /proc/nope/t.mt"),
                       (str(existing), f"{existing} exists: memtrace never overwrites"),
                       ("/nonexistent/t.%p.mt", "choose a writable directory")]:
        r = run([CLI, "run", "-q", "-o", path, "--"] + cmd, clean_env(), check=False)
        assert r.returncode == 2, (path, r.stderr)
        assert said in r.stderr, r.stderr
        assert not marker.exists(), path
    assert existing.read_text() == "keep"
    # (a path it can write: no file left behind by the question)
    fresh = tmp_path / "new.mt"
    r = run([CLI, "run", "-q", "-o", str(fresh), "--"] + cmd, clean_env())
    assert marker.exists() and fresh.stat().st_size > 0
