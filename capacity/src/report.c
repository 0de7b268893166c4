// SPDX-License-Identifier: GPL-2.0
/* The report: a terminal table, JSON and an SVG bar chart. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include <glib.h>

#include "capacity.h"

static void warn(cap_report *r, char *msg)
{
	r->warnings = g_renew(char *, r->warnings, r->nwarnings + 1);
	r->warnings[r->nwarnings++] = msg;
}

void cap_report_build(cap_report *r, const cap_host *h, cap_shape **shapes, int nshapes)
{
	memset(r, 0, sizeof(*r));
	r->host = h;
	r->shapes = shapes;
	r->nshapes = nshapes;
	for (int m = 0; m < CAP_M_COUNT; m++) {
		r->present[m] = cap_model_present(h, (cap_model_id)m);
		if (r->present[m])
			cap_model_compute(h, (cap_model_id)m, &r->models[m]);
	}
	r->fits = g_new0(cap_fit_result, (size_t)(nshapes ? nshapes : 1) * CAP_M_COUNT);
	for (int s = 0; s < nshapes; s++)
		for (int m = 0; m < CAP_M_COUNT; m++)
			if (r->present[m])
				cap_fit(h, &r->models[m], shapes[s], &r->fits[s * CAP_M_COUNT + m]);

	/* "dmem=!keep": each node keeps its RAM minus its equal-terms pool */
	for (int i = 0; i < h->nnodes; i++) {
		uint64_t k = h->node[i].ram - r->models[CAP_M_DMEM].pool[i];

		r->keep_uneven |= i && k != r->keep;
		r->keep = MAX(r->keep, k);
	}
	r->keep = cap_round_up(r->keep, CAP_MIB);
	if (h->live && !h->has_dmem)
		warn(r, g_strdup("no dmem pool found (sys/kernel/mm/dmem): the dmem figures are zero"));
	for (int i = 0; i < h->nnodes && r->present[CAP_M_DMEM_BOOTED]; i++) {
		const cap_model *d = &r->models[CAP_M_DMEM_BOOTED];
		uint64_t share = cap_reserve_share(h, i);

		if (d->host_left[i] < share) {
			g_autofree char *a = cap_format_size(d->host_left[i]);
			g_autofree char *b = cap_format_size(share);

			warn(r, g_strdup_printf("node%d: dmem leaves %s for the host, below its reserve share %s",
						h->node[i].id, a, b));
		}
	}
}

void cap_report_clear(cap_report *r)
{
	for (int i = 0; i < r->nwarnings; i++)
		g_free(r->warnings[i]);
	g_free(r->warnings);
	g_free(r->fits);
	memset(r, 0, sizeof(*r));
}

static char src_letter(cap_source s)
{
	return s == CAP_SRC_MEASURED ? 'M' : s == CAP_SRC_GIVEN ? 'g' : 'm';
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* A size as dmem= takes it: whole GiB as G, else M. */
static char *param_size(uint64_t bytes)
{
	if (bytes % CAP_GIB == 0)
		return g_strdup_printf("%" G_GUINT64_FORMAT "G", bytes / CAP_GIB);
	return g_strdup_printf("%" G_GUINT64_FORMAT "M", cap_round_up(bytes, CAP_MIB) / CAP_MIB);
}

/* "!KEEP:ALIGN", the dmem= value that gives each node its equal-terms pool */
static char *recommend_param(const cap_report *r)
{
	g_autofree char *k = param_size(r->keep), *a = param_size(cap_dmem_align(r->host));

	return g_strdup_printf("!%s:%s", k, a);
}

static void recommend_text(GString *o, const cap_report *r)
{
	const cap_host *h = r->host;
	g_autofree char *p = recommend_param(r), *k = cap_format_size(r->keep);
	g_autofree char *a = cap_format_size(cap_dmem_align(h));
	static const cap_model_id peers[] = { CAP_M_2M_HVO, CAP_M_1G_HVO };

	g_string_append_printf(o, "\nrecommended: dmem=%s\n", p);
	g_string_append_printf(o, "  every node keeps %s for the host (its reserve and the memmap of "
				  "what it keeps%s); dmem takes the rest in %s ranges:",
			       k, r->keep_uneven ? ", the largest need of the nodes" : "", a);
	for (int i = 0; i < h->nnodes; i++) {
		g_autofree char *d = cap_format_size(cap_round_down(h->node[i].ram - r->keep,
								    cap_dmem_align(h)));

		g_string_append_printf(o, " node%d %s", h->node[i].id, d);
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
		g_string_append_printf(o, "  %14s  %14s", "dmem free", "dmem used");
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
			cell(o, n->dmem_used, ds);
		}
		g_string_append(o, "\n");
	}
	for (int i = 0; i < h->nnodes; i++) {
		const cap_node *n = &h->node[i];

		if (n->dmem_requested > n->dmem_total) {
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
				       src_letter(md->meta_src), pct(meta, ram));
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

	g_string_append(o, "\nmodel: struct page = 64 B per 4 KiB; HVO keeps 1 of 8 vmemmap pages per 2M "
			   "page and 1 of 4096 per 1G page;\ndmem has no struct page, only a 1-bit-per-4KiB "
			   "bitmap; guest cells round up to the page size and fit whole on one node.\n");
	if (r->recommend)
		recommend_text(o, r);
	for (int i = 0; i < r->nwarnings; i++)
		g_string_append_printf(o, "warning: %s\n", r->warnings[i]);
	return g_string_free(o, FALSE);
}

static void jstr(GString *o, const char *s)
{
	g_string_append_c(o, '"');
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		switch (*p) {
		case '"':
			g_string_append(o, "\\\"");
			break;
		case '\\':
			g_string_append(o, "\\\\");
			break;
		case '\n':
			g_string_append(o, "\\n");
			break;
		case '\t':
			g_string_append(o, "\\t");
			break;
		case '\r':
			g_string_append(o, "\\r");
			break;
		default:
			if (*p < 0x20)
				g_string_append_printf(o, "\\u%04x", *p);
			else
				g_string_append_c(o, (char)*p);
		}
	}
	g_string_append_c(o, '"');
}

static void jkey(GString *o, const char *k)
{
	jstr(o, k);
	g_string_append_c(o, ':');
}

static void ju64(GString *o, const char *k, uint64_t v, bool comma)
{
	jkey(o, k);
	g_string_append_printf(o, "%" G_GUINT64_FORMAT "%s", v, comma ? "," : "");
}

static void jsrc(GString *o, const char *k, cap_source s, bool comma)
{
	jkey(o, k);
	jstr(o, cap_source_name(s));
	if (comma)
		g_string_append_c(o, ',');
}

char *cap_report_json(const cap_report *r)
{
	const cap_host *h = r->host;
	GString *o = g_string_new("{");
	uint64_t ram = cap_host_ram(h);
	char num[G_ASCII_DTOSTR_BUF_SIZE];

	jkey(o, "tool");
	jstr(o, "dmem-capacity");
	g_string_append(o, ",");
	ju64(o, "format", 1, true);
	jkey(o, "mode");
	jstr(o, h->live ? "live" : "planning");
	g_string_append(o, ",\"host\":{");
	ju64(o, "ram_bytes", ram, true);
	if (h->live && h->has_memtotal)
		ju64(o, "memtotal_bytes", h->memtotal, true);
	ju64(o, "reserve_bytes", h->reserve, true);
	jkey(o, "reserve_source");
	jstr(o, h->reserve_given ? "given" : h->reserve_measured ? "measured" : "default");
	g_string_append(o, ",");
	ju64(o, "dmem_pagesize", h->dmem_pagesize, true);
	ju64(o, "dpage_meta_bytes", h->dpage_meta, true);
	jkey(o, "nodes");
	g_string_append(o, "[");
	for (int i = 0; i < h->nnodes; i++) {
		const cap_node *n = &h->node[i];

		g_string_append_printf(o, "%s{", i ? "," : "");
		ju64(o, "node", (uint64_t)n->id, true);
		ju64(o, "ram_bytes", n->ram, true);
		jsrc(o, "ram_source", n->ram_src, true);
		if (n->has_memtotal)
			ju64(o, "memtotal_bytes", n->memtotal, true);
		if (n->has_blocks)
			ju64(o, "memory_blocks_bytes", n->blocks_bytes, true);
		ju64(o, "reserve_bytes", cap_reserve_share(h, i), true);
		ju64(o, "dmem_total_bytes", n->dmem_total, true);
		if (n->dmem_requested)
			ju64(o, "dmem_requested_bytes", n->dmem_requested, true);
		ju64(o, "dmem_free_bytes", n->dmem_free, true);
		ju64(o, "dmem_used_bytes", n->dmem_used, true);
		jsrc(o, "dmem_source", n->dmem_src, false);
		g_string_append(o, "}");
	}
	g_string_append(o, "]},\"models\":[");
	for (int m = 0, first = 1; m < CAP_M_COUNT; m++) {
		const cap_model *md = &r->models[m];
		uint64_t meta;

		if (!r->present[m])
			continue;
		meta = cap_model_meta_total(h, md);
		g_string_append_printf(o, "%s{", first ? "" : ",");
		first = 0;
		jkey(o, "id");
		jstr(o, md->key);
		g_string_append(o, ",");
		jkey(o, "name");
		jstr(o, md->name);
		g_string_append(o, ",");
		ju64(o, "page_bytes", md->page, true);
		ju64(o, "metadata_bytes", meta, true);
		jkey(o, "metadata_percent");
		g_string_append_printf(o, "%s,", g_ascii_formatd(num, sizeof(num), "%.6f",
								 pct(meta, ram)));
		jsrc(o, "metadata_source", md->meta_src, true);
		ju64(o, "pool_bytes", cap_model_pool_total(h, md), true);
		jsrc(o, "pool_source", md->pool_src, true);
		g_string_append(o, "\"nodes\":[");
		for (int i = 0; i < h->nnodes; i++) {
			g_string_append_printf(o, "%s{", i ? "," : "");
			ju64(o, "node", (uint64_t)h->node[i].id, true);
			ju64(o, "metadata_bytes", md->meta[i], true);
			ju64(o, "pool_bytes", md->pool[i], true);
			ju64(o, "host_left_bytes", md->host_left[i], false);
			g_string_append(o, "}");
		}
		g_string_append(o, "]}");
	}
	g_string_append(o, "],\"shapes\":[");
	for (int s = 0; s < r->nshapes; s++) {
		const cap_shape *sh = r->shapes[s];

		g_string_append_printf(o, "%s{", s ? "," : "");
		jkey(o, "name");
		jstr(o, sh->name);
		g_string_append(o, ",");
		jkey(o, "origin");
		jstr(o, sh->origin);
		g_string_append(o, ",");
		ju64(o, "bytes", cap_shape_total(sh), true);
		g_string_append(o, "\"cells\":[");
		for (int c = 0; c < sh->ncells; c++) {
			g_string_append_printf(o, "%s{", c ? "," : "");
			ju64(o, "cell", (uint64_t)c, true);
			ju64(o, "bytes", sh->cell[c].bytes, true);
			g_string_append(o, "\"host_nodes\":[");
			for (int i = 0, f = 0; i < h->nnodes; i++)
				if (sh->cell[c].mask & (UINT64_C(1) << i))
					g_string_append_printf(o, "%s%d", f++ ? "," : "",
							       h->node[i].id);
			g_string_append(o, "]}");
		}
		g_string_append(o, "],\"fit\":[");
		for (int m = 0, first = 1; m < CAP_M_COUNT; m++) {
			const cap_fit_result *f = &r->fits[s * CAP_M_COUNT + m];

			if (!r->present[m])
				continue;
			g_string_append_printf(o, "%s{", first ? "" : ",");
			first = 0;
			jkey(o, "model");
			jstr(o, r->models[m].key);
			g_string_append(o, ",");
			ju64(o, "per_host", f->per_host, true);
			jsrc(o, "source", CAP_SRC_MODELLED, true);
			jkey(o, "pool_source");
			jstr(o, cap_source_name(r->models[m].pool_src));
			g_string_append(o, ",\"cells_per_node\":[");
			for (int i = 0; i < h->nnodes; i++) {
				g_string_append_printf(o, "%s{", i ? "," : "");
				ju64(o, "node", (uint64_t)h->node[i].id, true);
				ju64(o, "cells", f->cells_on[i], false);
				g_string_append(o, "}");
			}
			g_string_append(o, "]}");
		}
		g_string_append(o, "]}");
	}
	g_string_append(o, "],");
	if (r->recommend) {
		g_autofree char *p = recommend_param(r);

		g_string_append(o, "\"recommend\":{");
		jkey(o, "dmem");
		jstr(o, p);
		g_string_append(o, ",");
		ju64(o, "keep_bytes", r->keep, true);
		ju64(o, "align_bytes", cap_dmem_align(h), true);
		jkey(o, "keep_uneven");
		g_string_append_printf(o, "%s},", r->keep_uneven ? "true" : "false");
	}
	g_string_append(o, "\"warnings\":[");
	for (int i = 0; i < r->nwarnings; i++) {
		if (i)
			g_string_append_c(o, ',');
		jstr(o, r->warnings[i]);
	}
	g_string_append(o, "]}\n");
	return g_string_free(o, FALSE);
}

static void xesc(GString *o, const char *s)
{
	g_autofree char *e = g_markup_escape_text(s, -1);

	g_string_append(o, e);
}

static const char *const colors[CAP_M_COUNT] = {
	"#9e9e9e", "#90caf9", "#1e88e5", "#a5d6a7", "#43a047", "#e65100", "#ff8a65", "#ffb74d",
};

/*
 * Grouped bars: one group per guest shape (guests per host), or, with no
 * shape, one group of guest-pool GiB per model.
 */
char *cap_report_svg(const cap_report *r)
{
	const cap_host *h = r->host;
	GString *o = g_string_new(NULL);
	int groups = r->nshapes ? r->nshapes : 1, nm = 0;
	const int bar = 22, gap = 30, left = 70, top = 60, plot_h = 260;
	double maxv = 0;
	int width, height;

	for (int m = 0; m < CAP_M_COUNT; m++)
		nm += r->present[m];
	for (int g = 0; g < groups; g++)
		for (int m = 0; m < CAP_M_COUNT; m++) {
			double v;

			if (!r->present[m])
				continue;
			v = r->nshapes ? (double)r->fits[g * CAP_M_COUNT + m].per_host
				       : (double)cap_model_pool_total(h, &r->models[m]) / (double)CAP_GIB;
			maxv = MAX(maxv, v);
		}
	if (maxv <= 0)
		maxv = 1;
	width = left + groups * (nm * bar + gap) + 220;
	height = top + plot_h + 80;

	g_string_append_printf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
				  "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n",
			       width, height, width, height);
	g_string_append_printf(o, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
			       width, height);
	g_string_append_printf(o, "<text x=\"%d\" y=\"22\" font-size=\"15\">%s</text>\n", left,
			       r->nshapes ? "Guests per host by memory model"
					  : "Guest memory pool per host (GiB) by memory model");
	g_string_append_printf(o, "<text x=\"%d\" y=\"40\">%s</text>\n", left,
			       h->live ? "live host: dmem pool measured, other models modelled from "
					 "measured RAM"
				       : "planning: all figures modelled from --host/--dmem");
	g_string_append_printf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
			       left, top + plot_h, left + groups * (nm * bar + gap), top + plot_h);
	g_string_append_printf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
			       left, top, left, top + plot_h);
	g_string_append_printf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.0f</text>\n",
			       left - 4, top + 4, maxv);
	g_string_append_printf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n", left - 4,
			       top + plot_h + 4);

	for (int g = 0; g < groups; g++) {
		int x0 = left + gap / 2 + g * (nm * bar + gap), k = 0;

		for (int m = 0; m < CAP_M_COUNT; m++) {
			double v;
			int bh, x;

			if (!r->present[m])
				continue;
			v = r->nshapes ? (double)r->fits[g * CAP_M_COUNT + m].per_host
				       : (double)cap_model_pool_total(h, &r->models[m]) / (double)CAP_GIB;
			bh = (int)lround(v / maxv * plot_h);
			x = x0 + k * bar;
			g_string_append_printf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
						  "fill=\"%s\"><title>",
					       x, top + plot_h - bh, bar - 2, bh, colors[m]);
			xesc(o, r->models[m].name);
			g_string_append_printf(o, ": %.0f</title></rect>\n", v);
			g_string_append_printf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
						  "font-size=\"9\">%.0f</text>\n",
					       x + bar / 2 - 1, top + plot_h - bh - 3, v);
			k++;
		}
		g_string_append_printf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
				       x0 + nm * bar / 2, top + plot_h + 18);
		xesc(o, r->nshapes ? r->shapes[g]->name : "pool");
		g_string_append(o, "</text>\n");
	}
	int lx = left + groups * (nm * bar + gap) + 20, ly = top;

	for (int m = 0; m < CAP_M_COUNT; m++) {
		if (!r->present[m])
			continue;
		g_string_append_printf(o, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
					  "<text x=\"%d\" y=\"%d\">",
				       lx, ly, colors[m], lx + 18, ly + 10);
		xesc(o, r->models[m].name);
		g_string_append_printf(o, " (%s)</text>\n", cap_source_name(r->models[m].pool_src));
		ly += 18;
	}
	g_string_append(o, "</svg>\n");
	return g_string_free(o, FALSE);
}

/* A label value in the exposition format: backslash, quote and newline escaped. */
static void plabel(GString *o, const char *v)
{
	for (const char *p = v; *p; p++) {
		if (*p == '\\' || *p == '"')
			g_string_append_c(o, '\\');
		if (*p == '\n')
			g_string_append(o, "\\n");
		else
			g_string_append_c(o, *p);
	}
}

static void pmetric(GString *o, const char *name, const char *help)
{
	g_string_append_printf(o, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/*
 * node_exporter's textfile collector format (write it to a .prom file in
 * its --collector.textfile.directory): the pool per node, and how many
 * guests of each shape fit in each model.
 */
char *cap_report_prometheus(const cap_report *r)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} pool[] = {
		{ "dmem_pool_total_bytes", "dmem reserved on the node", offsetof(cap_node, dmem_total) },
		{ "dmem_pool_requested_bytes", "what dmem= asked of the node",
		  offsetof(cap_node, dmem_requested) },
		{ "dmem_pool_free_bytes", "dmem free on the node", offsetof(cap_node, dmem_free) },
		{ "dmem_pool_used_bytes", "dmem allocated on the node", offsetof(cap_node, dmem_used) },
		{ "dmem_pool_pinned_bytes", "dmem pinned by devices and KVM on the node",
		  offsetof(cap_node, dmem_pinned) },
		{ "dmem_pool_poisoned_bytes", "dmem quarantined after memory errors on the node",
		  offsetof(cap_node, dmem_poisoned) },
	};
	const cap_host *h = r->host;
	GString *o = g_string_new(NULL);

	for (size_t k = 0; k < G_N_ELEMENTS(pool); k++) {
		pmetric(o, pool[k].name, pool[k].help);
		for (int i = 0; i < h->nnodes; i++) {
			const cap_node *n = &h->node[i];

			g_string_append_printf(o, "%s{node=\"%d\"} %" G_GUINT64_FORMAT "\n", pool[k].name,
					       n->id, *(const uint64_t *)((const char *)n + pool[k].off));
		}
	}
	pmetric(o, "dmem_capacity_reserve_bytes", "host reserve that every model leaves");
	g_string_append_printf(o, "dmem_capacity_reserve_bytes %" G_GUINT64_FORMAT "\n", h->reserve);
	pmetric(o, "dmem_capacity_guests", "guests of the shape that fit per host in the model");
	for (int s = 0; s < r->nshapes; s++) {
		for (int m = 0; m < CAP_M_COUNT; m++) {
			if (!r->present[m])
				continue;
			g_string_append(o, "dmem_capacity_guests{shape=\"");
			plabel(o, r->shapes[s]->name);
			g_string_append_printf(o, "\",model=\"%s\"} %" G_GUINT64_FORMAT "\n", r->models[m].key,
					       r->fits[s * CAP_M_COUNT + m].per_host);
		}
	}
	return g_string_free(o, FALSE);
}
