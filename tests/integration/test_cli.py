"""memtrace run / stat: help, usage errors (exit 2), exit status passed
through, and figures equal to the shim's own summary."""
import json
import os

import pytest

from mt import BACKENDS, CLI, clean_env, program, run, summary

ENV = clean_env()


def cli(*args, check=False):
    return run([CLI, *args], ENV, check=check)


@pytest.mark.parametrize("args", [[], ["run"], ["stat"]])
def test_help(args):
    r = cli(*args, "--help")
    assert r.returncode == 0
    assert r.stdout.startswith("usage: memtrace")


@pytest.mark.parametrize("args,message", [
    ([], "no verb given"),
    (["frobnicate"], "unknown verb 'frobnicate'"),
    (["run"], "no command given"),
    (["run", "--"], "no command given"),
    (["stat"], "no command given"),
    (["run", "--bogus", "--", "true"], "unknown or incomplete option '--bogus'"),
    (["stat", "--backend"], "unknown or incomplete option"),
    (["run", "--summary", "", "--", "true"], "--summary needs a file name"),
])
def test_usage_errors_exit_2(args, message):
    r = cli(*args)
    assert r.returncode == 2
    assert message in r.stderr
    assert "usage: memtrace" in r.stderr


@pytest.mark.parametrize("verb", ["run", "stat"])
def test_unknown_backend_exits_2(verb):
    r = cli(verb, "--backend", "hoard", "--", "true")
    assert r.returncode == 2
    assert "unknown backend 'hoard'" in r.stderr
    assert "glibc, jemalloc, tcmalloc, mimalloc" in r.stderr


@pytest.mark.parametrize("verb", ["run", "stat"])
@pytest.mark.parametrize("script,status", [("exit 0", 0), ("exit 7", 7),
                                           ("kill -TERM $$", 128 + 15)])
def test_exit_status_passes_through(verb, script, status):
    r = cli(verb, "--", "sh", "-c", script)
    # run replaces itself with the command, so a signal shows as -15 here.
    assert r.returncode in (status, -(status - 128))


@pytest.mark.parametrize("verb", ["run", "stat"])
def test_command_not_found_exits_127(verb):
    r = cli(verb, "--", "/nonexistent/program")
    assert r.returncode == 127
    assert "cannot run '/nonexistent/program'" in r.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_writes_the_summary(backend, tmp_path):
    out = tmp_path / "s.json"
    r = cli("run", "--backend", backend, "--summary", str(out), "--quiet",
            "--", program("known_calls"), "10")
    assert r.returncode == 0 and r.stderr == ""
    s = json.loads(out.read_text())
    assert s["backend"]["name"] == backend
    assert s["calls"]["valloc"] == 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_stat_json_equals_the_shim_summary(backend, tmp_path):
    out = tmp_path / "stat.json"
    r = cli("stat", "--backend", backend, "--json", "-o", str(out), "--",
            program("known_calls"), "20")
    assert r.returncode == 0, r.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    got = json.loads(lines[0])
    direct = summary([program("known_calls"), "20"], backend)
    # What the program did is the same in both runs; what the allocator
    # adds by itself (tcmalloc growing its heap) may differ.
    for key in ("bytes_requested", "madvise_by_advice"):
        assert got[key] == direct[key], key
    for key in ("calls", "syscalls_interposed"):
        mine = {k: v - got.get(key.replace("syscalls_interposed", "syscalls")
                               + "_by_allocator", {}).get(k, 0)
                for k, v in got[key].items()}
        theirs = {k: v - direct.get(key.replace("syscalls_interposed", "syscalls")
                                    + "_by_allocator", {}).get(k, 0)
                  for k, v in direct[key].items()}
        assert mine == theirs, key


def test_stat_table_shows_the_figures():
    r = cli("stat", "--", program("known_calls"), "25")
    assert r.returncode == 0
    table = r.stderr
    assert "memtrace stat of" in table and "backend glibc" in table
    # 25 rounds of 1 valloc, and 25 x 3 madvise calls of the program.
    assert any(l.split()[:2] == ["25", "valloc"] for l in table.splitlines())
    assert "MADV_DONTNEED" in table
    assert "page faults" in table


def test_stat_reports_every_process_of_a_fork():
    r = cli("stat", "--", program("fork_exec"), "fork", "100", "200")
    assert r.returncode == 0
    assert r.stderr.count("memtrace stat of") == 2


def test_stat_output_file_unwritable():
    r = cli("stat", "-o", "/nonexistent-dir/out", "--", "true")
    assert r.returncode == 2
    assert "/nonexistent-dir/out" in r.stderr


def static_program(tmp_path):
    """A statically linked program (libc.a from libc6-dev)."""
    src = tmp_path / "static.c"
    src.write_text('#include <stdlib.h>\nint main(void) { free(malloc(10)); return 0; }\n')
    exe = tmp_path / "static"
    r = run(["gcc", "-static", "-o", str(exe), str(src)], ENV, check=False)
    if r.returncode != 0:
        pytest.skip("cannot link statically here: " + r.stderr)
    return str(exe)


@pytest.mark.parametrize("verb", [["stat"], ["compare", "-r", "2"], ["explain", "-r", "2"]])
def test_a_static_program_is_said_to_be_static(verb, tmp_path):
    exe = static_program(tmp_path)
    r = cli(*verb, "--", exe)
    assert r.stderr.count("is statically linked") == 1, r.stderr
    assert "cannot interpose its malloc" in r.stderr
    assert "did" not in r.stderr and "start?" not in r.stderr
    assert r.returncode == (0 if verb == ["stat"] else 2)


@pytest.mark.parametrize("verb", [["stat"], ["compare", "-r", "1", "-b", "glibc"]])
def test_a_command_killed_by_a_signal_is_said_so(verb):
    r = cli(*verb, "--", "sh", "-c", "kill -KILL $$")
    assert "killed by signal 9 (SIGKILL)" in r.stderr
    assert "137" not in r.stderr
    assert r.returncode == (137 if verb == ["stat"] else 1)


@pytest.mark.parametrize("name", ["/nonexistent/trace.mt", "missing.mt"])
def test_stat_of_a_missing_file_says_it_is_missing(name):
    r = cli("stat", name)
    assert r.returncode == 1
    assert f"{name}: no such file" in r.stderr
    assert "cannot run" not in r.stderr


def test_a_missing_command_under_compare_is_said_once():
    r = cli("compare", "-r", "2", "--", "/nonexistent/program")
    assert r.returncode == 127
    assert r.stderr.count("/nonexistent/program") == 1, r.stderr
    assert "cannot run '/nonexistent/program'" in r.stderr


def test_explain_takes_compare_spelling_of_backends():
    """explain's --backend LIST is also --backends, as compare spells it
    (a new user's first multi-backend run was lost to the difference)."""
    r = run([CLI, "explain", "--backends", "glibc", "--repeat", "1", "--json",
             "--", "/bin/true"], clean_env())
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["findings"] == []
