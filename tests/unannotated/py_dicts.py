"""Build a table of records as dicts, index them, sort them, and drop them;
a few rounds, as a batch job over several input files would."""


def load(n, seed):
    rows = []
    x = seed
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        rows.append({"id": i, "name": "user%d" % (x % 50000), "score": x % 1000,
                     "tags": (x % 7, x % 11)})
    return rows


def summarize(rows):
    by_name = {}
    for r in rows:
        by_name.setdefault(r["name"], []).append(r["score"])
    ranked = sorted(rows, key=lambda r: (r["score"], r["id"]))
    best = {name: max(scores) for name, scores in by_name.items()}
    return ranked[0]["id"], len(best), sum(best.values())


total = 0
for round_ in range(3):
    rows = load(250_000, round_ + 1)
    first, names, s = summarize(rows)
    total += s
    del rows
print("total", total)
