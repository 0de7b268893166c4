// SPDX-License-Identifier: GPL-2.0-or-later
/* The report: every model and shape of one host computed once, for the renderers. */
#include <string.h>

#include "nodepool.h"
#include "render.h"

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
		uint64_t k = cap_sub0(h->node[i].ram, r->models[CAP_M_DMEM].pool[i]);

		r->keep_uneven |= i && k != r->keep;
		r->keep = MAX(r->keep, k);
	}
	r->keep = cap_round_up(r->keep, CAP_MIB);
	if (h->remote && !h->has_dmem)
		warn(r, g_strdup("no active storage pool named " DMEM_NODEPOOL_PREFIX "<N>: the dmem figures are zero"));
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

gboolean cap_mix_parse(const char *spec, unsigned int **weights, int *n, GError **error)
{
	g_auto(GStrv) w = g_strsplit(spec, ":", -1);
	int len = (int)g_strv_length(w);
	g_autofree unsigned int *out = g_new0(unsigned int, (size_t)len + 1);

	for (int k = 0; k < len; k++) {
		guint64 v;

		if (!g_ascii_string_to_unsigned(w[k], 10, 1, 1000, &v, NULL)) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "--mix %s: '%s' is not a whole number of guests from 1 to 1000", spec, w[k]);
			return FALSE;
		}
		out[k] = (unsigned int)v;
	}
	if (n)
		*n = len;
	if (weights)
		*weights = g_steal_pointer(&out);
	return TRUE;
}

gboolean cap_mix_count(const char *spec, int n, int nshapes, GError **error)
{
	if (n == nshapes && n >= 2)
		return TRUE;
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
		    "--mix %s: %d weight%s for %d guest shape%s (one a shape, at least two)", spec, n,
		    n == 1 ? "" : "s", nshapes, nshapes == 1 ? "" : "s");
	return FALSE;
}

gboolean cap_report_mix(cap_report *r, const char *spec, GError **error)
{
	int n;

	if (!cap_mix_parse(spec, &r->mix, &n, error))
		return FALSE;
	if (!cap_mix_count(spec, n, r->nshapes, error)) {
		g_clear_pointer(&r->mix, g_free);
		return FALSE;
	}
	for (int m = 0; m < CAP_M_COUNT; m++)
		if (r->present[m])
			cap_fit_mix(r->host, &r->models[m], r->shapes, r->mix, n, &r->mix_sets[m],
				    &r->mix_guests[m]);
	return TRUE;
}

/* "3:1" */
char *cap_mix_text(const cap_report *r)
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


double cap_pct(uint64_t a, uint64_t b)
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
char *cap_recommend_param(const cap_report *r)
{
	g_autofree char *k = param_size(r->keep), *a = param_size(cap_dmem_align(r->host));

	return g_strdup_printf("!%s:%s", k, a);
}
