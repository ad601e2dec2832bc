"""Never break the host program: the same output, the same exit status and
the same open files, with and without the shim, whichever way it exits."""
import pytest

from mt import BACKENDS, PYTHON, bare_env, program, run, shim_env

EXITS = [("return", 0), ("return", 3), ("exit", 5), ("_exit", 6),
         ("thread", 4), ("abort", 0), ("signal", 0)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how,code", EXITS)
def test_same_output_and_status(backend, how, code):
    cmd = [program("exits"), how, str(code)]
    bare = run(cmd, bare_env(backend), check=False)
    traced = run(cmd, shim_env(backend, quiet=False), check=False)
    assert traced.stdout == bare.stdout
    assert traced.returncode == bare.returncode
    assert "error" not in traced.stderr
    # A summary when the process exits through exit(); none (and no crash)
    # when it leaves by _exit, abort or a signal.
    has_summary = "memtrace: pid" in traced.stderr
    assert has_summary == (how in ("return", "exit", "thread"))


LIST_FDS = "import os; print(sorted(os.listdir('/proc/self/fd')))"


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_file_descriptor_leaks_into_the_program(backend, tmp_path):
    bare = run([PYTHON, "-c", LIST_FDS], bare_env(backend))
    traced = run([PYTHON, "-c", LIST_FDS],
                 shim_env(backend, summary=str(tmp_path / "s.json")))
    assert traced.stdout == bare.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_shell_pipeline_and_children(backend):
    script = "echo one; printf 'two\\nthree\\n' | sort -r; ls /nonexistent-x; exit 3"
    bare = run(["sh", "-c", script], bare_env(backend), check=False)
    traced = run(["sh", "-c", script], shim_env(backend), check=False)
    assert (traced.stdout, traced.returncode) == (bare.stdout, bare.returncode)
    assert traced.returncode == 3
