#include <stdio.h>

#include "site_tree.h"

json_t *mt_site_tree_take(json_t *tree, json_t *event)
{
	if (json_is_array(event))
		return json_incref(event);
	json_t *sites = json_object_get(event, "sites");
	if (!json_is_array(sites))
		return NULL;
	size_t i;
	json_t *node;
	json_array_foreach(json_object_get(event, "nodes"), i, node) {
		char id[24];
		json_int_t n = json_integer_value(json_object_get(node, "id"));
		snprintf(id, sizeof id, "%lld", (long long)n);
		json_object_set(tree, id, node);
	}
	return json_incref(sites);
}

/* A node's frame: the node without its place in the tree. */
static json_t *frame_of(json_t *node)
{
	json_t *f = json_copy(node);
	json_object_del(f, "id");
	json_object_del(f, "parent");
	return f;
}

bool mt_site_tree_expand(json_t *tree, json_t *sites)
{
	bool whole = true;
	size_t i;
	json_t *site;
	json_array_foreach(sites, i, site) {
		json_t *leaf = json_object_get(site, "node");
		if (!leaf)
			continue;
		json_t *stack = json_array();
		json_int_t id = json_integer_value(leaf);
		/* (a tree has fewer nodes than the file has: a loop ends) */
		for (size_t depth = 0; id && depth <= json_object_size(tree);
		     depth++) {
			char key[24];
			snprintf(key, sizeof key, "%lld", (long long)id);
			json_t *node = json_object_get(tree, key);
			if (!node) {
				whole = false;
				break;
			}
			json_array_append_new(stack, frame_of(node));
			id = json_integer_value(json_object_get(node, "parent"));
		}
		json_object_set_new(site, "stack", stack);
		json_object_del(site, "node");
	}
	return whole;
}
