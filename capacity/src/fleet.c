// SPDX-License-Identifier: GPL-2.0-or-later
/* --connect: one row per host and the fleet's total. */
#include <string.h>

#include "nodepool.h"
#include "render.h"

/* the models of the fleet table, and the peers that "gain" compares with */
static const cap_model_id fleet_models[] = {
	CAP_M_DMEM_FREE, CAP_M_DMEM_BOOTED, CAP_M_DMEM, CAP_M_2M_HVO, CAP_M_1G_HVO, CAP_M_4K,
};

bool cap_fleet_counts(const cap_fleet_host *f)
{
	return !f->error && f->same_as < 0;
}

/*
 * guests of shape @s in model @m on host @f, -1 where the model is absent;
 * @s one past the last shape is the --mix
 */
gint64 cap_fleet_fit(const cap_fleet_host *f, int s, cap_model_id m)
{
	if (f->error || s > f->rep.nshapes || !f->rep.present[m])
		return -1;
	if (s == f->rep.nshapes)
		return f->rep.mix ? (gint64)f->rep.mix_guests[m] : -1;
	return (gint64)f->rep.fits[s * CAP_M_COUNT + m].per_host;
}

/* shape @s of the first host that has it: hosts read the same shapes */
const cap_shape *cap_fleet_shape(const cap_fleet_host *f, int n, int s)
{
	for (int j = 0; j < n; j++)
		if (!f[j].error && s < f[j].rep.nshapes)
			return f[j].rep.shapes[s];
	return NULL;
}

/* dmem as booted against the better of hugetlbfs 2M and 1G with HVO */
static gint64 fleet_gain(const cap_fleet_host *f, int s)
{
	gint64 d = cap_fleet_fit(f, s, CAP_M_DMEM_BOOTED);

	if (d < 0)
		return G_MININT64;
	return d - MAX(cap_fleet_fit(f, s, CAP_M_2M_HVO), cap_fleet_fit(f, s, CAP_M_1G_HVO));
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
			mx = cap_mix_text(&f[j].rep);
	}
	nrows = nshapes + (mx != NULL);
	g_string_append_printf(o, "dmem-capacity: %d host%s over libvirt. dmem per node: the dir storage "
			       "pools " DMEM_NODEPOOL_PREFIX "<N> (statfs of a dmemfs nodes=N mount),\n"
			       "as last refreshed (--refresh: refreshed first); RAM modelled from each "
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
		const cap_shape *sh = cap_fleet_shape(f, n, s);
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
				gint64 v = cap_fleet_fit(h, s, fleet_models[m]);

				fleet_cell(o, v, 9);
				if (cap_fleet_counts(h) && v > 0)
					sum[m] += v;
			}
			if (g == G_MININT64)
				g_string_append_printf(o, " %9s", "no dmem");
			else
				g_string_append_printf(o, " %+9" G_GINT64_FORMAT, g);
			if (cap_fleet_counts(h) && g != G_MININT64) {
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
