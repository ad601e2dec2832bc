#!/usr/bin/python3
"""Fails when the files of a directory include one another in a cycle.

    include_cycles.py DIR...

A module is foo.c and foo.h together; foo depends on bar when either file
includes "bar.h" (a quoted include of a header in the same directory).  Each
directory's modules must form a graph without cycles, so that each can be
read, and changed, knowing only what is below it."""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)"', re.M)


def modules(directory):
    """{module: set of modules it includes}"""
    graph = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith((".c", ".h")):
            continue
        mod = name[:-2]
        deps = graph.setdefault(mod, set())
        with open(os.path.join(directory, name)) as f:
            for header in INCLUDE.findall(f.read()):
                if os.path.exists(os.path.join(directory, header)):
                    dep = header[:-2] if header.endswith(".h") else header
                    if dep != mod:
                        deps.add(dep)
    return graph


def a_cycle(graph):
    """One cycle as a list of modules, or None."""
    state = {}  # module -> 1 on the path, 2 done

    def visit(mod, path):
        state[mod] = 1
        path.append(mod)
        for dep in sorted(graph.get(mod, ())):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep, path)
                if found:
                    return found
        path.pop()
        state[mod] = 2
        return None

    for mod in sorted(graph):
        if mod not in state:
            found = visit(mod, [])
            if found:
                return found
    return None


def main():
    failed = 0
    for directory in sys.argv[1:]:
        cycle = a_cycle(modules(directory))
        if cycle:
            failed += 1
            print(f"{directory}: include cycle: {' -> '.join(cycle)}")
        else:
            print(f"{directory}: no include cycle")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
