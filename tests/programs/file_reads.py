"""`file_reads.py PATH [ROUNDS]`: reads a whole file into bytes, round after
round, and sums a few of its bytes with NumPy (np.frombuffer: a view, no
copy).  The large blocks are the file reads', made by the interpreter, not
NumPy's: a fix for them is not NumPy's out=."""
import sys

import numpy as np


def load(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    total = 0
    for _ in range(rounds):
        data = load(path)
        total += int(np.frombuffer(data, dtype=np.uint8)[::4096].sum())
    print(total)


main()
