"""What the LTTng tests share: a session daemon, and recording a command
under a session of the test's own."""
import os
import shutil
import subprocess

import pytest

from mt import clean_env, run

# Set by meson when it builds the provider (liblttng-ust-dev found).
PROVIDER = os.environ.get("MEMTRACE_LTTNG_PROVIDER")
# A run that takes longer is a deadlock (seconds; each takes well under 5).
HANG = 120
NUMPY_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench",
                            "numpy_temporaries.py")

needs_lttng = pytest.mark.skipif(
    not (PROVIDER and shutil.which("lttng") and shutil.which("babeltrace2")),
    reason="needs lttng-tools, babeltrace2 and liblttng-ust-dev")


def _sessiond_pids():
    r = subprocess.run(["pgrep", "-x", "lttng-sessiond"], capture_output=True,
                       text=True)
    return set(r.stdout.split())


@pytest.fixture(scope="module")
def sessiond():
    """A session daemon for the tests: the one running, or one started here
    and stopped at the end."""
    before = _sessiond_pids()
    if subprocess.run(["lttng", "list"], capture_output=True).returncode != 0:
        subprocess.run(["lttng-sessiond", "--daemonize"], check=True,
                       capture_output=True)
    yield
    for pid in _sessiond_pids() - before:
        subprocess.run(["kill", pid])


def lttng(*args):
    run(["lttng", *args], clean_env())


def record(tmp_path, name, cmd, env, contexts=("vpid", "vtid"), channel=None):
    """cmd under a session of our own that records memtrace:* into a
    directory; returns it.  `channel`: lttng enable-channel options for a
    channel of the test's own (its buffer sizes)."""
    out = tmp_path / name
    session = f"mt-test-{os.getpid()}-{name}"
    lttng("create", session, "--output", str(out))
    try:
        where = ["-s", session]
        if channel:
            lttng("enable-channel", "--userspace", *where, *channel, "mt")
            where += ["-c", "mt"]
        lttng("enable-event", "--userspace", "memtrace:*", *where)
        for c in contexts:
            lttng("add-context", "--userspace", *where, "-t", c)
        lttng("start", session)
        run(cmd, env, timeout=HANG)
        lttng("stop", session)
    finally:
        lttng("destroy", session)
    return out
