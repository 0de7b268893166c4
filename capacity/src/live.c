// SPDX-License-Identifier: GPL-2.0
/*
 * The live host: everything read here is "measured".
 *
 *   <root>/sys/kernel/mm/dmem/node<N>/{total,free,used}_bytes   dmem pool
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
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "capacity.h"

static int read_u64(const char *path, int base, uint64_t *v)
{
	g_autofree char *buf = NULL;
	char *end;

	if (!g_file_get_contents(path, &buf, NULL, NULL))
		return -1;
	g_strstrip(buf);
	errno = 0;
	*v = g_ascii_strtoull(buf, &end, base);
	return (errno || end == buf || *end) ? -1 : 0;
}

/* "Node 0 MemTotal:  123 kB" or "MemTotal:  123 kB" */
static int meminfo_total(const char *path, uint64_t *v)
{
	g_autofree char *buf = NULL;
	char *p;

	if (!g_file_get_contents(path, &buf, NULL, NULL))
		return -1;
	p = strstr(buf, "MemTotal:");
	if (!p)
		return -1;
	p += strlen("MemTotal:");
	*v = g_ascii_strtoull(p, NULL, 10) * 1024;
	return 0;
}

static int node_id(const char *name)
{
	char *end;
	long v;

	if (!g_str_has_prefix(name, "node") || !isdigit((unsigned char)name[4]))
		return -1;
	v = strtol(name + 4, &end, 10);
	return (*end || v < 0 || v > 100000) ? -1 : (int)v;
}

static cap_node *get_node(cap_host *h, int id)
{
	int i = cap_host_index(h, id);

	if (i >= 0)
		return &h->node[i];
	if (h->nnodes >= CAP_MAX_NODES)
		return NULL;
	/* keep the nodes sorted by id */
	for (i = h->nnodes; i > 0 && h->node[i - 1].id > id; i--)
		h->node[i] = h->node[i - 1];
	memset(&h->node[i], 0, sizeof(h->node[i]));
	h->node[i].id = id;
	h->nnodes++;
	return &h->node[i];
}

static void scan_nodes(cap_host *h, const char *dir, bool dmem)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *e;

	if (!d)
		return;
	while ((e = g_dir_read_name(d))) {
		int id = node_id(e);
		g_autofree char *sub = g_build_filename(dir, e, NULL);

		if (id < 0 || !g_file_test(sub, G_FILE_TEST_IS_DIR))
			continue;
		cap_node *n = get_node(h, id);

		if (!n)
			break;
		if (dmem) {
			g_autofree char *t = g_build_filename(sub, "total_bytes", NULL);
			g_autofree char *f = g_build_filename(sub, "free_bytes", NULL);
			g_autofree char *u = g_build_filename(sub, "used_bytes", NULL);
			g_autofree char *rq = g_build_filename(sub, "requested_bytes", NULL);
			g_autofree char *pn = g_build_filename(sub, "pinned_bytes", NULL);
			g_autofree char *po = g_build_filename(sub, "poisoned_bytes", NULL);

			if (read_u64(t, 10, &n->dmem_total) == 0) {
				n->dmem_src = CAP_SRC_MEASURED;
				if (read_u64(f, 10, &n->dmem_free) < 0)
					n->dmem_free = 0;
				if (read_u64(u, 10, &n->dmem_used) < 0)
					n->dmem_used = n->dmem_total - MIN(n->dmem_free, n->dmem_total);
				if (read_u64(rq, 10, &n->dmem_requested) < 0)
					n->dmem_requested = 0;
				if (read_u64(pn, 10, &n->dmem_pinned) < 0)
					n->dmem_pinned = 0;
				if (read_u64(po, 10, &n->dmem_poisoned) < 0)
					n->dmem_poisoned = 0;
			}
		} else {
			g_autofree char *mi = g_build_filename(sub, "meminfo", NULL);

			n->has_memtotal = meminfo_total(mi, &n->memtotal) == 0;
		}
	}
	g_dir_close(d);
}

static uint64_t count_blocks(const char *dir)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *e;
	uint64_t k = 0;

	if (!d)
		return 0;
	while ((e = g_dir_read_name(d)))
		if (g_str_has_prefix(e, "memory") && isdigit((unsigned char)e[6]))
			k++;
	g_dir_close(d);
	return k;
}

int cap_host_from_root(cap_host *h, const char *root, char **err)
{
	g_autofree char *dmem = g_build_filename(root, "sys/kernel/mm/dmem", NULL);
	g_autofree char *nodes = g_build_filename(root, "sys/devices/system/node", NULL);
	g_autofree char *mi = g_build_filename(root, "proc/meminfo", NULL);
	g_autofree char *bs = g_build_filename(root, "sys/devices/system/memory/block_size_bytes",
					       NULL);
	uint64_t block = 0;

	h->live = true;
	h->nnodes = 0;
	h->has_memtotal = meminfo_total(mi, &h->memtotal) == 0;
	h->has_dmem = g_file_test(dmem, G_FILE_TEST_IS_DIR);
	scan_nodes(h, nodes, false);
	scan_nodes(h, dmem, true);
	if (read_u64(bs, 16, &block) < 0)
		block = 0;

	if (!h->nnodes) {
		if (!h->has_memtotal) {
			*err = g_strdup_printf("cannot read %s or %s (use --root or --host)", nodes, mi);
			return -1;
		}
		/* no NUMA: one node 0 with the host's MemTotal */
		cap_node *n = get_node(h, 0);

		n->memtotal = h->memtotal;
		n->has_memtotal = true;
	}
	for (int i = 0; i < h->nnodes; i++) {
		cap_node *n = &h->node[i];
		g_autofree char *nd = g_strdup_printf("%s/node%d", nodes, n->id);
		uint64_t k = block ? count_blocks(nd) : 0;

		if (n->dmem_src != CAP_SRC_MEASURED) {
			n->dmem_total = n->dmem_free = n->dmem_used = 0;
			n->dmem_src = h->has_dmem ? CAP_SRC_MEASURED : CAP_SRC_MODELLED;
		}
		if (k) {
			n->blocks_bytes = k * block;
			n->has_blocks = true;
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
	return 0;
}
