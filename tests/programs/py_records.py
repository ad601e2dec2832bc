# Pure Python: a dict of small objects built and dropped each step (new-user
# trial 12): CPython maps and unmaps its object arenas; __init__ runs
# under the interpreter's C code (its type call), between two Python frames.
import sys
class Rec:
    def __init__(self, i):
        self.id = i
        self.name = "n%d" % i
        self.vals = [i, i + 1, i + 2]

def build(n):
    return {("k%d" % i): Rec(i) for i in range(n)}   # line 10

def main(steps):
    acc = 0
    for s in range(steps):
        table = build(120000)
        acc += sum(r.vals[1] for r in table.values()) % 1000
        del table                                    # line 17
    print("acc", acc)

main(int(sys.argv[1]) if len(sys.argv) > 1 else 12)
