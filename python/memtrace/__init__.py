"""Mark regions of a Python program for memtrace.

    import memtrace

    with memtrace.region("func2"):
        func2(a)

    @memtrace.region("load")
    def load(path): ...

Under libmemtrace.so (``memtrace run -- python3 prog.py``, or
``LD_PRELOAD=libmemtrace.so``), each call of a region is measured on its
own (allocator calls and bytes, memory system calls, page faults, CPU and
wall time) and reported per region in the summary.  Without the shim every
call does nothing, so a program can keep its regions in production.

Plain Python with ctypes: no build step.
"""
import ctypes
import functools

__all__ = ["region", "active", "kernel_counters"]

_COUNTERS = ("brk", "mmap", "munmap", "mremap", "madvise", "mprotect",
             "minor_faults", "major_faults")


class _KernelCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in _COUNTERS]


def _lookup():
    # The shim's functions are in the process's global symbol scope when it
    # is preloaded; dlopen(NULL) finds them there.
    try:
        process = ctypes.CDLL(None)
        begin = process.memtrace_region_begin
        end = process.memtrace_region_end
    except (OSError, AttributeError):
        return None, None
    for f in (begin, end):
        f.argtypes = [ctypes.c_char_p]
        f.restype = None
    return begin, end


_begin, _end = _lookup()


def _lookup_counters():
    try:
        f = ctypes.CDLL(None).memtrace_read_kernel_counters
    except (OSError, AttributeError):
        return None
    f.argtypes = [ctypes.POINTER(_KernelCounters)]
    f.restype = ctypes.c_int
    return f


_read_counters = _lookup_counters()


def kernel_counters():
    """The process's kernel counters now (every memory syscall kind since
    the shim started, minor and major faults since the process was
    forked; every thread), as a dict; None for a counter the kernel
    denied, and None altogether without the shim."""
    if _read_counters is None:
        return None
    c = _KernelCounters()
    if _read_counters(ctypes.byref(c)) != 0:
        return None
    return {name: (None if getattr(c, name) == 2**64 - 1 else getattr(c, name))
            for name in _COUNTERS}


def active():
    """True when libmemtrace.so is loaded and regions are measured."""
    return _begin is not None


class region:
    """A named region: a context manager, and a decorator.

    The name is encoded once, so entering a region costs one C call."""

    __slots__ = ("name", "_name")

    def __init__(self, name):
        if not isinstance(name, str) or not name:
            raise ValueError("a region needs a non-empty name")
        self.name = name
        self._name = name.encode()

    def __enter__(self):
        if _begin is not None:
            _begin(self._name)
        return self

    def __exit__(self, *exc):
        if _end is not None:
            _end(self._name)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def measured(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return measured
