"""A fresh io.BytesIO filled in 64 KiB writes each round, then read whole
(getvalue): glibc grows the buffer by realloc, from its heap onto a
mapping (mmap) and by mremap, getvalue shrinks it to its contents, and its
free unmaps it.  36 MiB of writes: the buffer goes past glibc's 32 MiB
mmap ceiling, so every round maps and unmaps it.
`bytesio_churn.py ROUNDS`."""
import io
import sys


def fill(rounds):
    chunk = b"x" * 65536
    total = 0
    for _ in range(rounds):
        b = io.BytesIO()
        for _ in range(576):  # 36 MiB
            b.write(chunk)
        v = b.getvalue()
        total += len(v)
        del v, b
    return total


print(fill(int(sys.argv[1]) if len(sys.argv) > 1 else 12))
