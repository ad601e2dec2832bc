"""Four worker threads, each building batches of small records and
few-KiB byte payloads, then dropping them."""
import threading


def worker(n, out, idx):
    total = 0
    for batch in range(60):
        records = [(i, "item%d" % i, i * 0.5) for i in range(8000)]
        payloads = [bytes([(i + batch) & 0xFF]) * (1024 + (i % 4) * 1024)
                    for i in range(600)]
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
