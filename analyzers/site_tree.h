/* The tree of the call sites' stacks in a trace (format 1.14): each sites
 * event brings the nodes that are new, {"id", "parent", frame fields},
 * and its sites name the node of their innermost frame. */
#ifndef MEMTRACE_SITE_TREE_H
#define MEMTRACE_SITE_TREE_H

#include <jansson.h>
#include <stdbool.h>

/* One sites event's JSON: its nodes added to tree (an object, id -> node)
 * and its sites returned (a new reference); an earlier file's array of
 * sites returned as it is.  NULL if it is neither. */
json_t *mt_site_tree_take(json_t *tree, json_t *event);
/* sites with each "node" replaced by its "stack", innermost frame first,
 * in place; false if a node is missing (a damaged file: the stack ends
 * where the tree does). */
bool mt_site_tree_expand(json_t *tree, json_t *sites);

#endif
