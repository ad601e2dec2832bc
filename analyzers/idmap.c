#include <stdlib.h>

#include "idmap.h"

/* Ids are often consecutive (thread ids, region ids): mixed, so they do
 * not fill one run of slots. */
static size_t slot_of(uint64_t id, size_t cap)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdull;
	id ^= id >> 33;
	return (size_t)id & (cap - 1);
}

void *mt_idmap_get(const struct mt_idmap *m, uint64_t id)
{
	if (!m->cap)
		return NULL;
	for (size_t i = slot_of(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->slots[i].value)
			return NULL;
		if (m->slots[i].id == id)
			return m->slots[i].value;
	}
}

static void insert(struct mt_idmap_slot *slots, size_t cap, uint64_t id, void *value)
{
	size_t i = slot_of(id, cap);
	while (slots[i].value && slots[i].id != id)
		i = (i + 1) & (cap - 1);
	slots[i] = (struct mt_idmap_slot){id, value};
}

static bool grow(struct mt_idmap *m)
{
	size_t cap = m->cap ? 2 * m->cap : 64;
	struct mt_idmap_slot *slots = calloc(cap, sizeof *slots);
	if (!slots)
		return false;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].value)
			insert(slots, cap, m->slots[i].id, m->slots[i].value);
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return true;
}

bool mt_idmap_put(struct mt_idmap *m, uint64_t id, void *value)
{
	if (!mt_idmap_get(m, id)) {
		if (2 * (m->len + 1) > m->cap && !grow(m))
			return false;
		m->len++;
	}
	insert(m->slots, m->cap, id, value);
	return true;
}

/* Linear probing without tombstones: the entries after the removed one
 * that would no longer be reached move back into the gap. */
void mt_idmap_del(struct mt_idmap *m, uint64_t id)
{
	size_t mask = m->cap - 1, i;
	if (!m->cap)
		return;
	for (i = slot_of(id, m->cap); m->slots[i].id != id || !m->slots[i].value;
	     i = (i + 1) & mask)
		if (!m->slots[i].value)
			return;
	m->slots[i].value = NULL;
	m->len--;
	for (size_t j = (i + 1) & mask; m->slots[j].value; j = (j + 1) & mask) {
		size_t home = slot_of(m->slots[j].id, m->cap);
		/* j's entry stays if its home lies cyclically in (i, j]. */
		bool stays = i <= j ? i < home && home <= j : i < home || home <= j;
		if (!stays) {
			m->slots[i] = m->slots[j];
			m->slots[j].value = NULL;
			i = j;
		}
	}
}

void mt_idmap_free(struct mt_idmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->len = 0;
}
