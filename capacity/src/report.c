// SPDX-License-Identifier: GPL-2.0
/* The report: a terminal table, JSON and an SVG bar chart. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "capacity.h"

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

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
		uint64_t k = sub0(h->node[i].ram, r->models[CAP_M_DMEM].pool[i]);

		r->keep_uneven |= i && k != r->keep;
		r->keep = MAX(r->keep, k);
	}
	r->keep = cap_round_up(r->keep, CAP_MIB);
	if (h->remote && !h->has_dmem)
		warn(r, g_strdup("no active storage pool named " CAP_POOL_PREFIX "<N>: the dmem figures are zero"));
	else if (h->live && !h->has_dmem)
		warn(r, g_strdup("no dmem pool found (sys/kernel/mm/dmem): the dmem figures are zero"));
	else if (h->live && !cap_host_dmem_booted(h))
		warn(r, g_strdup("no dmem reserved on any node (booted without dmem=): the reserve is "
				 "not measured and there is no pool as booted"));
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

gboolean cap_report_mix(cap_report *r, const char *spec, GError **error)
{
	g_auto(GStrv) w = g_strsplit(spec, ":", -1);
	int n = (int)g_strv_length(w);

	if (n != r->nshapes || n < 2) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "--mix %s: %d weight%s for %d guest shape%s (one a shape, at least two)", spec,
			    n, n == 1 ? "" : "s", r->nshapes, r->nshapes == 1 ? "" : "s");
		return FALSE;
	}
	r->mix = g_new0(unsigned int, (size_t)n);
	for (int k = 0; k < n; k++) {
		guint64 v;

		if (!g_ascii_string_to_unsigned(w[k], 10, 1, 1000, &v, NULL)) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "--mix %s: '%s' is not a whole number of guests from 1 to 1000", spec, w[k]);
			g_clear_pointer(&r->mix, g_free);
			return FALSE;
		}
		r->mix[k] = (unsigned int)v;
	}
	for (int m = 0; m < CAP_M_COUNT; m++)
		if (r->present[m])
			cap_fit_mix(r->host, &r->models[m], r->shapes, r->mix, n, &r->mix_sets[m],
				    &r->mix_guests[m]);
	return TRUE;
}

/* "3:1" */
static char *mix_text(const cap_report *r)
{
	GString *s = g_string_new(NULL);

	for (int k = 0; k < r->nshapes; k++)
		g_string_append_printf(s, "%s%u", k ? ":" : "", r->mix[k]);
	return g_string_free(s, FALSE);
}

void cap_report_clear(cap_report *r)
{
	g_free(r->mix);
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
		/* a node no bigger than what every node keeps gets no dmem */
		uint64_t pool = cap_round_down(sub0(h->node[i].ram, r->keep), cap_dmem_align(h));
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
			cell(o, n->dmem_zeroed, n->has_zeroed ? ds : '-');
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
	if (r->mix) {
		g_autofree char *mx = mix_text(r);
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
static void jint(JsonBuilder *b, const char *key, uint64_t v)
{
	json_builder_set_member_name(b, key);
	if (v > (uint64_t)G_MAXINT64)
		json_builder_add_double_value(b, (double)v);
	else
		json_builder_add_int_value(b, (gint64)v);
}

static void jstr(JsonBuilder *b, const char *key, const char *v)
{
	json_builder_set_member_name(b, key);
	json_builder_add_string_value(b, v);
}

static void json_host(JsonBuilder *b, const cap_host *h)
{
	json_builder_set_member_name(b, "host");
	json_builder_begin_object(b);
	jint(b, "ram_bytes", cap_host_ram(h));
	if (h->live && h->has_memtotal)
		jint(b, "memtotal_bytes", h->memtotal);
	jint(b, "reserve_bytes", h->reserve);
	jstr(b, "reserve_source",
	     h->reserve_given ? "given" : h->reserve_measured ? "measured" : "default");
	jint(b, "dmem_pagesize", h->dmem_pagesize);
	jint(b, "dpage_meta_bytes", h->dpage_meta);
	json_builder_set_member_name(b, "nodes");
	json_builder_begin_array(b);
	for (int i = 0; i < h->nnodes; i++) {
		const cap_node *n = &h->node[i];

		json_builder_begin_object(b);
		jint(b, "node", (uint64_t)n->id);
		jint(b, "ram_bytes", n->ram);
		jstr(b, "ram_source", cap_source_name(n->ram_src));
		if (n->has_memtotal)
			jint(b, "memtotal_bytes", n->memtotal);
		if (n->has_blocks)
			jint(b, "memory_blocks_bytes", n->blocks_bytes);
		jint(b, "reserve_bytes", cap_reserve_share(h, i));
		jint(b, "dmem_total_bytes", n->dmem_total);
		if (n->dmem_requested)
			jint(b, "dmem_requested_bytes", n->dmem_requested);
		jint(b, "dmem_free_bytes", n->dmem_free);
		if (n->has_zeroed)
			jint(b, "dmem_zeroed_bytes", n->dmem_zeroed);
		jint(b, "dmem_used_bytes", n->dmem_used);
		jstr(b, "dmem_source", cap_source_name(n->dmem_src));
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_end_object(b);
}

static void json_models(JsonBuilder *b, const cap_report *r)
{
	const cap_host *h = r->host;

	json_builder_set_member_name(b, "models");
	json_builder_begin_array(b);
	for (int m = 0; m < CAP_M_COUNT; m++) {
		const cap_model *md = &r->models[m];
		uint64_t meta = cap_model_meta_total(h, md);

		if (!r->present[m])
			continue;
		json_builder_begin_object(b);
		jstr(b, "id", md->key);
		jstr(b, "name", md->name);
		jint(b, "page_bytes", md->page);
		jint(b, "metadata_bytes", meta);
		json_builder_set_member_name(b, "metadata_percent");
		json_builder_add_double_value(b, pct(meta, cap_host_ram(h)));
		jstr(b, "metadata_source", cap_source_name(md->meta_src));
		jint(b, "pool_bytes", cap_model_pool_total(h, md));
		jstr(b, "pool_source", cap_source_name(md->pool_src));
		json_builder_set_member_name(b, "nodes");
		json_builder_begin_array(b);
		for (int i = 0; i < h->nnodes; i++) {
			json_builder_begin_object(b);
			jint(b, "node", (uint64_t)h->node[i].id);
			jint(b, "metadata_bytes", md->meta[i]);
			jint(b, "pool_bytes", md->pool[i]);
			jint(b, "host_left_bytes", md->host_left[i]);
			json_builder_end_object(b);
		}
		json_builder_end_array(b);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
}

static void json_shape(JsonBuilder *b, const cap_report *r, int s)
{
	const cap_host *h = r->host;
	const cap_shape *sh = r->shapes[s];

	json_builder_begin_object(b);
	jstr(b, "name", sh->name);
	jstr(b, "origin", sh->origin);
	jint(b, "bytes", cap_shape_total(sh));
	json_builder_set_member_name(b, "cells");
	json_builder_begin_array(b);
	for (int c = 0; c < sh->ncells; c++) {
		json_builder_begin_object(b);
		jint(b, "cell", (uint64_t)c);
		jint(b, "bytes", sh->cell[c].bytes);
		json_builder_set_member_name(b, "host_nodes");
		json_builder_begin_array(b);
		for (int i = 0; i < h->nnodes; i++)
			if (sh->cell[c].mask & (UINT64_C(1) << i))
				json_builder_add_int_value(b, h->node[i].id);
		json_builder_end_array(b);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_set_member_name(b, "fit");
	json_builder_begin_array(b);
	for (int m = 0; m < CAP_M_COUNT; m++) {
		const cap_fit_result *f = &r->fits[s * CAP_M_COUNT + m];

		if (!r->present[m])
			continue;
		json_builder_begin_object(b);
		jstr(b, "model", r->models[m].key);
		jint(b, "per_host", f->per_host);
		jstr(b, "source", cap_source_name(CAP_SRC_MODELLED));
		jstr(b, "pool_source", cap_source_name(r->models[m].pool_src));
		json_builder_set_member_name(b, "cells_per_node");
		json_builder_begin_array(b);
		for (int i = 0; i < h->nnodes; i++) {
			json_builder_begin_object(b);
			jint(b, "node", (uint64_t)h->node[i].id);
			jint(b, "cells", f->cells_on[i]);
			json_builder_end_object(b);
		}
		json_builder_end_array(b);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_end_object(b);
}

/* host, models, shapes, recommend and warnings: the members of one report */
static void json_report(JsonBuilder *b, const cap_report *r)
{
	json_host(b, r->host);
	json_models(b, r);
	json_builder_set_member_name(b, "shapes");
	json_builder_begin_array(b);
	for (int s = 0; s < r->nshapes; s++)
		json_shape(b, r, s);
	json_builder_end_array(b);
	if (r->mix) {
		g_autofree char *mx = mix_text(r);

		json_builder_set_member_name(b, "mix");
		json_builder_begin_object(b);
		jstr(b, "ratio", mx);
		json_builder_set_member_name(b, "fit");
		json_builder_begin_array(b);
		for (int m = 0; m < CAP_M_COUNT; m++) {
			if (!r->present[m])
				continue;
			json_builder_begin_object(b);
			jstr(b, "model", r->models[m].key);
			jint(b, "sets", r->mix_sets[m]);
			jint(b, "guests", r->mix_guests[m]);
			json_builder_end_object(b);
		}
		json_builder_end_array(b);
		json_builder_end_object(b);
	}
	if (r->recommend) {
		g_autofree char *p = recommend_param(r);

		json_builder_set_member_name(b, "recommend");
		json_builder_begin_object(b);
		jstr(b, "dmem", p);
		jint(b, "keep_bytes", r->keep);
		jint(b, "align_bytes", cap_dmem_align(r->host));
		json_builder_set_member_name(b, "keep_uneven");
		json_builder_add_boolean_value(b, r->keep_uneven);
		json_builder_end_object(b);
	}
	json_builder_set_member_name(b, "warnings");
	json_builder_begin_array(b);
	for (int i = 0; i < r->nwarnings; i++)
		json_builder_add_string_value(b, r->warnings[i]);
	json_builder_end_array(b);
}

static char *json_text(JsonBuilder *b)
{
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonNode) root = json_builder_get_root(b);
	g_autofree char *text = NULL;

	json_generator_set_root(gen, root);
	text = json_generator_to_data(gen, NULL);
	return g_strconcat(text, "\n", NULL);
}

char *cap_report_json(const cap_report *r)
{
	g_autoptr(JsonBuilder) b = json_builder_new();

	json_builder_begin_object(b);
	jstr(b, "tool", "dmem-capacity");
	jint(b, "format", 1);
	jstr(b, "mode", r->host->live ? "live" : "planning");
	json_report(b, r);
	json_builder_end_object(b);
	return json_text(b);
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

/* host="NAME",uri="URI", of a fleet host; nothing for one host */
static void phost(GString *o, const cap_remote *h)
{
	if (!h)
		return;
	g_string_append(o, "host=\"");
	plabel(o, h->hostname ? h->hostname : h->uri);
	g_string_append(o, "\",uri=\"");
	plabel(o, h->uri);
	g_string_append(o, "\",");
}

/*
 * node_exporter's textfile collector format (write it to a .prom file in
 * its --collector.textfile.directory): the pool per node, and how many
 * guests of each shape fit in each model, of each of @n reports, labelled
 * with their host when @hosts is given.  Every metric's samples follow its
 * HELP and TYPE, as the format wants.
 */
static char *prometheus(const cap_report *const *reps, const cap_remote *const *hosts, int n)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} pool[] = {
		{ "dmem_pool_total_bytes", "dmem reserved on the node", offsetof(cap_node, dmem_total) },
		{ "dmem_pool_requested_bytes", "what dmem= asked of the node",
		  offsetof(cap_node, dmem_requested) },
		{ "dmem_pool_free_bytes", "dmem free on the node", offsetof(cap_node, dmem_free) },
		{ "dmem_pool_zeroed_bytes", "free dmem already zeroed in the background on the node",
		  offsetof(cap_node, dmem_zeroed) },
		{ "dmem_pool_used_bytes", "dmem allocated on the node", offsetof(cap_node, dmem_used) },
		{ "dmem_pool_pinned_bytes", "dmem pinned by devices and KVM on the node",
		  offsetof(cap_node, dmem_pinned) },
		{ "dmem_pool_poisoned_bytes", "dmem quarantined after memory errors on the node",
		  offsetof(cap_node, dmem_poisoned) },
	};
	GString *o = g_string_new(NULL);

	for (size_t k = 0; k < G_N_ELEMENTS(pool); k++) {
		pmetric(o, pool[k].name, pool[k].help);
		for (int j = 0; j < n; j++) {
			const cap_host *h = reps[j]->host;

			for (int i = 0; i < h->nnodes; i++) {
				const cap_node *nd = &h->node[i];

				g_string_append_printf(o, "%s{", pool[k].name);
				phost(o, hosts ? hosts[j] : NULL);
				g_string_append_printf(o, "node=\"%d\"} %" G_GUINT64_FORMAT "\n", nd->id,
						       *(const uint64_t *)((const char *)nd + pool[k].off));
			}
		}
	}
	pmetric(o, "dmem_capacity_reserve_bytes", "host reserve that every model leaves");
	for (int j = 0; j < n; j++) {
		g_string_append(o, "dmem_capacity_reserve_bytes");
		if (hosts) {
			g_string_append_c(o, '{');
			phost(o, hosts[j]);
			g_string_truncate(o, o->len - 1); /* the trailing comma */
			g_string_append_c(o, '}');
		}
		g_string_append_printf(o, " %" G_GUINT64_FORMAT "\n", reps[j]->host->reserve);
	}
	pmetric(o, "dmem_capacity_guests", "guests of the shape that fit per host in the model");
	for (int j = 0; j < n; j++) {
		const cap_report *r = reps[j];

		for (int s = 0; s < r->nshapes; s++) {
			for (int m = 0; m < CAP_M_COUNT; m++) {
				if (!r->present[m])
					continue;
				g_string_append(o, "dmem_capacity_guests{");
				phost(o, hosts ? hosts[j] : NULL);
				g_string_append(o, "shape=\"");
				plabel(o, r->shapes[s]->name);
				g_string_append_printf(o, "\",model=\"%s\"} %" G_GUINT64_FORMAT "\n",
						       r->models[m].key,
						       r->fits[s * CAP_M_COUNT + m].per_host);
			}
		}
	}
	for (int j = 0; j < n && reps[0]->mix; j++) {
		const cap_report *r = reps[j];
		g_autofree char *mx = mix_text(r);

		if (!j)
			pmetric(o, "dmem_capacity_mix_guests",
				"guests of the --mix ratio that fit per host in the model");
		for (int m = 0; m < CAP_M_COUNT; m++) {
			if (!r->present[m])
				continue;
			g_string_append(o, "dmem_capacity_mix_guests{");
			phost(o, hosts ? hosts[j] : NULL);
			g_string_append_printf(o, "mix=\"%s\",model=\"%s\"} %" G_GUINT64_FORMAT "\n", mx,
					       r->models[m].key, r->mix_guests[m]);
		}
	}
	return g_string_free(o, FALSE);
}

char *cap_report_prometheus(const cap_report *r)
{
	return prometheus(&r, NULL, 1);
}

/* -------------------------------------------------------------------- */
/* --connect: one row per host, and the fleet's total                     */
/* -------------------------------------------------------------------- */

/* the models of the fleet table, and the peers that "gain" compares with */
static const cap_model_id fleet_models[] = {
	CAP_M_DMEM_FREE, CAP_M_DMEM_BOOTED, CAP_M_DMEM, CAP_M_2M_HVO, CAP_M_1G_HVO, CAP_M_4K,
};

static bool fleet_counts(const cap_fleet_host *f)
{
	return !f->error && f->same_as < 0;
}

/*
 * guests of shape @s in model @m on host @f, -1 where the model is absent;
 * @s one past the last shape is the --mix
 */
static gint64 fleet_fit(const cap_fleet_host *f, int s, cap_model_id m)
{
	if (f->error || s > f->rep.nshapes || !f->rep.present[m])
		return -1;
	if (s == f->rep.nshapes)
		return f->rep.mix ? (gint64)f->rep.mix_guests[m] : -1;
	return (gint64)f->rep.fits[s * CAP_M_COUNT + m].per_host;
}

/* shape @s of the first host that has it: hosts read the same shapes */
static const cap_shape *fleet_shape(const cap_fleet_host *f, int n, int s)
{
	for (int j = 0; j < n; j++)
		if (!f[j].error && s < f[j].rep.nshapes)
			return f[j].rep.shapes[s];
	return NULL;
}

/* dmem as booted against the better of hugetlbfs 2M and 1G with HVO */
static gint64 fleet_gain(const cap_fleet_host *f, int s)
{
	gint64 d = fleet_fit(f, s, CAP_M_DMEM_BOOTED);

	if (d < 0)
		return G_MININT64;
	return d - MAX(fleet_fit(f, s, CAP_M_2M_HVO), fleet_fit(f, s, CAP_M_1G_HVO));
}

static void fleet_cell(GString *o, gint64 v, int width)
{
	if (v < 0)
		g_string_append_printf(o, " %*s", width, "-");
	else
		g_string_append_printf(o, " %*" G_GINT64_FORMAT, width, v);
}

char *cap_fleet_table(const cap_fleet_host *f, int n)
{
	GString *o = g_string_new(NULL);
	int nshapes = 0, nrows;
	g_autofree char *mx = NULL;

	for (int j = 0; j < n; j++) {
		if (f[j].error)
			continue;
		nshapes = MAX(nshapes, f[j].rep.nshapes);
		if (f[j].rep.mix && !mx)
			mx = mix_text(&f[j].rep);
	}
	nrows = nshapes + (mx != NULL);
	g_string_append_printf(o, "dmem-capacity: %d host%s over libvirt. dmem per node: the dir storage "
			       "pools " CAP_POOL_PREFIX "<N> (statfs of a dmemfs nodes=N mount),\n"
			       "refreshed first on read-write connections; RAM modelled from each "
			       "node's MemTotal; reserve measured per host.\n\n",
			       n, n == 1 ? "" : "s");
	g_string_append_printf(o, "%-3s %-16s %-28s %5s %12s %12s %12s %12s  %s\n", "#", "host", "uri",
			       "nodes", "RAM", "reserve", "dmem total", "dmem free", "pools");
	for (int j = 0; j < n; j++) {
		const cap_fleet_host *h = &f[j];
		uint64_t total = 0, free = 0;
		g_autofree char *ram = NULL, *res = NULL, *dt = NULL, *df = NULL;

		g_string_append_printf(o, "%-3d %-16s %-28s", j + 1,
				       h->remote.hostname ? h->remote.hostname : "?", h->remote.uri);
		if (h->error) {
			g_string_append_printf(o, "  cannot be read: %s\n", h->error);
			continue;
		}
		for (int i = 0; i < h->host.nnodes; i++) {
			total += h->host.node[i].dmem_total;
			free += h->host.node[i].dmem_free;
		}
		ram = cap_format_size(cap_host_ram(&h->host));
		res = cap_format_size(h->host.reserve);
		dt = cap_format_size(total);
		df = cap_format_size(free);
		g_string_append_printf(o, " %5d %12s %12s %12s %12s  %d%s", h->host.nnodes, ram, res,
				       dt, df, h->remote.pools,
				       h->remote.refreshed ? ", refreshed" : ", as last refreshed");
		if (h->same_as >= 0)
			g_string_append_printf(o, "; same host as #%d, not in the total",
					       h->same_as + 1);
		g_string_append(o, "\n");
	}

	for (int s = 0; s < nrows; s++) {
		const cap_shape *sh = fleet_shape(f, n, s);
		gint64 sum[G_N_ELEMENTS(fleet_models)] = { 0 }, gain = 0;
		bool has_gain = false;

		if (sh)
			g_string_append_printf(o, "\nguest \"%s\" (%s): guests that fit per host\n",
					       sh->name, sh->origin);
		else
			g_string_append_printf(o, "\nmix %s of the shapes: guests that fit per host\n", mx);
		g_string_append_printf(o, "%-3s %-16s %9s %9s %9s %9s %9s %9s %9s\n", "#", "host",
				       "dmem free", "dmem", "dmem eq.", "2M+HVO", "1G+HVO", "4K", "gain");
		for (int j = 0; j < n; j++) {
			const cap_fleet_host *h = &f[j];
			gint64 g = fleet_gain(h, s);

			if (h->error)
				continue;
			g_string_append_printf(o, "%-3d %-16s", j + 1,
					       h->remote.hostname ? h->remote.hostname : "?");
			for (size_t m = 0; m < G_N_ELEMENTS(fleet_models); m++) {
				gint64 v = fleet_fit(h, s, fleet_models[m]);

				fleet_cell(o, v, 9);
				if (fleet_counts(h) && v > 0)
					sum[m] += v;
			}
			if (g == G_MININT64)
				g_string_append_printf(o, " %9s", "no dmem");
			else
				g_string_append_printf(o, " %+9" G_GINT64_FORMAT, g);
			if (fleet_counts(h) && g != G_MININT64) {
				gain += g;
				has_gain = true;
			}
			g_string_append(o, "\n");
		}
		g_string_append_printf(o, "%-3s %-16s", "", "total");
		for (size_t m = 0; m < G_N_ELEMENTS(fleet_models); m++)
			fleet_cell(o, sum[m], 9);
		if (has_gain)
			g_string_append_printf(o, " %+9" G_GINT64_FORMAT "\n", gain);
		else
			g_string_append_printf(o, " %9s\n", "-");
	}
	if (!nshapes)
		g_string_append(o, "\n(no guest shape given: use --guest, --xml or --libvirt)\n");
	g_string_append(o, "\ncolumns: dmem free = in the free pool now; dmem = the pool as booted; dmem eq. = "
			   "the pool that the same\nreserve would leave; gain = dmem minus the better of "
			   "hugetlbfs 2M and 1G with HVO, on the same reserve.\n");
	for (int j = 0; j < n; j++) {
		for (int i = 0; !f[j].error && i < f[j].rep.nwarnings; i++)
			g_string_append_printf(o, "warning: #%d %s: %s\n", j + 1, f[j].remote.uri,
					       f[j].rep.warnings[i]);
	}
	return g_string_free(o, FALSE);
}

char *cap_fleet_json(const cap_fleet_host *f, int n)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	int nshapes = 0;

	json_builder_begin_object(b);
	jstr(b, "tool", "dmem-capacity");
	jint(b, "format", 1);
	jstr(b, "mode", "fleet");
	json_builder_set_member_name(b, "hosts");
	json_builder_begin_array(b);
	for (int j = 0; j < n; j++) {
		const cap_fleet_host *h = &f[j];

		json_builder_begin_object(b);
		jstr(b, "uri", h->remote.uri);
		if (h->remote.hostname)
			jstr(b, "hostname", h->remote.hostname);
		if (h->remote.uuid)
			jstr(b, "uuid", h->remote.uuid);
		if (h->error) {
			jstr(b, "error", h->error);
		} else {
			json_builder_set_member_name(b, "refreshed");
			json_builder_add_boolean_value(b, h->remote.refreshed);
			jint(b, "dmem_pools", (uint64_t)h->remote.pools);
			if (h->same_as >= 0)
				jint(b, "same_host_as", (uint64_t)h->same_as);
			json_report(b, &h->rep);
			nshapes = MAX(nshapes, h->rep.nshapes);
		}
		json_builder_end_object(b);
	}
	json_builder_end_array(b);

	/* the total: every host counted once */
	json_builder_set_member_name(b, "total");
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "shapes");
	json_builder_begin_array(b);
	for (int s = 0; s < nshapes; s++) {
		const cap_shape *sh = fleet_shape(f, n, s);

		json_builder_begin_object(b);
		jstr(b, "name", sh->name);
		json_builder_set_member_name(b, "fit");
		json_builder_begin_array(b);
		for (int m = 0; m < CAP_M_COUNT; m++) {
			uint64_t sum = 0;
			const char *key = NULL;

			for (int j = 0; j < n; j++) {
				gint64 v = fleet_fit(&f[j], s, (cap_model_id)m);

				if (v < 0 || !fleet_counts(&f[j]))
					continue;
				sum += (uint64_t)v;
				key = f[j].rep.models[m].key;
			}
			if (!key)
				continue;
			json_builder_begin_object(b);
			jstr(b, "model", key);
			jint(b, "guests", sum);
			json_builder_end_object(b);
		}
		json_builder_end_array(b);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_end_object(b);
	json_builder_end_object(b);
	return json_text(b);
}

/* The hosts that were read, each once. */
char *cap_fleet_prometheus(const cap_fleet_host *f, int n)
{
	g_autofree const cap_report **reps = g_new0(const cap_report *, (size_t)n + 1);
	g_autofree const cap_remote **hosts = g_new0(const cap_remote *, (size_t)n + 1);
	int k = 0;

	for (int j = 0; j < n; j++) {
		if (!fleet_counts(&f[j]))
			continue;
		reps[k] = &f[j].rep;
		hosts[k++] = &f[j].remote;
	}
	return prometheus(reps, hosts, k);
}
