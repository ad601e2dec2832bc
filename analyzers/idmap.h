/* A map from 64-bit ids (thread ids, region ids, pids, pointers) to
 * pointers: open addressing with linear probing, grown at half full, so a
 * lookup costs about one probe however many ids a trace holds. */
#ifndef MEMTRACE_IDMAP_H
#define MEMTRACE_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_idmap {
	struct mt_idmap_slot *slots; /* cap of them, NULL until the first put */
	size_t cap, len;
};

struct mt_idmap_slot {
	uint64_t id;
	void *value; /* NULL: the slot is free */
};

/* The value of id, or NULL. */
void *mt_idmap_get(const struct mt_idmap *m, uint64_t id);
/* Set id's value (not NULL); false when out of memory. */
bool mt_idmap_put(struct mt_idmap *m, uint64_t id, void *value);
/* Remove id; its value is the caller's to free. */
void mt_idmap_del(struct mt_idmap *m, uint64_t id);
/* Every value, in no particular order: for (i = 0; ...) with
 * mt_idmap_at(m, i) NULL for free slots. */
static inline void *mt_idmap_at(const struct mt_idmap *m, size_t i)
{
	return m->slots[i].value;
}
/* Frees the table, not the values. */
void mt_idmap_free(struct mt_idmap *m);

#endif
