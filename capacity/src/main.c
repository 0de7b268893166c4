// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmem-capacity: how many guests of a shape fit per node and per host with
 * dmem, versus struct-page memory and hugetlbfs 2M/1G with and without HVO.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity.h"

#define VERSION "1.0"

static const char summary[] =
	"  dmem-capacity [--root DIR | --host node0=SIZE,... [--dmem node0=SIZE,...]] [--guest ...]...\n"
	"  dmem-capacity --connect URI [--connect URI]... [--refresh] [--guest ...]...\n"
	"\n"
	"Without --host the live host under --root (default /) is read; --connect reads\n"
	"each host over libvirt, read-only (dmem from its storage pools dmem-node<N>, as\n"
	"last refreshed; --refresh connects read-write and refreshes them first).\n"
	"Sizes take binary units B, K, M, G, T, P.  See dmem-capacity(1).";

/* every failure line starts so */
#define PREFIX "dmem-capacity: error"

static void G_GNUC_NORETURN die(int code, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* one line, whatever the message carried */
	dmem_cli_failv(PREFIX, code, fmt, ap);
	va_end(ap);
	exit(code);
}

typedef struct {
	char *root, *host, *dmem, *reserve, *pagesize, *dpage_meta, *svg, *mix;
	char **guests, **xmls, **connects;
	gboolean json, libvirt, recommend, prometheus, refresh, version;
	char *libvirt_uri;
} opts;

/* --libvirt [URI]: the URI is optional; @data is the options (the group's) */
static gboolean libvirt_arg(const char *name, const char *value, gpointer data, GError **error)
{
	opts *o = data;

	(void)name, (void)error;
	o->libvirt = TRUE;
	g_free(o->libvirt_uri);
	o->libvirt_uri = g_strdup(value);
	return TRUE;
}

static void parse_args(opts *o, int argc, char **argv)
{
	const GOptionEntry entries[] = {
		{ "root", 0, 0, G_OPTION_ARG_FILENAME, &o->root, "read the live host under DIR", "DIR" },
		{ "host", 0, 0, G_OPTION_ARG_STRING, &o->host, "a planned host's RAM per node",
		  "node0=SIZE,..." },
		{ "dmem", 0, 0, G_OPTION_ARG_STRING, &o->dmem, "its dmem per node", "node0=SIZE,..." },
		{ "reserve", 0, 0, G_OPTION_ARG_STRING, &o->reserve, "what the host keeps", "SIZE" },
		{ "dmem-pagesize", 0, 0, G_OPTION_ARG_STRING, &o->pagesize, "dpage size", "4K|2M|1G" },
		{ "dpage-meta", 0, 0, G_OPTION_ARG_STRING, &o->dpage_meta,
		  "metadata bytes per dpage", "BYTES" },
		{ "guest", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->guests, "a guest shape (repeatable)",
		  "SIZE[@NODESET][+SIZE[@NODESET]...]" },
		{ "xml", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o->xmls,
		  "a guest shape from domain XML (repeatable)", "FILE" },
		{ "libvirt", 0, G_OPTION_FLAG_OPTIONAL_ARG, G_OPTION_ARG_CALLBACK, libvirt_arg,
		  "the shapes of the domains libvirt defines", "[URI]" },
		{ "connect", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->connects,
		  "a host to read over libvirt (repeatable)", "URI" },
		{ "refresh", 0, 0, G_OPTION_ARG_NONE, &o->refresh,
		  "with --connect: read-write, refresh the dmem pools first", NULL },
		{ "mix", 0, 0, G_OPTION_ARG_STRING, &o->mix, "guests of each shape in a set", "W:W..." },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &o->json, "JSON output", NULL },
		{ "prometheus", 0, 0, G_OPTION_ARG_NONE, &o->prometheus,
		  "node_exporter textfile output", NULL },
		{ "svg", 0, 0, G_OPTION_ARG_FILENAME, &o->svg, "also write a bar chart", "FILE" },
		{ "recommend", 0, 0, G_OPTION_ARG_NONE, &o->recommend, "the dmem= to boot with", NULL },
		{ "version", 0, 0, G_OPTION_ARG_NONE, &o->version, "print the version", NULL },
		G_OPTION_ENTRY_NULL
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
	GOptionGroup *group = g_option_group_new(NULL, NULL, NULL, o, NULL);
	g_autoptr(GError) e = NULL;

	g_option_context_set_summary(ctx, summary);
	g_option_group_add_entries(group, entries);
	g_option_context_set_main_group(ctx, group);
	if (!g_option_context_parse(ctx, &argc, &argv, &e))
		die(CAP_EXIT_USAGE, "%s (see --help)", e->message);
	/* "--libvirt URI": GOption takes an optional value only as --libvirt=URI */
	if (o->libvirt && !o->libvirt_uri && argc == 2 && argv[1][0] != '-') {
		o->libvirt_uri = g_strdup(argv[1]);
		argc--;
	}
	if (argc > 1)
		die(CAP_EXIT_USAGE, "unknown argument '%s' (see --help)", argv[1]);
	if (o->version) {
		puts("dmem-capacity " VERSION);
		exit(0);
	}
	/* before anything connects or reads a host */
	if (o->json && o->prometheus)
		die(CAP_EXIT_USAGE, "--json and --prometheus exclude each other");
	if (o->refresh && !o->connects)
		die(CAP_EXIT_USAGE, "--refresh is for --connect");
	if (o->mix) {
		int n, shapes = (int)((o->guests ? g_strv_length(o->guests) : 0) +
				      (o->xmls ? g_strv_length(o->xmls) : 0));

		/* the count too, where no libvirt has to be asked for the shapes */
		if (!cap_mix_parse(o->mix, NULL, &n, &e) ||
		    (!o->libvirt && !cap_mix_count(o->mix, n, shapes, &e)))
			die(CAP_EXIT_USAGE, "%s", e->message);
	}
}

/* What the options say of any host: page size, reserve, dpage metadata. */
static void host_options(cap_host *h, const opts *o)
{
	g_autoptr(GError) e = NULL;

	cap_host_init(h);
	if (o->pagesize && !dmem_pagesize_parse(o->pagesize, &h->dmem_pagesize))
		die(CAP_EXIT_USAGE, "--dmem-pagesize: '%s' is not 4K, 2M or 1G", o->pagesize);
	if (o->reserve) {
		/* 0 is allowed here: "no reserve" */
		if (!strcmp(o->reserve, "0"))
			h->reserve = 0;
		else if (!cap_parse_size(o->reserve, &h->reserve, &e))
			die(CAP_EXIT_USAGE, "--reserve: %s", e->message);
		h->reserve_given = true;
	}
	if (o->dpage_meta &&
	    !g_ascii_string_to_unsigned(o->dpage_meta, 10, 0, 4096, &h->dpage_meta, NULL))
		die(CAP_EXIT_USAGE, "--dpage-meta: '%s' is not a byte count 0..4096", o->dpage_meta);
}

static void build_host(cap_host *h, const opts *o)
{
	g_autoptr(GError) e = NULL;

	host_options(h, o);
	if (o->dmem && !o->host)
		die(CAP_EXIT_USAGE, "--dmem describes a planned host and needs --host");
	if (o->host) {
		if (o->root)
			die(CAP_EXIT_USAGE, "--root and --host exclude each other");
		if (!cap_parse_host_spec(h, o->host, &e) ||
		    (o->dmem && !cap_parse_dmem_spec(h, o->dmem, &e)) || !cap_host_validate(h, &e))
			die(CAP_EXIT_USAGE, "%s", e->message);
		h->has_dmem_spec = o->dmem != NULL;
	} else {
		if (!cap_host_from_root(h, o->root ? o->root : "/", &e))
			die(CAP_EXIT_ERROR, "%s", e->message);
		/*
		 * dmem stats but a zero pool on every node: a kernel booted
		 * without dmem=.  Only --recommend (what to boot with) makes
		 * sense; everything else would report on a pool that is not there.
		 */
		if (h->has_dmem && !cap_host_dmem_booted(h) && !o->recommend)
			die(CAP_EXIT_ERROR, "no dmem reserved on this host (every node's pool is 0): "
			    "boot with dmem= (--recommend gives a value)");
		cap_host_measure_reserve(h);
	}
}

/* The guest shapes of the options, against @h's nodes. */
static GPtrArray *build_shapes(const cap_host *h, const opts *o)
{
	GPtrArray *shapes = g_ptr_array_new_with_free_func((GDestroyNotify)cap_shape_free);
	g_autoptr(GError) e = NULL;

	for (guint i = 0; o->guests && o->guests[i]; i++) {
		cap_shape *s = cap_shape_from_spec(h, o->guests[i], &e);

		if (!s)
			die(CAP_EXIT_USAGE, "%s", e->message);
		g_ptr_array_add(shapes, s);
	}
	for (guint i = 0; o->xmls && o->xmls[i]; i++) {
		cap_shape *s = cap_shape_from_xml_file(h, o->xmls[i], &e);

		if (!s)
			die(CAP_EXIT_USAGE, "%s", e->message);
		g_ptr_array_add(shapes, s);
	}
	if (o->libvirt && !cap_shapes_from_libvirt(h, o->libvirt_uri, shapes, &e)) {
		bool env = g_error_matches(e, CAP_ERROR, CAP_ERROR_ENVIRONMENT);

		die(env ? CAP_EXIT_ERROR : CAP_EXIT_USAGE, "%s", e->message);
	}
	return shapes;
}

static int print(char *out)
{
	fputs(out, stdout);
	g_free(out);
	return fflush(stdout) ? CAP_EXIT_ERROR : CAP_EXIT_OK;
}

/*
 * --connect: every host read over libvirt, a report each.  A host that
 * cannot be read gets one stderr line and an error row, the others are
 * still reported, and the exit status is 1.
 */
static int run_fleet(const opts *o)
{
	int n = (int)g_strv_length(o->connects), rc, failed = 0;
	g_autofree cap_fleet_host *f = g_new0(cap_fleet_host, (size_t)n);

	if (o->host || o->root || o->dmem || o->svg)
		die(CAP_EXIT_USAGE, "--connect reads live hosts: it excludes --host, --dmem, --root and --svg");
	for (int j = 0; j < n; j++) {
		cap_fleet_host *h = &f[j];
		g_autoptr(GError) e = NULL;

		h->remote.uri = o->connects[j];
		h->remote.refresh = o->refresh;
		h->same_as = -1;
		host_options(&h->host, o);
		if (!cap_host_from_libvirt(&h->host, &h->remote, &e)) {
			h->error = g_strdup(e->message);
			dmem_cli_error(PREFIX, e); /* one line, whatever the daemon said */
			failed++;
			continue;
		}
		cap_host_measure_reserve(&h->host);
		for (int k = 0; k < j && h->remote.uuid; k++)
			if (!f[k].error && f[k].same_as < 0 && !g_strcmp0(f[k].remote.uuid, h->remote.uuid))
				h->same_as = k;
		h->shapes = build_shapes(&h->host, o);
		cap_report_build(&h->rep, &h->host, (cap_shape **)h->shapes->pdata, (int)h->shapes->len);
		h->rep.recommend = o->recommend;
		if (o->mix && !cap_report_mix(&h->rep, o->mix, &e))
			die(CAP_EXIT_USAGE, "%s", e->message);
	}
	rc = print(o->json ? cap_fleet_json(f, n) :
		   o->prometheus ? cap_fleet_prometheus(f, n) : cap_fleet_table(f, n));
	for (int j = 0; j < n; j++) {
		if (!f[j].error) {
			cap_report_clear(&f[j].rep);
			g_ptr_array_free(f[j].shapes, TRUE);
		}
		g_free(f[j].error);
		g_free(f[j].remote.hostname);
		g_free(f[j].remote.uuid);
	}
	return failed ? CAP_EXIT_ERROR : rc;
}

int main(int argc, char **argv)
{
	opts o = { 0 };
	cap_host host;
	cap_report rep;
	g_autoptr(GPtrArray) shapes = NULL;
	g_autoptr(GError) e = NULL;
	int rc;

	parse_args(&o, argc, argv);
	if (o.connects) {
		rc = run_fleet(&o);
		goto out;
	}
	build_host(&host, &o);
	shapes = build_shapes(&host, &o);
	cap_report_build(&rep, &host, (cap_shape **)shapes->pdata, (int)shapes->len);
	rep.recommend = o.recommend;
	if (o.mix && !cap_report_mix(&rep, o.mix, &e))
		die(CAP_EXIT_USAGE, "%s", e->message);
	if (o.svg) {
		g_autofree char *svg = cap_report_svg(&rep);

		if (!g_file_set_contents(o.svg, svg, -1, &e))
			die(CAP_EXIT_ERROR, "--svg: %s", e->message);
	}
	rc = print(o.json ? cap_report_json(&rep) :
		   o.prometheus ? cap_report_prometheus(&rep) : cap_report_table(&rep));
	cap_report_clear(&rep);
out:
	g_strfreev(o.guests);
	g_strfreev(o.xmls);
	g_strfreev(o.connects);
	g_free(o.root), g_free(o.host), g_free(o.dmem), g_free(o.reserve), g_free(o.pagesize);
	g_free(o.dpage_meta), g_free(o.svg), g_free(o.mix), g_free(o.libvirt_uri);
	return rc;
}
