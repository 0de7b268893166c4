// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Admission control: simulate placing every backend's dpages in the free
 * pool of the nodes its policy allows, most constrained backends first.
 *   bind (and restrictive): only the nodeset;
 *   interleave: ceil(pages / n) on each node of the nodeset;
 *   preferred: the preferred node first, then any node with dmem;
 *   no numatune: any node with dmem.
 * A virtio-mem device counts with what it plugs at start (<requested>);
 * every later grow is admitted by QEMU's preallocation of the new blocks.
 * Nothing is created here; the stderr line says what was needed and what is
 * free per node.
 */
#include "plan.h"

#include <string.h>

typedef struct {
	const PlanBackend *b;
	guint width; /* number of nodes it may use */
} Item;

static gint cmp_item(gconstpointer a, gconstpointer b)
{
	const Item *x = a, *y = b;

	return (x->width > y->width) - (x->width < y->width);
}

static guint node_index(const GArray *stats, guint node)
{
	for (guint i = 0; i < stats->len; i++)
		if (g_array_index(stats, DmemNodeStat, i).node == node)
			return i;
	return G_MAXUINT;
}

/* @free: bytes free per node; each node gives whole dpages of the backend's size */
static gboolean place(const PlanBackend *b, const GArray *stats, guint64 *free)
{
	guint64 ps = b->pagesize, pages = b->admit / ps;
	const DmemNodeset *ns = &b->policy.nodes;

	if (b->has_nodes && b->policy.mode == DMEM_POLICY_INTERLEAVE) {
		guint n = dmem_nodeset_count(ns);
		guint64 per = (pages + n - 1) / n;

		for (guint node = 0; node < DMEM_MAX_NODES; node++) {
			guint i;

			if (!dmem_nodeset_has(ns, node))
				continue;
			i = node_index(stats, node);
			if (i == G_MAXUINT || free[i] / ps < per)
				return FALSE;
			free[i] -= per * ps;
		}
		return TRUE;
	}
	if (b->has_nodes && b->policy.mode == DMEM_POLICY_PREFERRED) {
		guint i = node_index(stats, (guint)dmem_nodeset_first(ns));

		if (i != G_MAXUINT) {
			guint64 take = MIN(pages, free[i] / ps);

			free[i] -= take * ps;
			pages -= take;
		}
	}
	for (guint i = 0; i < stats->len && pages; i++) {
		guint64 take;

		if (b->has_nodes && b->policy.mode == DMEM_POLICY_BIND &&
		    !dmem_nodeset_has(ns, g_array_index(stats, DmemNodeStat, i).node))
			continue;
		take = MIN(pages, free[i] / ps);
		free[i] -= take * ps;
		pages -= take;
	}
	return pages == 0;
}

/*
 * "; free: node0=N (Z zeroed) ..." for the nodes in @shown and every node
 * with dmem.  "zeroed" is what the kernel already cleaned in the
 * background: a guest gets it without waiting for it to be zeroed.
 */
static void describe_free(GString *s, DmemNodeset *shown, const GArray *stats)
{
	for (guint i = 0; i < stats->len; i++)
		dmem_nodeset_set(shown, g_array_index(stats, DmemNodeStat, i).node);
	g_string_append(s, "; free:");
	if (dmem_nodeset_count(shown) == 0)
		g_string_append(s, " no node has dmem");
	for (guint n = 0; n < DMEM_MAX_NODES; n++) {
		if (!dmem_nodeset_has(shown, n))
			continue;
		guint i = node_index(stats, n);
		const DmemNodeStat *st;

		if (i == G_MAXUINT) {
			g_string_append_printf(s, " node%u=0 (no dmem)", n);
			continue;
		}
		st = &g_array_index(stats, DmemNodeStat, i);
		g_string_append_printf(s, " node%u=%" G_GUINT64_FORMAT, n, st->free_bytes);
		if (st->present & DMEM_STAT_ZEROED)
			g_string_append_printf(s, " (%" G_GUINT64_FORMAT " zeroed)", st->zeroed_bytes);
		/* a boot that reserved less than the command line asked */
		if ((st->present & DMEM_STAT_REQUESTED) && st->requested_bytes > st->total_bytes)
			g_string_append_printf(s, " (pool short: %" G_GUINT64_FORMAT " of the %"
					       G_GUINT64_FORMAT " bytes dmem= asked)",
					       st->total_bytes, st->requested_bytes);
	}
}

char *plan_pool_summary(const DomainPlan *plan, const GArray *stats)
{
	g_autoptr(GString) s = g_string_new(NULL);
	DmemNodeset shown = { 0 };

	g_string_append_printf(s, "domain %s fits in the dmem pool", plan->uuid);
	describe_free(s, &shown, stats);
	return g_string_free(g_steal_pointer(&s), FALSE);
}

static char *describe(const DomainPlan *plan, const GArray *stats)
{
	g_autoptr(GString) s = g_string_new(NULL);
	DmemNodeset shown = { 0 };

	g_string_append_printf(s, "domain %s does not fit in the dmem pool: needs", plan->uuid);
	for (guint i = 0; i < plan->backends->len; i++) {
		const PlanBackend *b = g_ptr_array_index(plan->backends, i);
		g_autofree char *nodes = dmem_nodeset_format(&b->policy.nodes);

		g_string_append_printf(s, "%s %s=%" G_GUINT64_FORMAT, i ? "," : "", b->id, b->admit);
		if (b->virtio_mem)
			g_string_append_printf(s, " (virtio-mem requested, of %" G_GUINT64_FORMAT ")",
					       b->size);
		if (b->has_nodes) {
			g_string_append_printf(s, " on node%s %s (%s)",
					       dmem_nodeset_count(&b->policy.nodes) > 1 ? "s" : "",
					       nodes, dmem_policy_name(b->policy.mode));
			for (guint n = 0; n < DMEM_MAX_NODES; n++)
				if (dmem_nodeset_has(&b->policy.nodes, n))
					dmem_nodeset_set(&shown, n);
		} else {
			g_string_append(s, " on any node");
		}
	}
	describe_free(s, &shown, stats);
	return g_string_free(g_steal_pointer(&s), FALSE);
}

gboolean plan_admit(const DomainPlan *plan, const GArray *stats, GError **error)
{
	g_autofree guint64 *free = g_new0(guint64, stats->len + 1);
	g_autoptr(GArray) items = g_array_new(FALSE, FALSE, sizeof(Item));

	for (guint i = 0; i < stats->len; i++)
		free[i] = g_array_index(stats, DmemNodeStat, i).free_bytes;
	for (guint i = 0; i < plan->backends->len; i++) {
		const PlanBackend *b = g_ptr_array_index(plan->backends, i);
		Item it = { b, b->has_nodes && b->policy.mode != DMEM_POLICY_PREFERRED
				       ? dmem_nodeset_count(&b->policy.nodes)
				       : DMEM_MAX_NODES };

		g_array_append_val(items, it);
	}
	g_array_sort(items, cmp_item); /* stable: glib uses a merge sort */
	for (guint i = 0; i < items->len; i++) {
		if (!place(g_array_index(items, Item, i).b, stats, free)) {
			g_autofree char *msg = describe(plan, stats);

			g_set_error_literal(error, DMEM_ERROR, DMEM_ERROR_NO_SPACE, msg);
			return FALSE;
		}
	}
	return TRUE;
}
