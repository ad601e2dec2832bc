"""A control in pure Python: a dict and lists of a million small objects,
built, sorted and searched, dropped at the end.  (Built and dropped
round after round, CPython's object allocator would map and unmap its
1 MiB arenas each round: churn of the program's own mappings.)"""
d = {i: str(i) for i in range(1_000_000)}
items = sorted(d.items(), key=lambda kv: kv[1])
words = [v * 2 for _, v in items]
hits = sum(1 for w in words if w.startswith("99"))
print(len(words), hits)
