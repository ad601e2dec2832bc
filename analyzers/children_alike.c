/* Child processes' findings alike, said once (children_alike.h). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "children_alike.h"

/* What a finding says, to tell the same finding in other processes
 * from the rest: its rule and the stack of its first site, callers and
 * all.  NULL when there is no room. */
static char *finding_key(const struct mt_finding *x)
{
	json_t *site = json_array_get(x->sites, 0);
	char *stack = site ? json_dumps(json_object_get(site, "stack"),
					JSON_COMPACT | JSON_SORT_KEYS)
			   : NULL;
	char *key = NULL;
	if (asprintf(&key, "%s@%s", x->id, stack ? stack : "") < 0)
		key = NULL;
	free(stack);
	return key;
}

/* The share of the run a finding found (its time, as the rules put it),
 * or a negative value. */
static double share_of(const struct mt_finding *x)
{
	json_t *v = json_object_get(x->evidence, "share_of_run");
	if (!v)
		v = json_object_get(x->evidence, "share_of_time");
	return v ? json_number_value(v) : -1;
}

/* An item added to a list of a few, or where it is full, "..." once. */
static void list_add(char *list, size_t size, const char *item)
{
	size_t used = strlen(list);
	if (used + strlen(item) + 8 < size)
		snprintf(list + used, size - used, "%s%s", used ? ", " : "", item);
	else if (used < 4 || strcmp(list + used - 3, "..."))
		snprintf(list + used, size - used, ", ...");
}

static void group_add(struct mt_child_group *g, const struct mt_finding *x,
		      long long pid)
{
	char item[32];
	snprintf(item, sizeof item, "%lld", pid);
	list_add(g->pids, sizeof g->pids, item);
	double share = share_of(x);
	if (share >= 0) {
		snprintf(item, sizeof item, "%.0f%%", share * 100);
		list_add(g->shares, sizeof g->shares, item);
	}
	g->system_s_explained += json_number_value(
		json_object_get(x->evidence, "system_s_explained"));
	g->others++;
}

/* A finding of several processes says so. */
static bool group_said(const struct mt_child_group *g, struct mt_finding *x)
{
	char *process = NULL;
	if (asprintf(&process, "%s and %u more alike", x->process, g->others) < 0)
		return false;
	free(x->process);
	x->process = process;
	/* (what the command's whole tree is weighed by: allocator-time
	 * took one worker's churn for both workers'; new-user trial 36) */
	if (g->system_s_explained > 0)
		json_object_set_new(x->evidence, "system_s_explained_alike",
				    json_real(g->system_s_explained));
	mt_finding_append(x, " %u more process%s the command started (%s) "
			     "had this finding too, at the same code, "
			     "with figures of %s own",
			  g->others, g->others > 1 ? "es" : "", g->pids,
			  g->others > 1 ? "their" : "its");
	if (g->shares[0])
		mt_finding_append(x, " (the part of %s run it took: %s)",
				  g->others > 1 ? "their" : "its", g->shares);
	mt_finding_append(x, ".");
	return true;
}

bool mt_children_alike_add(struct mt_children_alike *c, struct mt_finding *x,
			   long long pid, struct findings *out)
{
	char *key = finding_key(x);
	struct mt_child_group *alike = NULL;
	for (size_t g = 0; key && g < c->kinds && !alike; g++)
		if (!strcmp(c->groups[g].key, key))
			alike = &c->groups[g];
	bool ok = true;
	if (alike) {
		group_add(alike, x, pid);
	} else if (c->kinds == MT_CHILD_KINDS) {
		c->unsaid++;
	} else if (key && (ok = mt_findings_keep(out, x))) {
		c->groups[c->kinds++] = (struct mt_child_group){.key = key,
								.at = out->n - 1};
		return true;
	}
	mt_finding_free(x);
	free(key);
	return ok;
}

bool mt_children_alike_said(struct mt_children_alike *c, struct findings *out)
{
	bool ok = true;
	for (size_t g = 0; g < c->kinds; g++) {
		if (ok && out && c->groups[g].others)
			ok = group_said(&c->groups[g], out->at[c->groups[g].at]);
		free(c->groups[g].key);
	}
	if (c->unsaid)
		fprintf(stderr, "memtrace: explain: %zu more findings of child "
				"processes are not said (the first %d kinds are)\n",
			c->unsaid, MT_CHILD_KINDS);
	return ok;
}
