"""A control in pure Python: dicts and lists of a few million small
objects, sorted, dropped, three times."""
for round in range(3):
    d = {i: str(i) for i in range(400_000)}
    items = sorted(d.items(), key=lambda kv: kv[1])
    words = [v * 2 for _, v in items]
    print(round, len(words), words[-1][:6])
    del d, items, words
