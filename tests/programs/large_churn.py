"""One function churns large blocks: each round allocates a 40 MiB
bytearray, touches each of its pages, and frees it (above glibc's 32 MiB
mmap ceiling and mimalloc's 16 MiB: mapped and unmapped every round on
both).  `large_churn.py ROUNDS`."""
import sys


def churn(rounds):
    total = 0
    for _ in range(rounds):
        b = bytearray(40 << 20)
        b[::4096] = b"x" * (len(b) // 4096)
        total += len(b)
        del b
    return total


print(churn(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
