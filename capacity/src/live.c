// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The live host: everything read here is "measured".
 *
 *   <root>/sys/kernel/mm/dmem/node<N>/{total,free,used}_bytes   dmem pool (dmem_stats_read)
 *   <root>/proc/meminfo                                         MemTotal
 *   <root>/sys/devices/system/node/node<N>/meminfo              node MemTotal
 *   <root>/sys/devices/system/node/node<N>/memory<M>            memory blocks
 *   <root>/sys/devices/system/memory/block_size_bytes           (hex)
 *
 * A node's RAM without dmem is its memory blocks times the block size
 * (measured; dmem= ranges leave memblock before sparse_init, so they have
 * no memory block; blocks covering at least MemTotal + dmem are taken to
 * include dmem already).  Without block information it is modelled from the
 * node MemTotal, which lacks the node's own memmap: MemTotal * 64/63.
 */
#include <string.h>

#include "capacity.h"

/* "Node 0 MemTotal:  123 kB" or "MemTotal:  123 kB" */
static bool meminfo_total(const char *path, uint64_t *v)
{
	g_autofree char *buf = NULL;
	guint64 kib;
	char *p;

	if (!g_file_get_contents(path, &buf, NULL, NULL))
		return false;
	p = strstr(buf, "MemTotal:");
	if (!p)
		return false;
	kib = g_ascii_strtoull(p + strlen("MemTotal:"), NULL, 10);
	if (kib > CAP_MAX_SIZE / 1024) /* not a MemTotal: no wrapped figure */
		return false;
	*v = kib * 1024;
	return true;
}

cap_node *cap_host_node(cap_host *h, guint64 id, GError **error)
{
	int i = cap_host_index(h, (int)id);

	if (i >= 0)
		return &h->node[i];
	if (h->nnodes >= CAP_MAX_NODES) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "more than %d NUMA nodes",
			    CAP_MAX_NODES);
		return NULL;
	}
	/* keep the nodes sorted by id */
	for (i = h->nnodes; i > 0 && h->node[i - 1].id > (int)id; i--)
		h->node[i] = h->node[i - 1];
	memset(&h->node[i], 0, sizeof(h->node[i]));
	h->node[i].id = (int)id;
	h->nnodes++;
	return &h->node[i];
}

/* sys/devices/system/node/node<N>: its MemTotal and its memory blocks */
static gboolean scan_nodes(cap_host *h, const char *dir, uint64_t block, GError **error)
{
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	const char *e;

	while (d && (e = g_dir_read_name(d))) {
		g_autofree char *sub = g_build_filename(dir, e, NULL);
		g_autofree char *mi = g_build_filename(sub, "meminfo", NULL);
		g_autoptr(GDir) blocks = NULL;
		const char *b;
		guint64 id;
		cap_node *n;

		if (!g_str_has_prefix(e, "node") ||
		    !g_ascii_string_to_unsigned(e + 4, 10, 0, DMEM_MAX_NODES - 1, &id, NULL) ||
		    !g_file_test(sub, G_FILE_TEST_IS_DIR))
			continue;
		n = cap_host_node(h, id, error);
		if (!n)
			return FALSE;
		n->has_memtotal = meminfo_total(mi, &n->memtotal);
		blocks = block ? g_dir_open(sub, 0, NULL) : NULL;
		while (blocks && (b = g_dir_read_name(blocks)))
			if (g_str_has_prefix(b, "memory") && g_ascii_isdigit(b[6]))
				/* saturates past the limit: cap_host_from_root refuses it */
				n->blocks_bytes = MIN(n->blocks_bytes + block, CAP_MAX_SIZE + 1);
		n->has_blocks = n->blocks_bytes != 0;
	}
	return TRUE;
}

/* sys/kernel/mm/dmem: the pool, read as the hook reads it */
static gboolean read_pool(cap_host *h, const char *dir, GError **error)
{
	g_autoptr(GArray) stats = dmem_stats_read(dir, error);

	if (!stats)
		return FALSE;
	for (guint i = 0; i < stats->len; i++) {
		const DmemNodeStat *st = &g_array_index(stats, DmemNodeStat, i);
		cap_node *n = cap_host_node(h, st->node, error);

		if (!n)
			return FALSE;
		if (st->total_bytes > CAP_MAX_SIZE) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "%s: node%u reports a dmem pool of more than %" G_GUINT64_FORMAT "P",
				    dir, st->node, CAP_MAX_SIZE / CAP_PIB);
			return FALSE;
		}
		n->dmem_total = st->total_bytes;
		n->dmem_free = st->free_bytes;
		n->dmem_used = st->used_bytes;
		n->dmem_requested = st->requested_bytes;
		n->dmem_pinned = st->pinned_bytes;
		n->dmem_poisoned = st->poisoned_bytes;
		n->dmem_zeroed = st->zeroed_bytes;
		n->dmem_present = st->present;
	}
	return TRUE;
}

gboolean cap_host_from_root(cap_host *h, const char *root, GError **error)
{
	g_autofree char *dmem = g_build_filename(root, "sys/kernel/mm/dmem", NULL);
	g_autofree char *nodes = g_build_filename(root, "sys/devices/system/node", NULL);
	g_autofree char *mi = g_build_filename(root, "proc/meminfo", NULL);
	g_autofree char *bs = g_build_filename(root, "sys/devices/system/memory/block_size_bytes",
					       NULL);
	g_autofree char *bs_text = NULL;
	uint64_t block = 0;

	h->live = true;
	h->nnodes = 0;
	h->has_memtotal = meminfo_total(mi, &h->memtotal);
	h->has_dmem = g_file_test(dmem, G_FILE_TEST_IS_DIR);
	if (g_file_get_contents(bs, &bs_text, NULL, NULL) &&
	    !g_ascii_string_to_unsigned(g_strstrip(bs_text), 16, 0, CAP_MAX_SIZE, &block, NULL))
		block = 0;
	if (!scan_nodes(h, nodes, block, error) || (h->has_dmem && !read_pool(h, dmem, error)))
		return FALSE;

	if (!h->nnodes) {
		cap_node *n;

		if (!h->has_memtotal) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "cannot read %s or %s (use --root or --host)", nodes, mi);
			return FALSE;
		}
		/* no NUMA: one node 0 with the host's MemTotal */
		n = cap_host_node(h, 0, error);
		n->memtotal = h->memtotal;
		n->has_memtotal = true;
	}
	cap_host_node_ram(h);
	return cap_host_check_ram(h, nodes, error);
}

gboolean cap_host_check_ram(const cap_host *h, const char *what, GError **error)
{
	uint64_t total = 0;

	for (int i = 0; i < h->nnodes; i++) {
		/* each term is at most CAP_MAX_SIZE + 1: the sum does not wrap */
		total += MIN(h->node[i].ram, CAP_MAX_SIZE + 1);
		if (total > CAP_MAX_SIZE) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "%s: the nodes add up to more than %" G_GUINT64_FORMAT "P of memory",
				    what, CAP_MAX_SIZE / CAP_PIB);
			return FALSE;
		}
	}
	return TRUE;
}

/*
 * Each node's RAM, from its memory blocks, else from its MemTotal and dmem
 * (see the top of this file).
 */
void cap_host_node_ram(cap_host *h)
{
	for (int i = 0; i < h->nnodes; i++) {
		cap_node *n = &h->node[i];

		n->dmem_src = h->has_dmem ? CAP_SRC_MEASURED : CAP_SRC_MODELLED;
		if (n->has_blocks) {
			/* blocks that already cover MemTotal + dmem include the dmem
			 * ranges (a kernel that kept sections for them) */
			n->ram = n->blocks_bytes;
			if (!n->dmem_total || n->blocks_bytes < n->memtotal + n->dmem_total)
				n->ram += n->dmem_total;
			n->ram_src = CAP_SRC_MEASURED;
		} else {
			n->ram = (n->has_memtotal ? n->memtotal / 63 * 64 : 0) + n->dmem_total;
			n->ram_src = CAP_SRC_MODELLED;
		}
	}
}
