"""A binary record stream built with bytes += in a loop: each += makes a
new bytes object of the whole stream so far and drops the old one.  On
glibc the larger ones are mapped and unmapped each time, and a churn takes
most of the run; what is left beyond it is the churn's too (new-user trial
35: with glibc's thresholds raised it ran as fast as on mimalloc)."""
import struct
import sys


def build(n):
    out = b""
    for i in range(n):
        out += struct.pack("<iid", i, i * 3, i / 7.0) + b"rec"
    return out


rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
print(sum(len(build(20000)) for _ in range(rounds)))
