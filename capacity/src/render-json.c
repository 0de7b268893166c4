// SPDX-License-Identifier: GPL-2.0-or-later
/* The report as JSON, of one host and of the fleet (json-glib). */
#include <json-glib/json-glib.h>

#include "render.h"

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
		if (n->dmem_present & DMEM_STAT_REQUESTED)
			jint(b, "dmem_requested_bytes", n->dmem_requested);
		jint(b, "dmem_free_bytes", n->dmem_free);
		if (n->dmem_present & DMEM_STAT_ZEROED)
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
		json_builder_add_double_value(b, cap_pct(meta, cap_host_ram(h)));
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
		g_autofree char *mx = cap_mix_text(r);

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
		g_autofree char *p = cap_recommend_param(r);

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
		const cap_shape *sh = cap_fleet_shape(f, n, s);

		json_builder_begin_object(b);
		jstr(b, "name", sh->name);
		json_builder_set_member_name(b, "fit");
		json_builder_begin_array(b);
		for (int m = 0; m < CAP_M_COUNT; m++) {
			uint64_t sum = 0;
			const char *key = NULL;

			for (int j = 0; j < n; j++) {
				gint64 v = cap_fleet_fit(&f[j], s, (cap_model_id)m);

				if (v < 0 || !cap_fleet_counts(&f[j]))
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
