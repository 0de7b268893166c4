// SPDX-License-Identifier: GPL-2.0-or-later
/* The report as a terminal table, with the dmem= recommendation. */
#include <string.h>

#include "render.h"

static char src_letter(cap_source s)
{
	return s == CAP_SRC_MEASURED ? 'M' : s == CAP_SRC_GIVEN ? 'g' : 'm';
}

static void recommend_text(GString *o, const cap_report *r)
{
	const cap_host *h = r->host;
	g_autofree char *p = cap_recommend_param(r), *k = cap_format_size(r->keep);
	g_autofree char *a = cap_format_size(cap_dmem_align(h));
	static const cap_model_id peers[] = { CAP_M_2M_HVO, CAP_M_1G_HVO };

	g_string_append_printf(o, "\nrecommended: dmem=%s\n", p);
	g_string_append_printf(o, "  every node keeps %s for the host (its reserve and the memmap of "
				  "what it keeps%s); dmem takes the rest in %s ranges:",
			       k, r->keep_uneven ? ", the largest need of the nodes" : "", a);
	for (int i = 0; i < h->nnodes; i++) {
		/* a node no bigger than what every node keeps gets no dmem */
		uint64_t pool = cap_round_down(cap_sub0(h->node[i].ram, r->keep), cap_dmem_align(h));
		g_autofree char *d = cap_format_size(pool);

		g_string_append_printf(o, " node%d %s%s", h->node[i].id, d,
				       pool ? "" : " (too small: nothing left after what it keeps)");
	}
	g_string_append(o, "\n");
	for (int s = 0; s < r->nshapes; s++) {
		uint64_t n = r->fits[s * CAP_M_COUNT + CAP_M_DMEM].per_host;

		g_string_append_printf(o, "  guest \"%s\": dmem %" G_GUINT64_FORMAT, r->shapes[s]->name, n);
		for (size_t j = 0; j < G_N_ELEMENTS(peers); j++) {
			uint64_t m = r->fits[s * CAP_M_COUNT + peers[j]].per_host;

			g_string_append_printf(o, "%s %s %" G_GUINT64_FORMAT " (%+" G_GINT64_FORMAT ")",
					       j ? "," : " vs", r->models[peers[j]].name, m,
					       (gint64)n - (gint64)m);
		}
		g_string_append(o, "\n");
	}
}

static void cell(GString *o, uint64_t bytes, char src)
{
	g_autofree char *s = cap_format_size(bytes);

	g_string_append_printf(o, "  %12s %c", s, src);
}

/* a figure this host's kernel does not report: not a 0 */
static void cell_absent(GString *o)
{
	g_string_append_printf(o, "  %12s -", "n/a");
}

char *cap_report_table(const cap_report *r)
{
	const cap_host *h = r->host;
	GString *o = g_string_new(NULL);
	uint64_t ram = cap_host_ram(h), dmem = 0;
	g_autofree char *ram_s = NULL, *dmem_s = NULL, *res_s = NULL, *dp_s = NULL;

	for (int i = 0; i < h->nnodes; i++)
		dmem += h->node[i].dmem_total;
	ram_s = cap_format_size(ram);
	dmem_s = cap_format_size(dmem);
	res_s = cap_format_size(h->reserve);
	dp_s = cap_format_size(h->dmem_pagesize);

	if (h->live)
		g_string_append(o, "dmem-capacity: live host. Sources: M = measured on this host, "
				   "m = modelled (arithmetic), g = given.\n");
	else
		g_string_append(o, "dmem-capacity: planning for a described host (--host/--dmem). "
				   "Nothing is measured: g = given, m = modelled.\n");
	g_string_append_printf(o, "host: %d node%s, RAM %s, dmem %s (dpage %s)\n",
			       h->nnodes, h->nnodes == 1 ? "" : "s", ram_s, dmem_s, dp_s);
	if (h->reserve_measured)
		g_string_append_printf(o, "reserve %s for the host, in every model: what each node keeps "
					  "outside dmem as booted (measured)\n", res_s);
	else
		g_string_append_printf(o, "reserve %s for host kernel+QEMU, in every model (%s), split "
					  "across nodes\n",
				       res_s, h->reserve_given ? "--reserve" : "default");
	if (h->live && h->has_memtotal) {
		g_autofree char *mt = cap_format_size(h->memtotal);

		g_string_append_printf(o, "MemTotal %s M\n", mt);
	}

	g_string_append(o, "\nnode  ");
	g_string_append_printf(o, "  %14s", "RAM");
	if (h->live)
		g_string_append_printf(o, "  %14s  %14s", "MemTotal", "memory blocks");
	g_string_append_printf(o, "  %14s", "dmem total");
	if (h->live)
		g_string_append_printf(o, "  %14s  %14s  %14s", "dmem free", "free zeroed",
				       "dmem used");
	g_string_append(o, "\n");
	for (int i = 0; i < h->nnodes; i++) {
		const cap_node *n = &h->node[i];
		char ds = src_letter(n->dmem_src);

		g_string_append_printf(o, "node%-2d", n->id);
		cell(o, n->ram, src_letter(n->ram_src));
		if (h->live) {
			cell(o, n->memtotal, n->has_memtotal ? 'M' : '-');
			cell(o, n->blocks_bytes, n->has_blocks ? 'M' : '-');
		}
		cell(o, n->dmem_total, ds);
		if (h->live) {
			cell(o, n->dmem_free, ds);
			if (n->dmem_present & DMEM_STAT_ZEROED)
				cell(o, n->dmem_zeroed, ds);
			else
				cell_absent(o);
			cell(o, n->dmem_used, ds);
		}
		g_string_append(o, "\n");
	}
	for (int i = 0; i < h->nnodes; i++) {
		const cap_node *n = &h->node[i];

		if ((n->dmem_present & DMEM_STAT_REQUESTED) && n->dmem_requested > n->dmem_total) {
			g_autofree char *got = cap_format_size(n->dmem_total);
			g_autofree char *want = cap_format_size(n->dmem_requested);

			g_string_append_printf(o, "node%d: this boot reserved %s of the %s that "
					       "dmem= asked: the pool is short of the command line\n",
					       n->id, got, want);
		}
	}

	g_string_append_printf(o, "\n%-22s %8s %14s %8s", "model", "page", "metadata", "%RAM");
	for (int i = 0; i < h->nnodes; i++) {
		g_autofree char *hd = g_strdup_printf("pool node%d", h->node[i].id);

		g_string_append_printf(o, "  %14s", hd);
	}
	g_string_append_printf(o, "  %14s\n", "pool host");
	for (int m = 0; m < CAP_M_COUNT; m++) {
		const cap_model *md = &r->models[m];
		uint64_t meta, pool;
		g_autofree char *pg = NULL, *ms = NULL;

		if (!r->present[m])
			continue;
		meta = cap_model_meta_total(h, md);
		pool = cap_model_pool_total(h, md);
		pg = cap_format_size(md->page);
		ms = cap_format_size(meta);
		g_string_append_printf(o, "%-22s %8s %12s %c %7.4f%%", md->name, pg, ms,
				       src_letter(md->meta_src), cap_pct(meta, ram));
		for (int i = 0; i < h->nnodes; i++)
			cell(o, md->pool[i], src_letter(md->pool_src));
		cell(o, pool, src_letter(md->pool_src));
		g_string_append(o, "\n");
	}

	for (int s = 0; s < r->nshapes; s++) {
		const cap_shape *sh = r->shapes[s];
		g_autofree char *desc = cap_shape_describe(h, sh);
		uint64_t base = r->fits[s * CAP_M_COUNT + CAP_M_4K].per_host;

		g_string_append_printf(o, "\nguest \"%s\" (%s): %s\n", sh->name, sh->origin, desc);
		g_string_append_printf(o, "%-22s", "guests that fit");
		for (int i = 0; i < h->nnodes; i++) {
			g_autofree char *hd = g_strdup_printf("node%d", h->node[i].id);

			g_string_append_printf(o, " %8s", hd);
		}
		g_string_append_printf(o, " %8s %8s  %s\n", "host", "vs 4K", "pool");
		for (int m = 0; m < CAP_M_COUNT; m++) {
			const cap_fit_result *f = &r->fits[s * CAP_M_COUNT + m];

			if (!r->present[m])
				continue;
			g_string_append_printf(o, "%-22s", r->models[m].name);
			for (int i = 0; i < h->nnodes; i++)
				g_string_append_printf(o, " %8" G_GUINT64_FORMAT, f->cells_on[i]);
			g_string_append_printf(o, " %8" G_GUINT64_FORMAT " %+8" G_GINT64_FORMAT "  %s\n",
					       f->per_host, (gint64)f->per_host - (gint64)base,
					       cap_source_name(r->models[m].pool_src));
		}
		if (sh->ncells > 1)
			g_string_append(o, "(per-node columns count the guest cells placed on that node)\n");
	}
	if (!r->nshapes)
		g_string_append(o, "\n(no guest shape given: use --guest, --xml or --libvirt)\n");
	if (r->mix) {
		g_autofree char *mx = cap_mix_text(r);
		uint64_t base = r->mix_guests[CAP_M_4K];

		g_string_append_printf(o, "\nmix %s of", mx);
		for (int k = 0; k < r->nshapes; k++)
			g_string_append_printf(o, "%s \"%s\"", k ? "," : "", r->shapes[k]->name);
		g_string_append_printf(o, ": sets that fit, guests placed (the last set may be partial)\n");
		g_string_append_printf(o, "%-22s %8s %8s %8s\n", "", "sets", "guests", "vs 4K");
		for (int m = 0; m < CAP_M_COUNT; m++)
			if (r->present[m])
				g_string_append_printf(o, "%-22s %8" G_GUINT64_FORMAT " %8" G_GUINT64_FORMAT
						       " %+8" G_GINT64_FORMAT "\n", r->models[m].name,
						       r->mix_sets[m], r->mix_guests[m],
						       (gint64)r->mix_guests[m] - (gint64)base);
	}

	g_string_append(o, "\nmodel: struct page = 64 B per 4 KiB; HVO keeps 1 of 8 vmemmap pages per 2M "
			   "page and 1 of 4096 per 1G page;\ndmem has no struct page, only a 1-bit-per-4KiB "
			   "bitmap; guest cells round up to the page size and fit whole on one node.\n");
	if (r->recommend)
		recommend_text(o, r);
	for (int i = 0; i < r->nwarnings; i++)
		g_string_append_printf(o, "warning: %s\n", r->warnings[i]);
	return g_string_free(o, FALSE);
}

/*
 * A byte count or a count.  json-glib's integers are gint64: a value of 2^63
 * or more goes out as a double, never as a negative integer.  Sizes given
 * or read are at most 2^62 (CAP_MAX_SIZE), so this is the last guard only.
 */
