"""Four worker threads, each building batches of small records and byte
payloads, then dropping them.  `py_threads.py`: payloads of 1-4 KiB,
which glibc serves from each thread's own heap (thread-heap churn there);
`py_threads.py small`: payloads of at most 448 bytes, which CPython's own
allocator serves (a control)."""
import sys
import threading

SMALL = sys.argv[1:] == ["small"]


def payload(i, batch):
    size = 64 + (i % 7) * 64 if SMALL else 1024 + (i % 4) * 1024
    return bytes([(i + batch) & 0xFF]) * size


def worker(n, out, idx):
    total = 0
    for batch in range(60):
        records = [(i, "item%d" % i, i * 0.5) for i in range(8000)]
        payloads = [payload(i, batch) for i in range(3000 if SMALL else 600)]
        total += len(records) + sum(len(p) for p in payloads)
        del records, payloads
    out[idx] = total


results = [0] * 4
threads = [threading.Thread(target=worker, args=(i, results, i)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("total", sum(results))
