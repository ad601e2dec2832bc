"""fork: the child goes on with figures of its own; exec: the new image
starts its own summary.  With '%p' in MEMTRACE_SUMMARY each process writes
its own file."""
import pytest

from mt import BACKENDS, program, summaries


def roles(stdout):
    """{'parent': pid, 'child': pid, ...} from the program's output."""
    return {role: int(pid) for role, pid in
            (line.split() for line in stdout.splitlines())}


@pytest.mark.parametrize("backend", BACKENDS)
def test_forked_child_counts_its_own_calls(backend):
    found, r = summaries([program("fork_exec"), "fork", "5000", "3000"], backend)
    pids = roles(r.stdout)
    parent, child = found[pids["parent"]], found[pids["child"]]
    # The child starts from zero at fork: it made 3000 mallocs of 48 bytes
    # (plus stdio's buffer), never the parent's 5000.
    assert 3000 <= child["calls"]["malloc"] < 3010
    assert parent["calls"]["malloc"] >= 5000
    assert parent["calls"]["malloc"] < 5000 + 3000
    assert child["backend"]["name"] == backend
    # Its kernel counters are its own, opened at the fork: exactly its 3
    # munmaps, none of the parent's 5.
    assert child["sources"]["syscalls"]["munmap"] == "kernel"
    assert child["syscalls"]["munmap"] == 3
    assert parent["syscalls"]["munmap"] >= 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_exec_starts_a_new_summary(backend):
    found, r = summaries([program("fork_exec"), "exec", "4000", "7000"], backend)
    pids = roles(r.stdout)
    leaf = found[pids["leaf"]]
    parent = found[pids["parent"]]
    assert 7000 <= leaf["calls"]["malloc"] < 7010
    assert leaf["command"][1:] == ["leaf", "7000"]
    assert leaf["backend"]["name"] == backend, "exec keeps the backend"
    assert 4000 <= parent["calls"]["malloc"] < 4010
