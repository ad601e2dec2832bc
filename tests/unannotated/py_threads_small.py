"""Four worker threads, each building batches of small records and short
byte strings (a few hundred bytes), then dropping them."""
import threading


def worker(n, out, idx):
    total = 0
    for batch in range(60):
        records = [(i, "item%d" % i, i * 0.5) for i in range(8000)]
        payloads = [bytes([(i + batch) & 0xFF]) * (64 + (i % 7) * 64)
                    for i in range(3000)]
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
