"""The malloc libraries the benchmarks preload for each backend, bare: one
place for their names and the directory Debian puts them in."""
import os
import subprocess

BACKEND_LIBS = {
    'glibc': None,
    'jemalloc': 'libjemalloc.so.2',
    'tcmalloc': 'libtcmalloc_minimal.so.4',
    'mimalloc': 'libmimalloc.so.2',
}


def default_libdir():
    """/usr/lib/<multiarch triplet>, as gcc names it."""
    try:
        arch = subprocess.run(['gcc', '-print-multiarch'], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        arch = ''
    return os.path.join('/usr/lib', arch) if arch else '/usr/lib'


def backend_lib(backend, libdir=None):
    """The library to preload for backend bare; None for glibc."""
    name = BACKEND_LIBS[backend]
    return name and os.path.join(libdir or default_libdir(), name)
