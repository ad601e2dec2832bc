#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>
#ifdef MT_HAVE_ZSTD
#include <zstd.h>
#endif

#include "native_read.h"
#include "chunk_hash.h"
#include "varint.h"

/* Bounds a sane writer never crosses: anything larger is damage. */
enum { MAX_METADATA = 1 << 20, MAX_RAW = 1 << 20, MAX_PAYLOAD = 2 << 20 };

struct native {
	struct mt_trace base; /* first: the source (source.h) */
	FILE *f;			 /* or NULL when reading memory */
	const unsigned char *mem;
	size_t mem_len;
	uint64_t offset;		 /* of the next read */
	uint64_t pos;			 /* where the FILE stands */
	uint64_t size;			 /* of the file, when it was opened */
	json_t *metadata;
	uint64_t data_start;
	unsigned minor; /* of the format */
	/* The status record (1.8), when the file has a readable one. */
	struct mt_trace_status status;
	bool has_status, status_damaged;
	/* Time: TSC ticks to ns, from the chunks' (first_tsc, first_ns) */
	uint64_t tsc0, ns0;
	double ns_per_tick;
	unsigned char *payload, *raw; /* grown to the largest chunk */
	size_t payload_cap, raw_cap;
	uint64_t skipped;
	uint64_t truncated_at;		 /* the chunk the file ends inside */
	uint64_t unwritten, unwritten_at; /* zero-filled holes */
	/* When the file has provisional chunks: every chunk's (tid, seq,
	 * offset), sorted, to find the chunk that supersedes one. */
	struct chunk_key *chunks;
	size_t nchunks;
};

struct chunk_key {
	uint32_t tid, seq;
	uint64_t offset;
};


/* Read len bytes at the current offset; false at the end of the data. */
static size_t read_at(struct native *t, void *buf, size_t len)
{
	size_t n;
	if (!len)
		return 0;
	if (t->f) {
		/* Reads are mostly in sequence: a seek drops stdio's buffer
		 * and costs a system call, so only when needed. */
		if (t->pos != t->offset &&
		    fseeko(t->f, (off_t)t->offset, SEEK_SET) != 0)
			return 0;
		n = fread(buf, 1, len, t->f);
		t->pos = t->offset + n;
		if (n < len)
			t->pos = UINT64_MAX; /* at the end or failed: seek anew */
	} else {
		n = t->offset < t->mem_len ? t->mem_len - t->offset : 0;
		if (n > len)
			n = len;
		memcpy(buf, t->mem + t->offset, n);
	}
	return n;
}


static bool read_header(struct native *t, char *err, size_t errlen)
{
	struct mt_file_header h;
	size_t n = read_at(t, &h, sizeof h);

	if (n < sizeof h || memcmp(h.magic, MT_TRACE_MAGIC, 8) != 0)
		return mt_read_fail(err, errlen,
				    "offset 0: expected a memtrace trace (\"MEMTRACE\" "
				    "header), found %s",
				    n < sizeof h ? "a file too short" : "something else");
	if (h.major != MT_TRACE_MAJOR)
		return mt_read_fail(err, errlen,
				    "offset 8: trace format %u.%u, this memtrace reads "
				    "%u.x only: use a memtrace of that version",
				    h.major, h.minor, MT_TRACE_MAJOR);
	if (h.metadata_len > MAX_METADATA)
		return mt_read_fail(err, errlen, "offset 12: metadata of %u bytes, at most "
				    "%d expected",
				    h.metadata_len, MAX_METADATA);
	char *meta = malloc(h.metadata_len + 1);
	if (!meta)
		return mt_read_fail(err, errlen, "out of memory");
	t->offset = sizeof h;
	n = read_at(t, meta, h.metadata_len);
	if (n < h.metadata_len || XXH64(meta, h.metadata_len, 0) != h.metadata_hash) {
		free(meta);
		return mt_read_fail(err, errlen, "offset %zu: %u bytes of metadata expected, %s",
				    sizeof h, h.metadata_len,
				    n < h.metadata_len ? "the file ends first"
				    : "their checksum does not match");
	}
	json_error_t jerr;
	t->metadata = json_loadb(meta, h.metadata_len, 0, &jerr);
	free(meta);
	if (!t->metadata)
		return mt_read_fail(err, errlen, "offset %zu: metadata is not JSON: %s",
				    sizeof h, jerr.text);
	t->data_start = t->offset = sizeof h + h.metadata_len;
	t->minor = h.minor;
	return true;
}

/* The status record's header is fixed: thread 0, number 0, no events,
 * the raw struct as its payload (docs/trace-format.md). */
static bool valid_status(const struct mt_chunk_header *h)
{
	return h->flags == MT_CHUNK_STATUS && h->tid == 0 && h->seq == 0 &&
	       h->events == 0 && h->payload_len == sizeof(struct mt_trace_status);
}

static bool valid_header(const struct mt_chunk_header *h)
{
	return h->magic == MT_CHUNK_MAGIC &&
	       !(h->flags & ~(MT_CHUNK_ZSTD | MT_CHUNK_PROVISIONAL | MT_CHUNK_STATUS)) &&
	       (!(h->flags & MT_CHUNK_STATUS) || valid_status(h)) &&
	       h->payload_len <= MAX_PAYLOAD &&
	       h->raw_len <= MAX_RAW &&
	       (h->flags & MT_CHUNK_ZSTD || h->payload_len == h->raw_len);
}

/* Does the whole chunk fit in the file?  The last one may not: its writer
 * was stopped (a kill, a full disk) part way. */
static bool fits(const struct native *t, uint64_t at, const struct mt_chunk_header *h)
{
	return at + sizeof *h + h->payload_len <= t->size;
}

/* The status record, when the first chunk is one and reads whole. */
static void read_status(struct native *t, const struct mt_chunk_header *h)
{
	unsigned char payload[sizeof(struct mt_trace_status)];
	uint64_t at = t->offset;
	t->offset += sizeof *h;
	if (read_at(t, payload, sizeof payload) == sizeof payload &&
	    mt_chunk_hash(h, payload) == h->hash) {
		memcpy(&t->status, payload, sizeof t->status);
		t->has_status = true;
	} else {
		t->status_damaged = true;
	}
	t->offset = at;
}

static int by_key(const void *a, const void *b)
{
	const struct chunk_key *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Is the provisional chunk at `offset` superseded by a later one of its
 * thread and number (docs/trace-format.md)? */
static bool superseded(const struct native *t, const struct mt_chunk_header *h,
		       uint64_t offset)
{
	struct chunk_key key = {h->tid, h->seq, offset};
	const struct chunk_key *k =
		t->chunks ? bsearch(&key, t->chunks, t->nchunks, sizeof key, by_key)
			  : NULL;
	return k && k + 1 < t->chunks + t->nchunks && k[1].tid == h->tid &&
	       k[1].seq == h->seq;
}

static bool resync(struct native *t, uint64_t from);

/* One pass over the chunk headers (damage skipped): the time base, a
 * straight line through the earliest and the latest (first_tsc, first_ns)
 * of all chunks; and, when provisional chunks are there, the index that
 * tells which are superseded. */
static void scan_headers(struct native *t)
{
	struct mt_chunk_header h;
	uint64_t lo_tsc = UINT64_MAX, lo_ns = 0, hi_tsc = 0, hi_ns = 0;
	size_t cap = 0;
	bool provisional = false;

	t->offset = t->data_start;
	while (read_at(t, &h, sizeof h) == sizeof h) {
		if (!valid_header(&h)) {
			if (!resync(t, t->offset))
				break;
			continue;
		}
		if (!fits(t, t->offset, &h))
			break; /* cut short: it supersedes nothing */
		if (h.flags & MT_CHUNK_STATUS) {
			/* Not a thread's: no time, nothing to supersede. */
			if (t->offset == t->data_start)
				read_status(t, &h);
			t->offset += sizeof h + h.payload_len;
			continue;
		}
		if (h.first_tsc < lo_tsc)
			lo_tsc = h.first_tsc, lo_ns = h.first_ns;
		if (h.first_tsc >= hi_tsc)
			hi_tsc = h.first_tsc, hi_ns = h.first_ns;
		provisional |= (h.flags & MT_CHUNK_PROVISIONAL) != 0;
		if (t->nchunks == cap) {
			cap = cap ? 2 * cap : 256;
			struct chunk_key *more = realloc(t->chunks, cap * sizeof *more);
			if (!more)
				break; /* then every provisional chunk is read */
			t->chunks = more;
		}
		t->chunks[t->nchunks++] = (struct chunk_key){h.tid, h.seq, t->offset};
		t->offset += sizeof h + h.payload_len;
	}
	if (provisional) {
		qsort(t->chunks, t->nchunks, sizeof *t->chunks, by_key);
	} else {
		free(t->chunks);
		t->chunks = NULL;
		t->nchunks = 0;
	}
	t->tsc0 = lo_tsc == UINT64_MAX ? 0 : lo_tsc;
	t->ns0 = lo_ns;
	t->ns_per_tick = hi_tsc > lo_tsc && hi_ns > lo_ns
				 ? (double)(hi_ns - lo_ns) / (double)(hi_tsc - lo_tsc)
				 : 1.0;
	t->offset = t->data_start;
}

/* buf holds at least n bytes. */
static bool room(unsigned char **buf, size_t *cap, size_t n)
{
	if (n <= *cap)
		return true;
	unsigned char *more = realloc(*buf, n);
	if (!more)
		return false;
	*buf = more;
	*cap = n;
	return true;
}

static const struct mt_source_ops native_ops;
static void native_close(struct mt_trace *base);

static struct native *finish_open(struct native *t, char *err, size_t errlen)
{
	t->base.ops = &native_ops;
	struct stat st;
	if (t->f)
		t->size = fstat(fileno(t->f), &st) == 0 ? (uint64_t)st.st_size : 0;
	else
		t->size = t->mem_len;
	if (!read_header(t, err, errlen)) {
		native_close(&t->base);
		return NULL;
	}
	scan_headers(t);
	return t;
}

/* A native trace file; pid: the process it must be of (0: any). */
struct mt_trace *mt_native_open(const char *path, long pid, char *err,
				       size_t errlen)
{
	struct native *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	if (!(t->f = fopen(path, "rbe"))) {
		mt_read_fail(err, errlen, "cannot open: %s", strerror(errno));
		free(t);
		return NULL;
	}
	t = finish_open(t, err, errlen);
	long has = t ? (long)json_integer_value(json_object_get(t->metadata, "pid")) : 0;
	if (t && pid && has != pid) {
		mt_read_fail(err, errlen,
			     "this is the trace of process %ld, not %ld (--pid chooses a "
			     "process in an LTTng trace directory)",
			     has, pid);
		native_close(&t->base);
		return NULL;
	}
	return t ? &t->base : NULL;
}

struct mt_trace *mt_native_from_memory(const void *data, size_t len,
					      char *err, size_t errlen)
{
	struct native *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->mem = data;
	t->mem_len = len;
	t = finish_open(t, err, errlen);
	return t ? &t->base : NULL;
}

static void native_close(struct mt_trace *base)
{
	struct native *t = (struct native *)base;
	if (!base)
		return;
	if (t->f)
		fclose(t->f);
	json_decref(t->metadata);
	free(t->chunks);
	free(t->payload);
	free(t->raw);
	free(t);
}

static json_t *native_metadata(struct mt_trace *base)
{
	struct native *t = (struct native *)base;
	return t->metadata;
}

static uint64_t native_skipped(const struct mt_trace *base)
{
	const struct native *t = (const struct native *)base;
	return t->skipped;
}

static uint64_t native_start_ns(const struct mt_trace *base)
{
	const struct native *t = (const struct native *)base;
	return t->ns0;
}

static bool native_status(const struct mt_trace *base, struct mt_trace_status *out,
			  bool *damaged)
{
	const struct native *t = (const struct native *)base;
	*damaged = t->status_damaged;
	if (t->has_status)
		*out = t->status;
	return t->has_status;
}

static uint64_t native_truncated(const struct mt_trace *base)
{
	const struct native *t = (const struct native *)base;
	return t->truncated_at;
}

static uint64_t native_unwritten(const struct mt_trace *base, uint64_t *first)
{
	const struct native *t = (const struct native *)base;
	*first = t->unwritten_at;
	return t->unwritten;
}


/* How many varint fields follow the dt of each tag: its wire count, or
 * MT_WIRE_* (trace_events.h). */
static int fixed_fields(int tag)
{
	return mt_event_kinds[tag].wire;
}

/* Which fields are addresses (zigzag deltas from the previous one). */
static bool is_address(int tag, int i)
{
	return (tag == MT_EV_ALLOC && i == 2) || (tag == MT_EV_MALLOC && i == 1) ||
	       (tag == MT_EV_FREE && i == 0) ||
	       (tag == MT_EV_REALLOC && (i == 2 || i == 5)) ||
	       (tag == MT_EV_USABLE_SIZE && i == 0);
}

/* A damaged file can claim any time: clamp rather than overflow. */
static uint64_t ticks_to_ns(const struct native *t, uint64_t tsc)
{
	double ns = (double)(tsc - t->tsc0) * t->ns_per_tick;
	if (!(ns > 0))
		return 0;
	return ns >= 1.8e19 ? UINT64_MAX : (uint64_t)ns;
}

/* Fields stored compactly, given back whole: an allocation's entry and
 * alignment apart (malloc's implied), usable sizes absolute. */
static void normalise(struct mt_event *e)
{
	if (e->tag == MT_EV_MALLOC && e->nv == 3) {
		e->tag = MT_EV_ALLOC;
		e->v[4] = e->v[0] + (uint64_t)mt_unzigzag(e->v[2]);
		e->v[3] = e->v[1];
		e->v[2] = e->v[0];
		e->v[1] = 0;
		e->v[0] = MT_CALL_MALLOC;
		e->nv = 5;
	} else if (e->tag == MT_EV_ALLOC && e->nv == 4) {
		uint64_t packed = e->v[0], log = packed >> 5;
		e->v[4] = e->v[1] + (uint64_t)mt_unzigzag(e->v[3]);
		e->v[3] = e->v[2];
		e->v[2] = e->v[1];
		e->v[1] = log && log <= 64 ? 1ull << (log - 1) : 0;
		e->v[0] = packed & 31;
		e->nv = 5;
	} else if (e->tag == MT_EV_REALLOC && e->nv == 7) {
		e->v[6] = e->v[4] + (uint64_t)mt_unzigzag(e->v[6]);
	}
}

/* Decode one chunk's events; false (with err) on malformed content. */
static bool decode(struct native *t, const struct mt_chunk_header *h,
		   const unsigned char *p, const unsigned char *end,
		   bool (*fn)(const struct mt_event *, void *), void *arg,
		   bool *stop, char *err, size_t errlen, uint64_t at)
{
	uint64_t tsc = h->first_tsc;
	uintptr_t last_addr = 0;
	uint32_t n = 0;
	uint64_t counters[MT_COUNTERS_VALUES] = {0}; /* the chunk's last */
	uint64_t sample_ns = h->first_ns;	     /* its last kernel sample */

	while (p < end) {
		/* Not zeroed whole: v[] is large and only nv of it is read. */
		struct mt_event e;
		unsigned byte = *p++, inline_dt = byte >> MT_TAG_BITS;
		e.tag = (int)(byte & ((1u << MT_TAG_BITS) - 1));
		if (!e.tag && t->minor >= 19 && p < end && *p >= MT_TAG_EXTENDED)
			e.tag = *p++;
		e.tid = h->tid;
		e.nv = 0;
		e.text = NULL;
		e.text_len = 0;
		uint64_t dt = inline_dt - 1;
		if (e.tag <= 0 || e.tag >= MT_EV_COUNT ||
		    (!inline_dt && !mt_get_varint(&p, end, &dt)))
			return mt_read_fail(err, errlen,
					    "offset %llu: chunk of thread %u, event %u: "
					    "a known event tag expected, found %d",
					    (unsigned long long)at, h->tid, n, e.tag);
		tsc += dt << MT_TSC_SHIFT;
		e.ns = ticks_to_ns(t, tsc);
		int count = fixed_fields(e.tag);
		if (e.tag == MT_EV_RSS && t->minor < 12)
			/* no time_ms, freed_bytes (added below) before 1.10,
			 * no large_live_bytes before 1.12 */
			count = t->minor < 10 ? 5 : 7;
		bool has_text = count == MT_WIRE_TEXT;
		if (has_text) {
			count = (int)mt_event_kinds[e.tag].fields;
		} else if (count == MT_WIRE_ARRAY) {
			uint64_t c;
			if (!mt_get_varint(&p, end, &c) ||
			    c > sizeof e.v / sizeof *e.v)
				goto truncated;
			count = (int)c;
		} else if (count == MT_WIRE_SAMPLE) {
			/* tid, time; a fault's addr and ip, or a call's
			 * which, then its arguments or its result */
			for (; e.nv < 2; e.nv++)
				if (!mt_get_varint(&p, end, &e.v[e.nv]))
					goto truncated;
			count = 2;
			if (e.tag == MT_EV_KCALL) {
				if (!mt_get_varint(&p, end, &e.v[e.nv++]))
					goto truncated;
				count = (e.v[2] >> 4) & 1 ? 1 : 3;
			}
		}
		for (int i = 0; i < count; i++) {
			if (!mt_get_varint(&p, end, &e.v[e.nv]))
				goto truncated;
			if (is_address(e.tag, i)) {
				last_addr += (uintptr_t)mt_unzigzag(e.v[e.nv]);
				e.v[e.nv] = last_addr;
			} else if (e.tag == MT_EV_COUNTERS && i < MT_COUNTERS_VALUES) {
				counters[i] += (uint64_t)mt_unzigzag(e.v[e.nv]);
				e.v[e.nv] = counters[i];
			}
			e.nv++;
		}
		normalise(&e);
		if (e.tag == MT_EV_RSS && e.nv == 5) { /* 1.9 */
			e.v[e.nv++] = e.ns / 1000000;
			e.v[e.nv++] = 0;
		}
		if ((e.tag == MT_EV_FAULT || e.tag == MT_EV_KCALL) && e.nv >= 3) {
			/* A kernel sample: tid and time made absolute, and
			 * given back in the order tid, which/addr..., time */
			uint64_t tid = (uint64_t)((int64_t)h->tid + mt_unzigzag(e.v[0]));
			sample_ns += (uint64_t)mt_unzigzag(e.v[1]);
			uint64_t rest[8];
			int n = e.nv - 2 < 8 ? e.nv - 2 : 8;
			memcpy(rest, e.v + 2, (size_t)n * sizeof *rest);
			e.v[0] = tid;
			if (e.tag == MT_EV_FAULT) { /* tid, addr, ip, time */
				e.v[1] = rest[0];
				e.v[2] = rest[1];
				e.v[3] = sample_ns;
				e.nv = 4;
			} else { /* tid, which, time, args or result */
				e.v[1] = rest[0];
				e.v[2] = sample_ns;
				memcpy(e.v + 3, rest + 1, (size_t)(n - 1) * sizeof *rest);
				e.nv = n + 2;
			}
		}
		if (has_text) { /* a length, then text */
			uint64_t len;
			if (!mt_get_varint(&p, end, &len) || len > (uint64_t)(end - p))
				goto truncated;
			e.text = (const char *)p;
			e.text_len = (size_t)len;
			p += len;
		}
		n++;
		if (!fn(&e, arg)) {
			*stop = true;
			return true;
		}
	}
	if (n != h->events)
		return mt_read_fail(err, errlen,
				    "offset %llu: chunk of thread %u: %u events expected, "
				    "%u found",
				    (unsigned long long)at, h->tid, h->events, n);
	return true;
truncated:
	return mt_read_fail(err, errlen,
			    "offset %llu: chunk of thread %u, event %u: its fields run "
			    "past the chunk's end",
			    (unsigned long long)at, h->tid, n);
}

static bool zeros(const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return n > 0;
}

/* Bytes of zeros from `at` on (to the next written byte, or the end). */
static uint64_t zero_run(struct native *t, uint64_t at)
{
	unsigned char buf[4096];
	uint64_t len = 0;
	for (;;) {
		t->offset = at + len;
		size_t n = read_at(t, buf, sizeof buf), i = 0;
		while (i < n && !buf[i])
			i++;
		len += i;
		if (i < n || n < sizeof buf)
			return len;
	}
}

/* Is the chunk at `at` whole and intact? */
static bool intact(struct native *t, uint64_t at)
{
	struct mt_chunk_header h;
	t->offset = at;
	if (read_at(t, &h, sizeof h) != sizeof h || !valid_header(&h) ||
	    !fits(t, at, &h) || !room(&t->payload, &t->payload_cap, h.payload_len))
		return false;
	t->offset = at + sizeof h;
	return read_at(t, t->payload, h.payload_len) == h.payload_len &&
	       mt_chunk_hash(&h, t->payload) == h.hash;
}

/* Is there a whole, intact chunk after `at`? */
static bool chunk_follows(struct native *t, uint64_t at)
{
	while (resync(t, at)) {
		at = t->offset;
		if (intact(t, at))
			return true;
	}
	return false;
}

/* One chunk at t->offset: read, check, decompress, decode. */
static bool next_chunk(struct native *t, bool (*fn)(const struct mt_event *, void *),
		       void *arg, bool *stop, bool *at_end, char *err, size_t errlen)
{
	struct mt_chunk_header h;
	uint64_t at = t->offset;
	size_t n = read_at(t, &h, sizeof h);

	if (n == 0) {
		*at_end = true;
		return true;
	}
	if (zeros(&h, n)) {
		/* A place reserved in the file and never written: its
		 * thread was stopped between the two (docs/trace-format.md). */
		uint64_t len = zero_run(t, at);
		if (!t->unwritten)
			t->unwritten_at = at;
		t->unwritten += len;
		t->offset = at + len;
		return true;
	}
	if (n < sizeof h) {
		if (!memcmp(&h, "MTCK", n < 4 ? n : 4)) {
			t->truncated_at = at;
			*at_end = true;
			return true;
		}
		return mt_read_fail(err, errlen,
				    "offset %llu: a chunk header of %zu bytes expected, the "
				    "file ends after %zu",
				    (unsigned long long)at, sizeof h, n);
	}
	if (!valid_header(&h))
		return mt_read_fail(err, errlen,
				    "offset %llu: a chunk header expected (magic \"MTCK\", "
				    "sizes within bounds), found damage",
				    (unsigned long long)at);
	if (!fits(t, at, &h)) {
		/* The end of what was written, unless whole chunks follow:
		 * then this header's size is damage. */
		if (chunk_follows(t, at))
			return mt_read_fail(err, errlen,
					    "offset %llu: a chunk of %u bytes runs past the "
					    "end of the file, and chunks follow it: its "
					    "header is damaged",
					    (unsigned long long)at, h.payload_len);
		t->truncated_at = at;
		*at_end = true;
		return true;
	}
	if (h.flags & MT_CHUNK_STATUS) {
		/* Read when the file was opened; elsewhere it is misplaced. */
		if (at != t->data_start)
			return mt_read_fail(err, errlen,
					    "offset %llu: a status record, expected only "
					    "right after the metadata (offset %llu)",
					    (unsigned long long)at,
					    (unsigned long long)t->data_start);
		t->offset += sizeof h + h.payload_len;
		return true;
	}
	if ((h.flags & MT_CHUNK_PROVISIONAL) && superseded(t, &h, at)) {
		t->offset += sizeof h + h.payload_len;
		return true;
	}
	if (!room(&t->payload, &t->payload_cap, h.payload_len) ||
	    !room(&t->raw, &t->raw_cap, h.raw_len))
		return mt_read_fail(err, errlen, "out of memory");
	t->offset += sizeof h;
	n = read_at(t, t->payload, h.payload_len);
	if (n < h.payload_len)
		return mt_read_fail(err, errlen,
				    "offset %llu: %u bytes of chunk payload expected, the "
				    "file ends after %zu (it changed while read?)",
				    (unsigned long long)t->offset, h.payload_len, n);
	if (mt_chunk_hash(&h, t->payload) != h.hash)
		return mt_read_fail(err, errlen,
				    "offset %llu: the chunk's checksum does not match its "
				    "header and %u bytes",
				    (unsigned long long)at, h.payload_len);
	t->offset += h.payload_len;
	const unsigned char *events = t->payload;
	if (h.flags & MT_CHUNK_ZSTD) {
#ifdef MT_HAVE_ZSTD
		size_t r = ZSTD_decompress(t->raw, h.raw_len, t->payload, h.payload_len);
		if (ZSTD_isError(r) || r != h.raw_len)
			return mt_read_fail(err, errlen,
					    "offset %llu: a zstd chunk of %u bytes expected, "
					    "it does not decompress",
					    (unsigned long long)at, h.raw_len);
		events = t->raw;
#else
		return mt_read_fail(err, errlen, "offset %llu: a zstd-compressed chunk, and "
				    "this memtrace was built without zstd",
				    (unsigned long long)at);
#endif
	}
	return decode(t, &h, events, events + h.raw_len, fn, arg, stop, err,
		      errlen, at);
}

/* After damage at `from`: the next offset holding a valid chunk header. */
static bool resync(struct native *t, uint64_t from)
{
	unsigned char buf[4096];
	for (uint64_t at = from + 1;; at += sizeof buf - sizeof(struct mt_chunk_header)) {
		t->offset = at;
		size_t n = read_at(t, buf, sizeof buf);
		if (n < sizeof(struct mt_chunk_header))
			return false;
		for (size_t i = 0; i + sizeof(struct mt_chunk_header) <= n; i++) {
			struct mt_chunk_header h;
			memcpy(&h, buf + i, sizeof h);
			if (valid_header(&h)) {
				t->offset = at + i;
				return true;
			}
		}
	}
}

static bool native_each(struct mt_trace *base, bool salvage,
		   bool (*fn)(const struct mt_event *, void *), void *arg,
		   char *err, size_t errlen)
{
	struct native *t = (struct native *)base;
	t->offset = t->data_start;
	t->skipped = t->truncated_at = t->unwritten = t->unwritten_at = 0;
	for (;;) {
		bool stop = false, at_end = false;
		uint64_t at = t->offset;
		if (next_chunk(t, fn, arg, &stop, &at_end, err, errlen)) {
			if (stop || at_end)
				return true;
			continue;
		}
		if (!salvage) {
			/* (what every reader of a trace can do about it) */
			size_t n = strlen(err);
			snprintf(err + n, errlen - n, " (damaged: --salvage skips "
						      "it and reads the rest)");
			return false;
		}
		t->skipped++;
		if (!resync(t, at))
			return true;
	}
}

static const struct mt_source_ops native_ops = {
	.skipped_one = "damaged chunk",
	.skipped_what = "damaged chunks",
	.close = native_close,
	.metadata = native_metadata,
	.each = native_each,
	.start_ns = native_start_ns,
	.skipped = native_skipped,
	.status = native_status,
	.truncated = native_truncated,
	.unwritten = native_unwritten,
};
