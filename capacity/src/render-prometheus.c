// SPDX-License-Identifier: GPL-2.0-or-later
/* The report in node_exporter's textfile format, of one host and of the fleet. */
#include <stddef.h>

#include "render.h"

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
		unsigned need; /* DmemStatField: no sample where the host does not report it */
	} pool[] = {
		{ "dmem_pool_total_bytes", "dmem reserved on the node", offsetof(cap_node, dmem_total),
		  0 },
		{ "dmem_pool_requested_bytes", "what dmem= asked of the node",
		  offsetof(cap_node, dmem_requested), DMEM_STAT_REQUESTED },
		{ "dmem_pool_free_bytes", "dmem free on the node", offsetof(cap_node, dmem_free), 0 },
		{ "dmem_pool_zeroed_bytes", "free dmem already zeroed in the background on the node",
		  offsetof(cap_node, dmem_zeroed), DMEM_STAT_ZEROED },
		{ "dmem_pool_used_bytes", "dmem allocated on the node", offsetof(cap_node, dmem_used),
		  0 },
		{ "dmem_pool_pinned_bytes", "dmem pinned by devices and KVM on the node",
		  offsetof(cap_node, dmem_pinned), DMEM_STAT_PINNED },
		{ "dmem_pool_poisoned_bytes", "dmem quarantined after memory errors on the node",
		  offsetof(cap_node, dmem_poisoned), DMEM_STAT_POISONED },
	};
	GString *o = g_string_new(NULL);

	for (size_t k = 0; k < G_N_ELEMENTS(pool); k++) {
		pmetric(o, pool[k].name, pool[k].help);
		for (int j = 0; j < n; j++) {
			const cap_host *h = reps[j]->host;

			for (int i = 0; i < h->nnodes; i++) {
				const cap_node *nd = &h->node[i];

				if ((nd->dmem_present & pool[k].need) != pool[k].need)
					continue;
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
		g_autofree char *mx = cap_mix_text(r);

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


/* The hosts that were read, each once. */
char *cap_fleet_prometheus(const cap_fleet_host *f, int n)
{
	g_autofree const cap_report **reps = g_new0(const cap_report *, (size_t)n + 1);
	g_autofree const cap_remote **hosts = g_new0(const cap_remote *, (size_t)n + 1);
	int k = 0;

	for (int j = 0; j < n; j++) {
		if (!cap_fleet_counts(&f[j]))
			continue;
		reps[k] = &f[j].rep;
		hosts[k++] = &f[j].remote;
	}
	return prometheus(reps, hosts, k);
}
