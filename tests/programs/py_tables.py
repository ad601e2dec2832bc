"""`py_tables.py [BATCHES]`: builds a table each batch (a list of 300,000
tuples and a dict keyed by id, whose hash table is some 10 MiB), sums a
few of its rows, and drops it.  glibc raises its mmap threshold to the
dict's 10 MiB; most large blocks are the list's, far smaller."""
import sys

def build(batch, n):
    rows = [(i, batch, i * 0.5, "name%d" % i) for i in range(n)]
    index = {r[0]: r for r in rows}
    return rows, index

def aggregate(rows, index):
    s = 0.0
    for i in range(0, len(rows), 7):
        s += index[i][2]
    return s

total = 0.0
batches = int(sys.argv[1]) if len(sys.argv) > 1 else 12
for b in range(batches):
    rows, index = build(b, 300_000)
    total += aggregate(rows, index)
    del rows, index
print(total)
