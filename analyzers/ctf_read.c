/* LTTng traces of the memtrace provider (shim/lttng/memtrace_tp.h), read
 * with libbabeltrace2: one src.ctf.fs per CTF trace found under the
 * directory, merged in time order by flt.utils.muxer, pulled by a simple
 * sink.  Each memtrace:* event becomes the native event it mirrors
 * (docs/trace-format.md, "LTTng"), with LTTng's vtid as its thread. */
#define _GNU_SOURCE
#include <babeltrace2/babeltrace.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctf_read.h"
#include "idmap.h"

#define PREFIX "memtrace:"
/* Other processes named in the note (all are counted). */
enum { SHOWN_OTHERS = 32, TAG_METADATA = -1, TAG_BY_NAME = -2 };

/* What an event class decodes to, found once per class. */
struct class_map {
	const bt_event_class *cls;
	int tag;   /* 0: not a memtrace event */
	int entry; /* the malloc-API or libc entry point, for calls */
};

struct mt_ctf {
	struct mt_trace base; /* first: the source (source.h) */
	char *dir;
	long want_pid;
	unsigned want_image;
	/* The process read: its pid, metadata, first clock value (ns). */
	long pid;
	unsigned later_images; /* its images after exec, not read */
	json_t *metadata;
	uint64_t start_ns;
	uint64_t skipped;
	struct mt_idmap others; /* pid -> its place in the order seen, + 1 */
	long shown[SHOWN_OTHERS];
	unsigned nothers;	/* how many other processes */
	char note[512];
};

/* One pass over the trace. */
struct pass {
	struct mt_ctf *c;
	bool opening; /* find the process and stop */
	bool salvage;
	bool (*fn)(const struct mt_event *, void *);
	void *arg;
	bool selected, ended, stop, failed;
	unsigned earlier_images; /* of the wanted process, passed */
	struct mt_idmap classes; /* event class -> struct class_map */
	uint64_t memtrace_events;
	char *err;
	size_t errlen;
};

/* libbabeltrace2's own explanation of a failure, most specific last. */
static void take_bt_error(char *err, size_t errlen, const char *what)
{
	const bt_error *e = bt_current_thread_take_error();
	const char *why = NULL;
	if (e && bt_error_get_cause_count(e))
		why = bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0));
	snprintf(err, errlen, "%s%s%s", what, why ? ": " : "", why ? why : "");
	if (e)
		bt_error_release(e);
}

/* NULL when out of memory. */
static struct class_map *class_of(struct pass *p, const bt_event_class *cls)
{
	struct class_map *m = mt_idmap_get(&p->classes, (uintptr_t)cls);
	if (m)
		return m;
	if (!(m = calloc(1, sizeof *m)) ||
	    !mt_idmap_put(&p->classes, (uintptr_t)cls, m)) {
		free(m);
		return NULL;
	}
	const char *name = bt_event_class_get_name(cls);
	m->cls = cls;
	m->tag = 0;
	if (!name || strncmp(name, PREFIX, strlen(PREFIX)) != 0)
		return m;
	name += strlen(PREFIX);
	for (int i = 0; i < MT_CALL_COUNT; i++)
		if (strcmp(name, mt_call_names[i]) == 0) {
			m->entry = i;
			m->tag = i == MT_CALL_FREE		 ? MT_EV_FREE
				 : i == MT_CALL_MALLOC_USABLE_SIZE ? MT_EV_USABLE_SIZE
				 : i == MT_CALL_REALLOC ||
						 i == MT_CALL_REALLOCARRAY
					 ? MT_EV_REALLOC
				 : i >= MT_CALL_MMAP ? MT_EV_SYSCALL
						     : MT_EV_ALLOC;
			return m;
		}
	static const struct {
		const char *name;
		int tag;
	} others[] = {
		{"sys", MT_EV_SYS_COUNT},	    {"heap_move", MT_EV_HEAP_MOVE},
		{"chunk_map", MT_EV_CHUNK_MAP},	    {"page_fault", MT_EV_FAULT},
		{"kernel_call", MT_EV_KCALL},	    {"samples_lost", MT_EV_SAMPLES_LOST},
		{"region_name", MT_EV_REGION_NAME}, {"region_begin", MT_EV_REGION_BEGIN},
		{"region_end", MT_EV_REGION_END},   {"counters", MT_EV_COUNTERS},
		{"baseline", MT_EV_BASELINE},	    {"exit", MT_EV_EXIT},
		{"metadata", TAG_METADATA},	    {"event", TAG_BY_NAME},
	};
	for (size_t i = 0; i < sizeof others / sizeof *others; i++)
		if (strcmp(name, others[i].name) == 0)
			m->tag = others[i].tag;
	return m;
}

static const bt_field *member(const bt_field *s, const char *name)
{
	return s ? bt_field_structure_borrow_member_field_by_name_const(s, name)
		 : NULL;
}

/* An integer field as the native trace stores it: unsigned as is, signed
 * as its two's complement. */
static uint64_t integer(const bt_field *f)
{
	if (!f)
		return 0;
	bt_field_class_type type = bt_field_get_class_type(f);
	if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		return (uint64_t)bt_field_integer_signed_get_value(f);
	if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		return bt_field_integer_unsigned_get_value(f);
	return 0;
}

static uint64_t field(const bt_field *payload, const char *name)
{
	return integer(member(payload, name));
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* Integers of an array or sequence field into v[at...]; how many. */
static int integers(const bt_field *f, uint64_t *v, int room)
{
	if (!f || !bt_field_class_type_is(bt_field_get_class_type(f),
					  BT_FIELD_CLASS_TYPE_ARRAY))
		return 0;
	uint64_t n = bt_field_array_get_length(f);
	int k = 0;
	for (; k < room && (uint64_t)k < n; k++)
		v[k] = integer(bt_field_array_borrow_element_field_by_index_const(
			f, (uint64_t)k));
	return k;
}

/* A text field (LTTng's sequence_text arrives as a string). */
static void text(const bt_field *f, struct mt_event *e)
{
	if (f && bt_field_get_class_type(f) == BT_FIELD_CLASS_TYPE_STRING) {
		e->text = bt_field_string_get_value(f);
		e->text_len = (size_t)bt_field_string_get_length(f);
	}
}

/* A field of the native event by its name in trace_events.h, which the
 * provider's field of the same name carries; the entry point is the
 * event's name, and results are stored as the native trace stores them. */
static uint64_t named_field(const struct class_map *m, const bt_field *pl,
			    const char *name)
{
	if (!strcmp(name, "entry"))
		return (uint64_t)m->entry;
	if (!strcmp(name, "result"))
		return zigzag((int64_t)field(pl, name));
	if (!strcmp(name, "advice"))
		return (uint32_t)field(pl, name);
	return field(pl, name);
}

/* The native event's fields, in its order and encoding (event.h). */
static void decode(const struct class_map *m, const bt_field *pl,
		   struct mt_event *e)
{
	uint64_t *v = e->v;
	int n = 0;

	switch (m->tag) {
	case MT_EV_REALLOC:
		if (!field(pl, "old_ptr")) { /* of NULL: natively an allocation */
			e->tag = MT_EV_ALLOC;
			e->alloc = (struct mt_ev_alloc){
				.entry = (uint64_t)m->entry,
				.size = field(pl, "size"),
				.ptr = field(pl, "ptr"),
				.usable = field(pl, "usable"),
			};
			n = 5;
			break;
		}
		goto by_name;
	case MT_EV_KCALL: {
		uint64_t arg[3] = {0};
		bool exit = field(pl, "exit");
		integers(member(pl, "arg"), arg, 3);
		v[n++] = field(pl, "tid");
		v[n++] = field(pl, "sys") | (uint64_t)exit << 4;
		v[n++] = field(pl, "time_ns");
		if (exit) {
			v[n++] = zigzag((int64_t)arg[0]);
		} else {
			for (int i = 0; i < 3; i++)
				v[n++] = arg[i];
		}
		break;
	}
	case MT_EV_REGION_NAME:
		v[n++] = field(pl, "id");
		text(member(pl, "name"), e);
		break;
	case MT_EV_COUNTERS:
	case MT_EV_BASELINE:
		n = integers(member(pl, "values"), v, (int)(sizeof e->v / sizeof *v));
		break;
	case MT_EV_EXIT:
		text(member(pl, "json"), e);
		break;
	case TAG_BY_NAME: /* memtrace:event: any other event of varints */
		e->tag = 0;
		const bt_field *name = member(pl, "name");
		for (int tag = 1; name && tag < MT_EV_COUNT; tag++)
			if (mt_event_kinds[tag].wire >= 0 &&
			    !strcmp(bt_field_string_get_value(name),
				    mt_event_kinds[tag].name))
				e->tag = tag;
		n = integers(member(pl, "values"), v,
			     (int)mt_event_kinds[e->tag].fields);
		break;
	default:
	by_name: {
		/* "entry, align, size, ...": each looked up in the payload */
		const char *names = mt_event_kinds[m->tag].field_names;
		while (names && *names) {
			char name[32];
			size_t len = strcspn(names, ",");
			snprintf(name, sizeof name, "%.*s", (int)len, names);
			v[n++] = named_field(m, pl, name);
			names += len;
			names += strspn(names, ", ");
		}
	}
	}
	e->nv = n;
}

/* A clock snapshot in ns (LTTng's clocks count ns; others are scaled). */
static uint64_t clock_ns(const bt_message *msg)
{
	const bt_clock_snapshot *cs =
		bt_message_event_borrow_default_clock_snapshot_const(msg);
	uint64_t value = bt_clock_snapshot_get_value(cs);
	uint64_t hz = bt_clock_class_get_frequency(
		bt_clock_snapshot_borrow_clock_class_const(cs));
	return hz == 1000000000u || !hz ? value
					: (uint64_t)((double)value * 1e9 / (double)hz);
}

/* Each other process once, however many images it has. */
static void note_other(struct mt_ctf *c, long pid)
{
	if (mt_idmap_get(&c->others, (uint64_t)pid) ||
	    !mt_idmap_put(&c->others, (uint64_t)pid, (void *)(uintptr_t)(c->nothers + 1)))
		return;
	if (c->nothers < SHOWN_OTHERS)
		c->shown[c->nothers] = pid;
	c->nothers++;
}

/* A process's metadata event: it starts an image (the process, or what it
 * became by exec).  The image read is the wanted one of the wanted process
 * (of the first process, by default). */
static bool on_metadata(struct pass *p, long vpid, uint32_t vtid, uint64_t ns,
			const bt_field *payload)
{
	struct mt_ctf *c = p->c;
	if (p->selected) {
		if (vpid != c->pid) {
			note_other(c, vpid);
		} else if (!p->ended) {
			/* The image read was replaced: LTTng has no exec event
			 * (docs/trace-format.md), the next image's start says
			 * as much. */
			struct mt_event e = {.tag = MT_EV_EXEC, .tid = vtid};
			p->ended = true;
			e.ns = ns > c->start_ns ? ns - c->start_ns : 0;
			e.text = "";
			c->later_images++;
			if (!p->opening && !p->stop && !p->fn(&e, p->arg))
				p->stop = true;
		} else {
			c->later_images++;
		}
		return true;
	}
	if (c->want_pid && vpid != c->want_pid) {
		note_other(c, vpid);
		return true;
	}
	if (p->earlier_images < c->want_image) {
		p->earlier_images++;
		return true;
	}
	p->selected = true;
	c->pid = vpid;
	c->start_ns = ns;
	if (p->opening) {
		struct mt_event e = {0};
		json_error_t jerr;
		text(member(payload, "json"), &e);
		c->metadata = e.text ? json_loadb(e.text, e.text_len, 0, &jerr) : NULL;
		if (!c->metadata)
			return mt_read_fail(p->err, p->errlen,
					    "the metadata event of process %ld is not JSON",
					    vpid);
		p->stop = true;
	}
	return true;
}

static bool on_event(struct pass *p, const bt_message *msg)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	const struct class_map *m = class_of(p, bt_event_borrow_class_const(ev));
	if (!m)
		return mt_read_fail(p->err, p->errlen, "out of memory");
	if (!m->tag)
		return true;
	p->memtrace_events++;
	const bt_field *ctx = bt_event_borrow_common_context_field_const(ev);
	const bt_field *vpid = member(ctx, "vpid"), *vtid = member(ctx, "vtid");
	if (!vpid || !vtid)
		return mt_read_fail(p->err, p->errlen,
				    "the memtrace events carry no vpid and vtid context: "
				    "record with `lttng add-context -u -t vpid -t vtid` "
				    "(memtrace run --lttng does)");
	const bt_field *payload = bt_event_borrow_payload_field_const(ev);
	long pid = (long)integer(vpid);
	uint64_t ns = clock_ns(msg);
	if (m->tag == TAG_METADATA)
		return on_metadata(p, pid, (uint32_t)integer(vtid), ns, payload);
	if (p->opening || !p->selected || p->ended || pid != p->c->pid)
		return true;
	/* Not zeroed whole: v[] is large and only nv of it is read. */
	struct mt_event e;
	e.tag = m->tag;
	e.tid = (uint32_t)integer(vtid);
	e.ns = ns > p->c->start_ns ? ns - p->c->start_ns : 0;
	e.text = NULL;
	e.text_len = 0;
	decode(m, payload, &e);
	if (e.tag <= 0) /* an event of a later memtrace */
		return true;
	if (e.tag == MT_EV_RSS && e.nv == 5) { /* before time_ms (1.10) */
		e.v[e.nv++] = e.ns / 1000000;
		e.v[e.nv++] = 0;
	}
	if (!p->fn(&e, p->arg))
		p->stop = true;
	return true;
}

static bool on_discarded(struct pass *p, const bt_message *msg)
{
	uint64_t n = 0;
	if (bt_message_discarded_events_get_count(msg, &n) !=
		    BT_PROPERTY_AVAILABILITY_AVAILABLE ||
	    !n)
		return true;
	if (p->opening)
		return true;
	if (!p->salvage)
		return mt_read_fail(p->err, p->errlen,
				    "LTTng discarded %llu events (its ring buffers were "
				    "full), so the figures would be short: record with "
				    "larger buffers (lttng enable-channel -u "
				    "--subbuf-size=8M --num-subbuf=8), or pass --salvage "
				    "to read what was kept",
				    (unsigned long long)n);
	p->c->skipped += n;
	return true;
}

static bt_graph_simple_sink_component_consume_func_status
consume(bt_message_iterator *it, void *data)
{
	struct pass *p = data;
	bt_message_array_const msgs;
	uint64_t count;

	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (uint64_t i = 0; i < count; i++) {
		const bt_message *msg = msgs[i];
		if (!p->stop && !p->failed) {
			bt_message_type type = bt_message_get_type(msg);
			bool ok = true;
			if (type == BT_MESSAGE_TYPE_EVENT)
				ok = on_event(p, msg);
			else if (type == BT_MESSAGE_TYPE_DISCARDED_EVENTS)
				ok = on_discarded(p, msg);
			p->failed = !ok;
		}
		bt_message_put_ref(msg);
	}
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

/* The CTF traces under the directory: each holds a "metadata" file. */
static bt_value *found_traces;

static int visit(const char *path, const struct stat *st, int type,
		 struct FTW *ftw)
{
	(void)ftw;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (type == FTW_F && S_ISREG(st->st_mode) && strcmp(base, "metadata") == 0) {
		char *dir = strndup(path, (size_t)(base - path - (base > path)));
		if (!dir || bt_value_array_append_string_element(found_traces, dir) !=
				    BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK) {
			free(dir);
			return -1;
		}
		free(dir);
	}
	return 0;
}

static bt_value *find_traces(const char *dir, char *err, size_t errlen)
{
	found_traces = bt_value_array_create();
	if (!found_traces) {
		mt_read_fail(err, errlen, "out of memory");
		return NULL;
	}
	if (nftw(dir, visit, 16, FTW_PHYS) != 0) {
		mt_read_fail(err, errlen, "cannot read the directory: %s", strerror(errno));
		bt_value_put_ref(found_traces);
		return NULL;
	}
	if (bt_value_array_is_empty(found_traces)) {
		mt_read_fail(err, errlen,
			     "no CTF trace in this directory (none of its directories "
			     "holds a 'metadata' file): give the output directory of an "
			     "LTTng session, or a memtrace trace file");
		bt_value_put_ref(found_traces);
		return NULL;
	}
	return found_traces;
}

static const bt_plugin *plugin(const char *name, char *err, size_t errlen)
{
	const bt_plugin *p = NULL;
	if (bt_plugin_find(name, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &p) !=
	    BT_PLUGIN_FIND_STATUS_OK)
		mt_read_fail(err, errlen,
			     "babeltrace2's '%s' plugin is not installed (Debian: "
			     "libbabeltrace2-0)",
			     name);
	return p;
}

/* src.ctf.fs for each trace -> flt.utils.muxer -> the pass's sink. */
static bt_graph *build(struct pass *p, char *err, size_t errlen)
{
	const bt_plugin *ctf = plugin("ctf", err, errlen);
	const bt_plugin *utils = ctf ? plugin("utils", err, errlen) : NULL;
	bt_value *traces = utils ? find_traces(p->c->dir, err, errlen) : NULL;
	bt_graph *g = traces ? bt_graph_create(0) : NULL;
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;
	bool ok = g != NULL;

	ok = ok && bt_graph_add_filter_component(
			   g,
			   bt_plugin_borrow_filter_component_class_by_name_const(
				   utils, "muxer"),
			   "muxer", NULL, BT_LOGGING_LEVEL_NONE,
			   &mux) == BT_GRAPH_ADD_COMPONENT_STATUS_OK;
	for (uint64_t i = 0; ok && i < bt_value_array_get_length(traces); i++) {
		bt_value *params = bt_value_map_create(), *inputs = NULL;
		const bt_component_source *src = NULL;
		char name[32];
		snprintf(name, sizeof name, "ctf-%llu", (unsigned long long)i);
		ok = params &&
		     bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) ==
			     BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK &&
		     bt_value_array_append_string_element(
			     inputs, bt_value_string_get(
					     bt_value_array_borrow_element_by_index(
						     traces, i))) ==
			     BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK &&
		     bt_graph_add_source_component(
			     g,
			     bt_plugin_borrow_source_component_class_by_name_const(
				     ctf, "fs"),
			     name, params, BT_LOGGING_LEVEL_NONE,
			     &src) == BT_GRAPH_ADD_COMPONENT_STATUS_OK;
		bt_value_put_ref(params);
		for (uint64_t k = 0; ok && k < bt_component_source_get_output_port_count(src);
		     k++) {
			/* The muxer adds an input port each time one is
			 * connected: the last is free. */
			uint64_t free_port = bt_component_filter_get_input_port_count(mux) - 1;
			ok = bt_graph_connect_ports(
				     g,
				     bt_component_source_borrow_output_port_by_index_const(
					     src, k),
				     bt_component_filter_borrow_input_port_by_index_const(
					     mux, free_port),
				     NULL) == BT_GRAPH_CONNECT_PORTS_STATUS_OK;
		}
	}
	ok = ok && bt_graph_add_simple_sink_component(g, "memtrace", NULL, consume,
						      NULL, p, &sink) ==
			   BT_GRAPH_ADD_COMPONENT_STATUS_OK;
	ok = ok && bt_graph_connect_ports(
			   g, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
			   bt_component_sink_borrow_input_port_by_index_const(sink, 0),
			   NULL) == BT_GRAPH_CONNECT_PORTS_STATUS_OK;
	if (g && !ok) {
		take_bt_error(err, errlen, "cannot read it as CTF");
		bt_graph_put_ref(g);
		g = NULL;
	}
	bt_value_put_ref(traces);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	return g;
}

/* Pull messages until the end, a stop or a failure. */
static bool run(struct pass *p)
{
	bt_graph *g = build(p, p->err, p->errlen);
	if (!g)
		return false;
	/* Each event class is mapped once per pass. */
	bt_graph_run_once_status s = BT_GRAPH_RUN_ONCE_STATUS_OK;
	while (!p->stop && !p->failed &&
	       (s == BT_GRAPH_RUN_ONCE_STATUS_OK || s == BT_GRAPH_RUN_ONCE_STATUS_AGAIN))
		s = bt_graph_run_once(g);
	bool ok = !p->failed;
	if (ok && s != BT_GRAPH_RUN_ONCE_STATUS_OK &&
	    s != BT_GRAPH_RUN_ONCE_STATUS_END &&
	    s != BT_GRAPH_RUN_ONCE_STATUS_AGAIN) {
		take_bt_error(p->err, p->errlen, "the CTF trace is damaged");
		ok = false;
	}
	bt_graph_put_ref(g);
	for (size_t i = 0; i < p->classes.cap; i++)
		free(mt_idmap_at(&p->classes, i));
	mt_idmap_free(&p->classes);
	return ok;
}

static void list_others(const struct mt_ctf *c, char *out, size_t size)
{
	size_t len = 0;
	out[0] = '\0';
	for (unsigned i = 0; i < c->nothers && i < SHOWN_OTHERS && len < size; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%ld",
					i ? ", " : "", c->shown[i]);
	if (c->nothers > SHOWN_OTHERS && len < size)
		snprintf(out + len, size - len, " and %u more",
			 c->nothers - SHOWN_OTHERS);
}

static const struct mt_source_ops ctf_ops;
static void ctf_close(struct mt_trace *base);

struct mt_trace *mt_ctf_open(const char *dir, long pid, unsigned image,
			     char *err, size_t errlen)
{
	struct mt_ctf *c = calloc(1, sizeof *c);
	if (!c || !(c->dir = strdup(dir))) {
		free(c);
		mt_read_fail(err, errlen, "out of memory");
		return NULL;
	}
	c->base.ops = &ctf_ops;
	c->want_pid = pid;
	c->want_image = image;
	struct pass p = {.c = c, .opening = true, .err = err, .errlen = errlen};
	if (!run(&p))
		goto failed;
	if (p.selected)
		return &c->base;
	char others[256];
	list_others(c, others, sizeof others);
	if (pid && p.earlier_images == 1)
		mt_read_fail(err, errlen,
			     "process %ld has one image in this trace (no exec): --pid %ld",
			     pid, pid);
	else if (pid && p.earlier_images) {
		char last[48] = "";
		if (p.earlier_images > 2)
			snprintf(last, sizeof last, " to %ld.%u", pid,
				 p.earlier_images - 1);
		mt_read_fail(err, errlen,
			     "process %ld has %u images in this trace (each exec starts "
			     "one): --pid %ld, or %ld.1%s",
			     pid, p.earlier_images, pid, pid, last);
	}
	else if (pid && c->nothers)
		mt_read_fail(err, errlen,
			     "no process %ld in this trace; it holds %s: choose one "
			     "with --pid",
			     pid, others);
	else if (p.memtrace_events)
		mt_read_fail(err, errlen,
			     "memtrace events without memtrace:metadata: enable all of "
			     "them (lttng enable-event -u 'memtrace:*')");
	else
		mt_read_fail(err, errlen,
			     "no memtrace events in this trace: record with `memtrace "
			     "run --lttng`, or with MEMTRACE_LTTNG=1 and `lttng "
			     "enable-event -u 'memtrace:*'`");
failed:
	ctf_close(&c->base);
	return NULL;
}

static void ctf_close(struct mt_trace *base)
{
	struct mt_ctf *c = (struct mt_ctf *)base;
	json_decref(c->metadata);
	mt_idmap_free(&c->others);
	free(c->dir);
	free(c);
}

static json_t *ctf_metadata(struct mt_trace *base)
{
	return ((struct mt_ctf *)base)->metadata;
}

static uint64_t ctf_start_ns(const struct mt_trace *base)
{
	return ((const struct mt_ctf *)base)->start_ns;
}

static uint64_t ctf_skipped(const struct mt_trace *base)
{
	return ((const struct mt_ctf *)base)->skipped;
}

/* Events LTTng discarded (its buffers were full) stop it with an error
 * unless salvage; then they are counted as skipped. */
static bool ctf_each(struct mt_trace *base, bool salvage,
		     bool (*fn)(const struct mt_event *, void *), void *arg,
		     char *err, size_t errlen)
{
	struct mt_ctf *c = (struct mt_ctf *)base;
	struct pass p = {.c = c, .salvage = salvage, .fn = fn, .arg = arg,
			 .err = err, .errlen = errlen};
	c->skipped = 0;
	c->nothers = c->later_images = 0;
	mt_idmap_free(&c->others);
	return run(&p);
}

/* Which other processes and images the trace holds, or NULL. */
static const char *ctf_note(struct mt_trace *base)
{
	struct mt_ctf *c = (struct mt_ctf *)base;
	size_t len = 0, size = sizeof c->note;
	char others[256];

	c->note[0] = '\0';
	if (c->later_images)
		len += (size_t)snprintf(c->note, size,
					"process %ld exec'd: its next image is "
					"--pid %ld.%u%s",
					c->pid, c->pid, c->want_image + 1,
					c->nothers ? "; " : "");
	if (c->nothers && len < size) {
		list_others(c, others, sizeof others);
		snprintf(c->note + len, size - len,
			 "the trace also holds process%s %s: choose with --pid",
			 c->nothers > 1 ? "es" : "", others);
	}
	return c->note[0] ? c->note : NULL;
}

static const struct mt_source_ops ctf_ops = {
	.skipped_one = "event LTTng discarded",
	.skipped_what = "events LTTng discarded",
	.close = ctf_close,
	.metadata = ctf_metadata,
	.each = ctf_each,
	.start_ns = ctf_start_ns,
	.skipped = ctf_skipped,
	.note = ctf_note,
};
