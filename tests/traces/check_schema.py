#!/usr/bin/python3
"""The trace's events are listed once, in include/memtrace/trace_events.h.
Checks that what is written elsewhere by hand agrees with that list:
docs/trace-format.md's table (tag and name of each event) and the LTTng
provider (shim/lttng/memtrace_tp.h: an event of each name, with a field of
each name the reader looks up)."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def table():
    """[(tag, name, [fields])] in tag order."""
    text = read("include/memtrace/trace_events.h")
    body = text[text.index("#define MT_TRACE_EVENTS(X)"):text.index("enum mt_tag")]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S).replace("\\\n", " ")
    events = []
    for m in re.finditer(r"\bX\(([^)]*)\)", body):
        parts = [p.strip() for p in m.group(1).split(",")]
        events.append((len(events) + 1, parts[1], parts[3:]))
    return events


def docs_rows():
    """{tag: name} from the event table of docs/trace-format.md."""
    rows = {}
    for m in re.finditer(r"^\| (\d+) \| (\w+) \|", read("docs/trace-format.md"),
                         flags=re.M):
        rows[int(m.group(1))] = m.group(2)
    return rows


def lttng_events():
    """{event name: set of field names} of the provider, with its event
    classes' fields given to their instances."""
    text = read("shim/lttng/memtrace_tp.h")
    fields_of, events = {}, {}
    blocks = re.split(r"(?=LTTNG_UST_TRACEPOINT_EVENT)", text)
    for b in blocks:
        names = set(re.findall(r"lttng_ust_field_\w+\(\s*(?:\w+,\s*)?(\w+),", b))
        m = re.match(r"LTTNG_UST_TRACEPOINT_EVENT_CLASS\(memtrace, (\w+)", b)
        if m:
            fields_of[m.group(1)] = names
            continue
        m = re.match(r"LTTNG_UST_TRACEPOINT_EVENT\(memtrace, (\w+)", b)
        if m:
            events[m.group(1)] = names
    return fields_of, events


def main():
    problems = []
    events = table()
    rows = docs_rows()
    for tag, name, _ in events:
        if rows.get(tag) != name:
            problems.append(f"docs/trace-format.md: tag {tag} is "
                            f"{rows.get(tag)!r}, trace_events.h says {name!r}")
    for tag in set(rows) - {t for t, _, _ in events}:
        problems.append(f"docs/trace-format.md: tag {tag} is not in trace_events.h")

    classes, lttng = lttng_events()
    # The malloc-API and syscall events are one LTTng event per entry point,
    # instances of a class; the native-only events have none.
    by_class = {"alloc": "alloc_class", "realloc": "realloc_class",
                "syscall": "call_class", "counters": "values_class",
                "baseline": "values_class"}
    # (sites: LTTng has them from the exit event; a session outlives a
    # killed process, but not its sites)
    native_only = {"thread_start", "thread_exit", "forked", "exec", "lost",
                   "malloc", "sites"}
    # Fields the LTTng reader does not look up by name.
    derived = {"entry", "which", "arg0", "arg1", "arg2"}
    for _, name, fields in events:
        if name in native_only:
            continue
        have = classes.get(by_class[name]) if name in by_class else lttng.get(name)
        if have is None:
            # An event of varints with no tracepoint of its own goes to
            # LTTng as memtrace:event (its name, its fields in order).
            generic = lttng.get("event")
            if not (generic and {"name", "values"} <= generic):
                problems.append(f"memtrace_tp.h: no LTTng event for {name!r}, "
                                "and no memtrace:event to carry it")
            continue
        for f in fields:
            f = f.split("[")[0]
            if f not in derived and f not in have:
                problems.append(f"memtrace_tp.h: {name!r} has no field {f!r} "
                                f"(it has {sorted(have)})")
    for p in problems:
        print(p)
    print(f"{len(events)} events checked, {len(problems)} disagreements")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
