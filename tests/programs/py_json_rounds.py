"""json.dumps and json.loads of a table of 60,000 dicts, round after round
(new-user trial 8): CPython's own 1 MiB arenas are mapped and unmapped as
the parsed copies come and go; glibc's few mapped blocks (the dumped
string) are not what churns.

    py_json_rounds.py [ROUNDS]
"""
import json, sys
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
data = {"items": [{"id": i, "name": "item%d" % i, "tags": ["a", "b", str(i % 7)], "v": i * 0.25} for i in range(60000)]}
tot = 0
for r in range(rounds):
    s = json.dumps(data)
    back = json.loads(s)
    tot += len(s) + len(back["items"])
print(tot)
