# (new-user trial 36: CPython's arenas mapped and unmapped each batch, and
# the page faults the same without them: PYTHONMALLOC=malloc on mimalloc
# ends the arenas, not the faults)
# Access-log aggregator: each batch parses synthetic lines into dicts, builds
# an index dict keyed by (host, path) with lists of records, makes a text
# summary with "".join, then drops everything.
import random, sys

def make_lines(rng, n):
    hosts = [f"10.0.{i//256}.{i%256}" for i in range(300)]
    paths = [f"/api/v{v}/items/{k}" for v in range(3) for k in range(400)]
    return [f"{rng.choice(hosts)} - - GET {rng.choice(paths)} {rng.choice((200,200,200,404,500))} {rng.randrange(50000)}"
            for _ in range(n)]

def batch(lines):
    recs = []
    for ln in lines:
        host, _, _, meth, path, status, size = ln.split(" ")
        recs.append({"host": host, "method": meth, "path": path, "status": int(status), "size": int(size)})
    index = {}
    for r in recs:
        index.setdefault((r["host"], r["path"]), []).append(r)
    out = []
    for (h, p), rs in index.items():
        if len(rs) > 1:
            out.append(f"{h}\t{p}\t{len(rs)}\t{sum(x['size'] for x in rs)}")
    return len("\n".join(out)), len(index)

def main():
    rng = random.Random(5)
    nb = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    tot = 0
    for b in range(nb):
        lines = make_lines(rng, 120000)
        n, k = batch(lines)
        tot += n + k
        del lines
    print("total", tot)

main()
