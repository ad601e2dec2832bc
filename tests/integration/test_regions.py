"""Regions from C (include/memtrace.h) and Python (the memtrace module):
each call measured on its own, figures exact for a program that does a
known amount in each call; nothing happens without the shim."""
import os

import pytest

from mt import (BACKENDS, CLI, PYTHON, bare_env, clean_env, program, run,
                shim_env, summary)

PYDIR = os.environ["MEMTRACE_PYTHON_DIR"]


def regions_of(s):
    return {r["name"]: r for r in s["regions"]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_c_regions_exact(backend):
    s = summary([program("regions"), "10"], backend)
    r = regions_of(s)
    work, inner, idle = r["work"], r["inner"], r["idle"]
    assert work["count"] == 10 and inner["count"] == 10 and idle["count"] == 1
    # "work" includes "inner": 3 big + 1 small malloc per call.
    assert work["bytes_requested"]["malloc"] == 10 * (3 * 200 * 1024 + 100)
    assert work["large"]["allocations"] == 30
    assert work["large"]["frees"] == 30
    assert work["large"]["max_live"] == 2
    assert inner["large"]["allocations"] == 0
    assert inner["bytes_requested"]["malloc"] == 1000
    # The program's own mappings (the allocator may map its own, too).
    for sys in ("mmap", "munmap"):
        own = work["syscalls_interposed"][sys] - work["syscalls_by_allocator"][sys]
        assert own == 10, sys
    # The kernel sees the same mappings (and, on glibc, its 200 KB chunks
    # mapped and unmapped: the default mmap threshold is 128 KiB).
    assert work["sources"]["syscalls"]["mmap"] == "kernel"
    assert work["syscalls"]["mmap"] >= 10
    assert idle["bytes_requested"]["malloc"] == 0
    assert idle["syscalls"] == {k: 0 for k in idle["syscalls"]}
    assert work["wall_s"]["min"] <= work["wall_s"]["median"] <= work["wall_s"]["total"]
    assert work["page_faults"]["minor"] >= 10 * 16  # 64 KiB touched per call


def test_glibc_mmapped_chunks_in_a_region():
    """On glibc the first two 200 KB blocks are mmapped chunks (above the
    128 KiB default threshold); freeing the first raises the threshold to
    its size, so every later one comes from the heap.  Inferred from the
    chunk headers, and the kernel agrees."""
    s = summary([program("regions"), "10"], "glibc")
    work = regions_of(s)["work"]
    assert work["syscalls_inferred"]["mmap"] == 2
    assert work["syscalls_inferred"]["munmap"] == 2
    assert work["syscalls"]["mmap"] == 12 and work["syscalls"]["munmap"] == 12


def test_c_program_runs_without_the_shim():
    r = run([program("regions"), "3"], bare_env("glibc"))
    assert r.stdout == "regions done 3\n"


PY = """
import memtrace, sys
print(memtrace.active())

@memtrace.region("decorated")
def make(n):
    return [bytearray(300_000) for _ in range(n)]

for _ in range(4):
    with memtrace.region("block"):
        keep = make(3)
        del keep
"""


def test_python_regions(tmp_path):
    env = shim_env("glibc", summary=str(tmp_path / "s.json"),
                   PYTHONPATH=PYDIR)
    r = run([PYTHON, "-c", PY], env)
    assert r.stdout == "True\n"
    import json
    regs = regions_of(json.loads((tmp_path / "s.json").read_text()))
    assert regs["block"]["count"] == 4 and regs["decorated"]["count"] == 4
    assert regs["decorated"]["large"]["allocations"] == 12
    assert regs["decorated"]["large"]["max_live"] == 3


def test_python_module_does_nothing_without_the_shim():
    r = run([PYTHON, "-c", PY], clean_env(PYTHONPATH=PYDIR))
    assert r.stdout == "False\n"


def test_memtrace_run_makes_the_module_importable(tmp_path):
    out = tmp_path / "s.json"
    r = run([CLI, "run", "--quiet", "--summary", str(out), "--",
             PYTHON, "-c", PY], clean_env())
    assert r.stdout == "True\n", r.stderr
    assert out.exists()


def test_unbalanced_end_warns_and_runs_on(tmp_path):
    code = ("import ctypes; lib = ctypes.CDLL(None); "
            "lib.memtrace_region_end(b'nothing'); print('ok')")
    r = run([PYTHON, "-c", code], shim_env("glibc"))
    assert r.stdout == "ok\n"
    assert "memtrace_region_end(\"nothing\") without a begin" in r.stderr
