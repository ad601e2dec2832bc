"""The reference func1/func2 code on /usr/bin/python3 with Debian's NumPy,
under every backend: same results as without the shim, and the allocations
the NumPy user asks about, counted: func1 makes one 8 MB buffer per call
(the division reuses astype's temporary in place), func2 two (t is still
referenced, so the division needs a new one)."""
import pytest

from mt import BACKENDS, PYTHON, bare_env, run, summary

SCRIPT = """
import sys
import numpy as np

def func1(a):
    return a.astype(np.float64) / 255.0

def func2(a):
    t = a.astype(np.float64)
    return t / 255.0

f = {"func1": func1, "func2": func2}[sys.argv[1]]
calls = int(sys.argv[2])
a = np.random.default_rng(7).integers(0, 256, size=1_000_000, dtype=np.uint8)
total = 0.0
for _ in range(calls):
    total += float(f(a)[::9973].sum())
print(f"{sys.argv[1]} {calls} {total:.6f}")
"""

SIZE = 8_000_000  # 1,000,000 float64


def big_allocations(s):
    """Allocations in the power-of-two class holding SIZE bytes."""
    lo = 1 << (SIZE.bit_length() - 1)
    return sum(b["count"] for b in s["size_histogram"] if b["min"] == lo)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("func,per_call", [("func1", 1), ("func2", 2)])
def test_temporaries_per_call(backend, func, per_call):
    few = summary([PYTHON, "-c", SCRIPT, func, "5"], backend)
    many = summary([PYTHON, "-c", SCRIPT, func, "25"], backend)
    assert big_allocations(many) - big_allocations(few) == 20 * per_call
    assert many["backend"]["name"] == backend


@pytest.mark.parametrize("backend", BACKENDS)
def test_results_unchanged(backend):
    from mt import shim_env
    for func in ("func1", "func2"):
        cmd = [PYTHON, "-c", SCRIPT, func, "3"]
        bare = run(cmd, bare_env(backend))
        traced = run(cmd, shim_env(backend))
        assert traced.stdout == bare.stdout
