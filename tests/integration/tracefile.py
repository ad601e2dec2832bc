"""Trace files byte by byte (docs/trace-format.md): reading a file's
chunks, giving it a status record (format 1.8) as the shim writes it, and
writing traces of a shape no program makes in reasonable time (100,000
threads, 1,000 regions) to test the reader's limits."""
import ctypes
import json
import struct

_xxh = ctypes.CDLL("libxxhash.so.0")
_xxh.XXH64.restype = ctypes.c_uint64
_xxh.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]

HEADER = struct.Struct("<8sHHIQ")            # file header, 24 bytes
CHUNK = struct.Struct("<4sIIIIIIIQQQ")       # chunk header, 56 bytes
STATUS = struct.Struct("<IiQQQ")             # status record, 32 bytes
ZSTD, PROVISIONAL, STATUS_FLAG = 1, 2, 4
END = {"recording": 0, "exit": 1, "exec": 2, "_exit": 3, "signal": 4,
       "write_failed": 5}

# Event tags (include/memtrace/trace_format.h)
FREE, REGION_NAME, REGION_BEGIN, REGION_END = 2, 9, 10, 11
THREAD_START, THREAD_EXIT, LOST, EXIT, SAMPLES_LOST, MALLOC = 13, 14, 17, 18, 21, 23


def xxh64(data, seed=0):
    return _xxh.XXH64(bytes(data), len(data), seed)


def chunk(tid, seq, payload, events, flags=0, first_tsc=0, first_ns=0):
    """A chunk header and payload, with its checksum."""
    head = CHUNK.pack(b"MTCK", flags, tid, seq, len(payload), len(payload),
                      events, 0, first_tsc, first_ns, 0)
    digest = xxh64(payload, xxh64(head))
    return head[:-8] + struct.pack("<Q", digest) + payload


def status_chunk(end, value=0, at=0, lost=0):
    return chunk(0, 0, STATUS.pack(END[end], value, at, lost, 0), 0,
                 flags=STATUS_FLAG)


def header_end(data):
    """The offset of the first chunk."""
    return HEADER.size + struct.unpack_from("<I", data, 12)[0]


def chunks(data):
    """(offset, flags, tid, seq, payload_len) of each whole chunk."""
    at, out = header_end(data), []
    while at + CHUNK.size <= len(data):
        _, flags, tid, seq, plen = struct.unpack_from("<4s4I", data, at)
        out.append((at, flags, tid, seq, plen))
        at += CHUNK.size + plen
    return out


def with_status(data, end, value=0, at=0, lost=0):
    """The file as the 1.8 writer leaves it when recording ends so: its
    status record rewritten in place, or (a file of an older writer) one
    put after the metadata."""
    data = bytearray(data)
    first = header_end(data)
    record = status_chunk(end, value, at, lost)
    if chunks(data) and chunks(data)[0][1] & STATUS_FLAG:
        data[first:first + len(record)] = record
        return bytes(data)
    struct.pack_into("<H", data, 10, 8)  # minor 8
    return bytes(data[:first] + record + data[first:])


def varint(v):
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def zigzag(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1


def event(tag, *fields, text=None):
    """One event with dt 0 (in the tag byte), its fields as varints."""
    out = bytes([tag | 1 << 5]) + b"".join(varint(f) for f in fields)
    if text is not None:
        out += varint(len(text)) + text
    return out


def trace(chunk_list, pid=4242, command=("synthetic",), minor=8):
    """A whole file: header, metadata, the chunks given."""
    meta = json.dumps({
        "memtrace": "test", "format_major": 1, "format_minor": minor,
        "pid": pid, "parent_pid": 0, "command": list(command),
        "backend": {"name": "glibc", "library": "", "version": "2.36"},
        "page_size": 4096, "clock": {"source": "tsc", "tsc_shift": 6},
    }).encode()
    head = HEADER.pack(b"MEMTRACE", 1, minor, len(meta), xxh64(meta))
    return head + meta + b"".join(chunk_list)


def thread_chunk(tid, seq, mallocs, exits=True, tsc=0):
    """A thread that starts, mallocs and frees `mallocs` 48-byte blocks, and
    (with `exits`) ends."""
    body, n, addr = [event(THREAD_START, tid)], 1, 0x10000 + tid * 64
    prev = 0
    for _ in range(mallocs):
        body.append(event(MALLOC, 48, zigzag(addr - prev), zigzag(8)))
        body.append(event(FREE, zigzag(0), 56))
        prev = addr
        n += 2
    if exits:
        body.append(event(THREAD_EXIT, tid))
        n += 1
    return chunk(tid, seq, b"".join(body), n, first_tsc=tsc, first_ns=tsc)


def exit_chunk(tid, seq, summary=None, tsc=0):
    text = json.dumps(summary or {"wall_s": 1.0, "threads": 1}).encode()
    return chunk(tid, seq, event(EXIT, text=text), 1, first_tsc=tsc, first_ns=tsc)
