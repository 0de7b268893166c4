// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host unit tests for dmem-capacity.  Library-level tests call the code
 * directly; the cli tests run build/bin/dmem-capacity ($CAP_BIN) and check
 * its exit code, its stderr line, its JSON (parsed back with json-glib) and
 * its SVG (parsed back with libxml2), and hold its domain shapes against
 * build/bin/dmemfs-hook --plan ($HOOK_BIN) on the same XML.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "capacity.h"

#define G(x) ((uint64_t)(x) * CAP_GIB)
#define M(x) ((uint64_t)(x) * CAP_MIB)

static char *tmpdir;
static const char *cap_bin, *hook_bin;

/* ---- helpers ---------------------------------------------------------- */

static void planning_host(cap_host *h, const char *host, const char *dmem)
{
	g_autoptr(GError) err = NULL;

	cap_host_init(h);
	g_assert_true(cap_parse_host_spec(h, host, &err));
	g_assert_no_error(err);
	if (dmem) {
		g_assert_true(cap_parse_dmem_spec(h, dmem, &err));
		g_assert_no_error(err);
	}
	g_assert_true(cap_host_validate(h, &err));
}

static void std_host(cap_host *h)
{
	planning_host(h, "node0=256G,node1=256G", "node0=240G,node1=240G");
}

static cap_shape *spec(const cap_host *h, const char *s)
{
	g_autoptr(GError) err = NULL;
	cap_shape *sh = cap_shape_from_spec(h, s, &err);

	g_assert_no_error(err);
	g_assert_nonnull(sh);
	return sh;
}

static uint64_t fit(const cap_host *h, cap_model_id id, const cap_shape *s, cap_fit_result *out)
{
	cap_model m;
	cap_fit_result r;

	cap_model_compute(h, id, &m);
	cap_fit(h, &m, s, &r);
	if (out)
		*out = r;
	return r.per_host;
}

static int run_cli(const char *const *args, char **out, char **err)
{
	GPtrArray *argv = g_ptr_array_new();
	GError *ge = NULL;
	int status = -1;

	g_ptr_array_add(argv, (gpointer)cap_bin);
	for (int i = 0; args[i]; i++)
		g_ptr_array_add(argv, (gpointer)args[i]);
	g_ptr_array_add(argv, NULL);
	if (!g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, out, err,
			  &status, &ge)) {
		g_test_message("spawn %s: %s", cap_bin, ge->message);
		g_error_free(ge);
		g_ptr_array_free(argv, TRUE);
		return -1;
	}
	g_ptr_array_free(argv, TRUE);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static char *write_tmp(const char *name, const char *content)
{
	char *p = g_build_filename(tmpdir, name, NULL);
	g_autofree char *dir = g_path_get_dirname(p);

	g_mkdir_with_parents(dir, 0755);
	g_assert_true(g_file_set_contents(p, content, -1, NULL));
	return p;
}

/*
 * A fake live tree: two nodes of 16 GiB memory blocks (128 x 128 MiB) plus
 * 240 GiB of dmem each; node0 has 40 GiB of its pool in use.
 */
static char *fake_root_pool(const char *rel, bool blocks, const char *const dm[2][3])
{
	char *root = g_build_filename(tmpdir, rel, NULL);

	for (int n = 0; n < 2; n++) {
		g_autofree char *mi = g_strdup_printf("%s/node%d/meminfo", rel, n);
		g_autofree char *mic = g_strdup_printf("Node %d MemTotal:       16252928 kB\n"
						       "Node %d MemFree:        15000000 kB\n", n, n);
		g_free(write_tmp(mi, mic));
		g_autofree char *nd = g_strdup_printf("%s/sys/devices/system/node/node%d", root, n);

		g_mkdir_with_parents(nd, 0755);
		g_autofree char *mip = g_strdup_printf("%s/meminfo", nd);

		g_assert_true(g_file_set_contents(mip, mic, -1, NULL));
		for (int b = 0; blocks && b < 128; b++) {
			g_autofree char *bd = g_strdup_printf("%s/memory%d", nd, n * 128 + b);

			g_mkdir_with_parents(bd, 0755);
		}
		const char *f[3] = { "total_bytes", "free_bytes", "used_bytes" };

		for (int k = 0; k < 3; k++) {
			g_autofree char *p = g_strdup_printf("%s/sys/kernel/mm/dmem/node%d/%s", rel, n,
							     f[k]);
			g_autofree char *v = g_strdup_printf("%s\n", dm[n][k]);

			g_free(write_tmp(p, v));
		}
	}
	g_autofree char *p1 = g_strdup_printf("%s/proc/meminfo", rel);
	g_autofree char *p2 = g_strdup_printf("%s/sys/devices/system/memory/block_size_bytes", rel);

	g_free(write_tmp(p1, "MemTotal:       32505856 kB\nMemFree:        30000000 kB\n"));
	g_free(write_tmp(p2, "8000000\n"));
	return root;
}

static char *fake_root(bool blocks)
{
	g_autofree char *rel = g_strdup_printf("root-%d", blocks);
	static const char *const dm[2][3] = {
		{ "257698037760", "214748364800", "42949672960" },
		{ "257698037760", "257698037760", "0" },
	};

	return fake_root_pool(rel, blocks, dm);
}

/* The same host booted without dmem=: the stats files are there, all 0. */
static char *fake_root_no_pool(void)
{
	static const char *const dm[2][3] = { { "0", "0", "0" }, { "0", "0", "0" } };

	return fake_root_pool("root-no-pool", true, dm);
}

static JsonNode *parse_json(const char *text)
{
	JsonParser *p = json_parser_new();
	GError *ge = NULL;
	JsonNode *root = NULL;

	if (json_parser_load_from_data(p, text, -1, &ge))
		root = json_node_copy(json_parser_get_root(p));
	else
		g_test_message("json: %s", ge->message);
	g_clear_error(&ge);
	g_object_unref(p);
	return root;
}

/* run the binary, expect exit 0, parse stdout as JSON (NULL on failure) */
static JsonNode *run_json(const char *const *args)
{
	g_autofree char *out = NULL, *err = NULL;
	int rc = run_cli(args, &out, &err);

	if (rc != 0)
		g_test_message("rc %d, stderr: %s", rc, err ? err : "");
	g_assert_cmpint(rc, ==, 0);
	g_assert_nonnull(out);
	return out ? parse_json(out) : NULL;
}

/* dmemfs-hook --plan --pagesize 2M < path, parsed (NULL on failure) */
static JsonNode *hook_plan(const char *path)
{
	g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE);
	g_autoptr(GSubprocess) p = NULL;
	g_autoptr(GError) ge = NULL;
	g_autofree char *out = NULL;

	g_subprocess_launcher_set_stdin_file_path(l, path);
	p = g_subprocess_launcher_spawn(l, &ge, hook_bin, "--plan", "--pagesize", "2M", NULL);
	if (!p || !g_subprocess_communicate_utf8(p, NULL, NULL, &out, NULL, &ge) ||
	    !g_subprocess_get_if_exited(p) || g_subprocess_get_exit_status(p) != 0) {
		g_test_message("%s --plan < %s: %s", hook_bin, path, ge ? ge->message : "failed");
		return NULL;
	}
	return parse_json(out);
}

/* [1, 2] -> "1,2" */
static char *int_list(JsonArray *a)
{
	GString *s = g_string_new(NULL);

	for (guint i = 0; a && i < json_array_get_length(a); i++)
		g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "," : "",
				       json_array_get_int_element(a, i));
	return g_string_free(s, FALSE);
}

static JsonObject *find_by(JsonArray *a, const char *key, const char *val)
{
	for (guint i = 0; a && i < json_array_get_length(a); i++) {
		JsonObject *o = json_array_get_object_element(a, i);

		if (!g_strcmp0(json_object_get_string_member(o, key), val))
			return o;
	}
	return NULL;
}

static gint64 fit_json(JsonObject *root, int shape, const char *model)
{
	JsonArray *shapes = json_object_get_array_member(root, "shapes");
	JsonObject *s, *f;

	if (!shapes || (guint)shape >= json_array_get_length(shapes))
		return -1;
	s = json_array_get_object_element(shapes, shape);
	f = find_by(json_object_get_array_member(s, "fit"), "model", model);
	return f ? json_object_get_int_member(f, "per_host") : -1;
}

/* ---- units ------------------------------------------------------------ */

static void test_sizes(void)
{
	static const struct {
		const char *in;
		uint64_t out;
	} ok[] = {
		{ "4G", G(4) }, { "4g", G(4) }, { "4GiB", G(4) }, { "2M", M(2) },
		{ "512K", 512 * CAP_KIB }, { "1T", CAP_TIB }, { "1.5G", G(3) / 2 },
		{ "100B", 100 }, { "0.5M", 512 * CAP_KIB }, { "1P", CAP_TIB * 1024 },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
		uint64_t v = 0;
		g_autoptr(GError) err = NULL;

		g_assert_true(cap_parse_size(ok[i].in, &v, &err));
		g_assert_no_error(err);
		g_assert_cmpuint(v, ==, ok[i].out);
	}
}

static void test_bad_sizes(void)
{
	static const struct {
		const char *in, *msg;
	} bad[] = {
		{ "0G", "is zero" }, { "0", "no unit" }, { "-4G", "negative" },
		{ "4X", "unknown unit 'X'" }, { "4GB", "unknown unit 'GB'" }, { "G", "no number" },
		{ "", "empty" }, { "99999999999999P", "too large" }, { "4", "no unit" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		uint64_t v = 0;
		g_autoptr(GError) err = NULL;

		g_assert_false(cap_parse_size(bad[i].in, &v, &err));
		g_assert_nonnull(err);
		if (err && !strstr(err->message, bad[i].msg))
			g_test_fail_printf("'%s': message '%s' lacks '%s'", bad[i].in, err->message,
					   bad[i].msg);
	}
}

/* Sizes above 4 EiB (2^62) are refused: sums of them would wrap, JSON would go negative. */
static void test_size_limit(void)
{
	static const char *const bad[] = { "8192P", "4097P", "4096.5P", "9223372036854775808B",
					   "18014398509481983K" };
	uint64_t v = 0;
	g_autoptr(GError) err = NULL;

	g_assert_true(cap_parse_size("4096P", &v, &err));
	g_assert_no_error(err);
	g_assert_cmpuint(v, ==, CAP_MAX_SIZE);
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;

		v = 0;
		if (cap_parse_size(bad[i], &v, &e)) {
			g_test_fail_printf("'%s' accepted as %" G_GUINT64_FORMAT, bad[i], v);
			continue;
		}
		if (!e || !strstr(e->message, "too large (at most 4096P)"))
			g_test_fail_printf("'%s': message '%s'", bad[i], e ? e->message : "");
	}
}

static void test_nodes(void)
{
	int id = -1;
	g_autoptr(GError) err = NULL;

	g_assert_true(cap_parse_node("node3", &id, &err));
	g_assert_cmpint(id, ==, 3);
	g_assert_true(cap_parse_node("1", &id, &err));
	g_assert_cmpint(id, ==, 1);
	g_assert_false(cap_parse_node("nodeX", &id, &err));
	g_assert_nonnull(err);
}

/* ---- model arithmetic -------------------------------------------------- */

static void test_memmap(void)
{
	/* 64 B per 4 KiB page = 1/64 of RAM */
	g_assert_cmpuint(cap_memmap_bytes(G(256)), ==, G(4));
	g_assert_cmpuint(cap_memmap_bytes(G(1)), ==, M(16));
	/* one bit per 4 KiB: 240 GiB -> 62914560 pages -> 7.5 MiB */
	g_assert_cmpuint(cap_dmem_bitmap_bytes(G(240)), ==, M(15) / 2);
	g_assert_cmpuint(cap_dmem_bitmap_bytes(4096), ==, 1);
	g_assert_cmpuint(cap_dmem_bitmap_bytes(4097), ==, 1);
	g_assert_cmpuint(cap_dmem_bitmap_bytes(9 * 4096), ==, 2);
}

static void test_models_2x256(void)
{
	cap_host h;
	cap_model m;

	std_host(&h); /* reserve 4G -> 2G per node */
	g_assert_cmpuint(cap_reserve_share(&h, 0), ==, G(2));

	cap_model_compute(&h, CAP_M_4K, &m);
	g_assert_cmpuint(m.meta[0], ==, G(4));
	g_assert_cmpuint(m.pool[0], ==, G(250));
	g_assert_cmpuint(cap_model_meta_total(&h, &m), ==, G(8));

	cap_model_compute(&h, CAP_M_2M, &m);
	g_assert_cmpuint(m.meta[1], ==, G(4));
	g_assert_cmpuint(m.pool[1], ==, G(250));

	/* 2M HVO: n = (256G - 4G - 2G) / (2M - 7*4K) = 129774 pages */
	cap_model_compute(&h, CAP_M_2M_HVO, &m);
	g_assert_cmpuint(m.pool[0], ==, UINT64_C(129774) * M(2));
	g_assert_cmpuint(m.meta[0], ==, G(4) - UINT64_C(129774) * 7 * 4096);
	g_assert_cmpuint(m.meta[0] + m.pool[0] + G(2) + m.host_left[0] - G(2), ==, G(256));
	g_assert_cmpuint(m.meta[0] + m.pool[0] + G(2), <=, G(256));

	cap_model_compute(&h, CAP_M_1G, &m);
	g_assert_cmpuint(m.pool[0], ==, G(250));

	/* 1G HVO: n = 250G / (1G - 4095*4K) = 253 pages, each keeps 4 KiB */
	cap_model_compute(&h, CAP_M_1G_HVO, &m);
	g_assert_cmpuint(m.pool[0], ==, G(253));
	g_assert_cmpuint(m.meta[0], ==, G(4) - UINT64_C(253) * 4095 * 4096);
	g_assert_cmpuint(m.meta[0], ==, UINT64_C(51367936));

	/* dmem: memmap of the 16G left (256 MiB) + 7.5 MiB bitmap */
	cap_model_compute(&h, CAP_M_DMEM_BOOTED, &m);
	g_assert_cmpuint(m.pool[0], ==, G(240));
	g_assert_cmpuint(m.meta[0], ==, M(256) + M(15) / 2);
	g_assert_cmpuint(m.host_left[0], ==, G(16) - M(256) - M(15) / 2);

	/* optional per-dpage metadata: 4 B per 2M dpage */
	h.dpage_meta = 4;
	cap_model_compute(&h, CAP_M_DMEM_BOOTED, &m);
	g_assert_cmpuint(m.meta[0], ==, M(256) + M(15) / 2 + 122880 * 4);

	g_assert_false(cap_model_present(&h, CAP_M_DMEM_FREE));
}

static void test_reserve_split(void)
{
	cap_host h;

	planning_host(&h, "node0=64G,node1=64G,node2=64G", NULL);
	h.reserve = 10;
	g_assert_cmpuint(cap_reserve_share(&h, 0), ==, 4);
	g_assert_cmpuint(cap_reserve_share(&h, 1), ==, 3);
	g_assert_cmpuint(cap_reserve_share(&h, 2), ==, 3);
}

static void test_host_specs(void)
{
	cap_host h;
	g_autoptr(GError) err = NULL;

	cap_host_init(&h);
	g_assert_false(cap_parse_host_spec(&h, "node0=1G,node0=2G", &err));
	g_assert_nonnull(strstr(err->message, "given twice"));
	g_clear_error(&err);
	g_assert_true(cap_parse_host_spec(&h, "node0=256G,node1=256G", &err));
	g_assert_false(cap_parse_dmem_spec(&h, "node5=1G", &err));
	g_assert_cmpstr(err->message, ==, "--dmem: unknown node 'node5' (host has node0, node1)");
	g_clear_error(&err);
	g_assert_false(cap_parse_dmem_spec(&h, "node0", &err));
	g_clear_error(&err);
	g_assert_true(cap_parse_dmem_spec(&h, "node1=257G", &err));
	g_assert_false(cap_host_validate(&h, &err));
	g_assert_nonnull(strstr(err->message, "exceeds"));
	g_clear_error(&err);
	g_assert_true(cap_parse_dmem_spec(&h, "node1=3M", &err));
	g_assert_false(cap_host_validate(&h, &err));
	g_assert_nonnull(strstr(err->message, "multiple of the dmem page size"));
}

/* ---- fitting ---------------------------------------------------------- */

/* expect `per_host` guests of shape `sp` in model `id`; c0/c1: cells on node0/1 (-1: any) */
static void check_fit(const char *sp, cap_model_id id, uint64_t per_host, int64_t c0, int64_t c1)
{
	cap_host h;
	cap_fit_result r;
	cap_shape *s;

	std_host(&h);
	s = spec(&h, sp);
	if (!s)
		return;
	if (fit(&h, id, s, &r) != per_host || (c0 >= 0 && r.cells_on[0] != (uint64_t)c0) ||
	    (c1 >= 0 && r.cells_on[1] != (uint64_t)c1))
		g_test_fail_printf("%s in model %d: %" G_GUINT64_FORMAT " guests, cells %"
				   G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT "; want %" G_GUINT64_FORMAT
				   " guests, cells %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT,
				   sp, id, r.per_host, r.cells_on[0], r.cells_on[1], per_host, c0, c1);
	cap_shape_free(s);
}

static void test_fit_single(void)
{
	check_fit("4G", CAP_M_4K, 124, 62, 62);
	check_fit("4G", CAP_M_2M_HVO, 126, 63, 63);
	check_fit("4G", CAP_M_1G, 124, 62, 62);
	check_fit("4G", CAP_M_1G_HVO, 126, 63, 63);
	check_fit("4G", CAP_M_DMEM_BOOTED, 120, 60, 60);
}

static void test_fit_spread(void)
{
	check_fit("2G+2G", CAP_M_DMEM_BOOTED, 120, 120, 120);
	check_fit("2G+2G", CAP_M_4K, 125, 125, 125);
	/* greedy: 100G+100G+10G on 240G+240G -> 2 guests, 3 cells per node */
	check_fit("100G+100G+10G", CAP_M_DMEM_BOOTED, 2, 3, 3);
}

static void test_fit_pinned(void)
{
	cap_host h;
	cap_shape *s;

	check_fit("8G@node0+1G@1", CAP_M_DMEM_BOOTED, 30, 30, 30);
	check_fit("8G@node0+1G@1", CAP_M_4K, 31, 31, 31);
	/* both cells on node0: 2 x 10G per guest -> 12 guests */
	check_fit("10G@0+10G@0", CAP_M_DMEM_BOOTED, 12, 24, 0);
	/* a nodeset with exclusion: 0-1,^1 is node0 only */
	check_fit("4G@0-1,^1", CAP_M_DMEM_BOOTED, 60, 60, 0);
	std_host(&h);
	s = spec(&h, "4G@0-1,^1");
	g_assert_cmpuint(s->cell[0].mask, ==, 1);
	cap_shape_free(s);
}

static void test_fit_rounding(void)
{
	cap_host h;
	cap_shape *s;

	std_host(&h);
	s = spec(&h, "1536M");
	/* 1G pages: 1.5G rounds to 2G -> 125 per node */
	g_assert_cmpuint(fit(&h, CAP_M_1G, s, NULL), ==, 250);
	g_assert_cmpuint(fit(&h, CAP_M_2M, s, NULL), ==, 332);
	g_assert_cmpuint(fit(&h, CAP_M_DMEM_BOOTED, s, NULL), ==, 320);
	h.dmem_pagesize = CAP_GIB;
	g_assert_cmpuint(fit(&h, CAP_M_DMEM_BOOTED, s, NULL), ==, 240);
	cap_shape_free(s);
}

static void test_bad_specs(void)
{
	cap_host h;
	g_autoptr(GError) err = NULL;

	std_host(&h);
	g_assert_null(cap_shape_from_spec(&h, "4G@node7", &err));
	g_assert_cmpstr(err->message, ==,
			"--guest '4G@node7': unknown node 'node7' (host has node0, node1)");
	g_clear_error(&err);
	g_assert_null(cap_shape_from_spec(&h, "512K", &err));
	g_assert_nonnull(strstr(err->message, "below the 1M minimum"));
	g_clear_error(&err);
	g_assert_null(cap_shape_from_spec(&h, "2G+", &err));
	g_assert_nonnull(strstr(err->message, "empty size"));
	g_clear_error(&err);
	g_assert_null(cap_shape_from_spec(&h, "2G@", &err));
	g_assert_nonnull(err);
}

/* ---- domain XML ------------------------------------------------------- */

static const char numa_xml[] =
	"<domain type='kvm'><name>vm-numa</name>"
	"<maxMemory slots='4' unit='GiB'>16</maxMemory><memory unit='KiB'>8388608</memory>"
	"<cpu><numa><cell id='0' cpus='0-1' memory='4' unit='GiB'/>"
	"<cell id='1' cpus='2-3' memory='4194304'/></numa></cpu>"
	"<numatune><memory mode='strict' nodeset='0-1'/>"
	"<memnode cellid='0' mode='strict' nodeset='0'/>"
	"<memnode cellid='1' mode='strict' nodeset='1'/></numatune>"
	"<devices><memory model='dimm'><target><size unit='MiB'>512</size><node>1</node>"
	"</target></memory></devices></domain>";

static cap_shape *xml_shape(const cap_host *h, const char *xml, GError **err)
{
	return cap_shape_from_xml(h, xml, strlen(xml), "test.xml", err);
}

/* a shape the XML must give: no error, not NULL */
static cap_shape *xml_shape_ok(const cap_host *h, const char *xml)
{
	g_autoptr(GError) err = NULL;
	cap_shape *s = xml_shape(h, xml, &err);

	g_assert_no_error(err);
	g_assert_nonnull(s);
	return s;
}

static void test_xml_numa(void)
{
	cap_host h;
	cap_shape *s;
	cap_fit_result r;

	std_host(&h);
	s = xml_shape_ok(&h, numa_xml);
	if (!s)
		return;
	g_assert_cmpstr(s->name, ==, "vm-numa");
	g_assert_cmpint(s->ncells, ==, 2);
	g_assert_cmpuint(s->cell[0].bytes, ==, G(4));
	g_assert_cmpuint(s->cell[0].mask, ==, 1);
	g_assert_cmpuint(s->cell[1].bytes, ==, G(4) + M(512)); /* + DIMM on cell 1 */
	g_assert_cmpuint(s->cell[1].mask, ==, 2);
	/* node1 limits: 240G / 4.5G = 53 */
	g_assert_cmpuint(fit(&h, CAP_M_DMEM_BOOTED, s, &r), ==, 53);
	g_assert_cmpuint(r.cells_on[0], ==, 53);
	cap_shape_free(s);
}

/* a virtio-mem device holds what it plugs at start, not its maximum */
static void test_xml_virtio_mem(void)
{
	static const char xml[] =
		"<domain type='kvm'><name>vm-vmem</name>"
		"<maxMemory slots='2' unit='GiB'>64</maxMemory><memory unit='GiB'>4</memory>"
		"<cpu><numa><cell id='0' cpus='0-1' memory='4' unit='GiB'/></numa></cpu>"
		"<numatune><memory mode='strict' nodeset='0'/></numatune>"
		"<devices><memory model='virtio-mem'><target><size unit='GiB'>32</size><node>0</node>"
		"<block unit='MiB'>2</block><requested unit='GiB'>2</requested></target></memory>"
		"<memory model='virtio-mem'><target><size unit='GiB'>8</size><node>0</node>"
		"<block unit='MiB'>2</block></target></memory></devices></domain>";
	cap_host h;
	cap_shape *s;

	std_host(&h);
	s = xml_shape_ok(&h, xml);
	if (!s)
		return;
	g_assert_cmpint(s->ncells, ==, 1);
	g_assert_cmpuint(s->cell[0].bytes, ==, G(4) + G(2));
	g_assert_cmpuint(s->cell[0].mask, ==, 1);
	cap_shape_free(s);
}

static void test_xml_total(void)
{
	cap_host h;
	cap_shape *s;

	std_host(&h);
	s = xml_shape_ok(&h, "<domain><name>flat</name><memory>8388608</memory>"
			     "<numatune><memory mode='strict' nodeset='1'/></numatune></domain>");
	if (!s)
		return;
	g_assert_cmpint(s->ncells, ==, 1);
	g_assert_cmpuint(s->cell[0].bytes, ==, G(8));
	g_assert_cmpuint(s->cell[0].mask, ==, 2);
	g_assert_cmpuint(fit(&h, CAP_M_DMEM_BOOTED, s, NULL), ==, 30);
	cap_shape_free(s);

	/* decimal GB, aligned up to 1 MiB like libvirt: 4e9 -> 3815 MiB */
	s = xml_shape_ok(&h, "<domain><memory unit='GB'>4</memory></domain>");
	if (s)
		g_assert_cmpuint(s->cell[0].bytes, ==, M(3815));
	cap_shape_free(s);
}

static void test_xml_bad(void)
{
	static const struct {
		const char *xml, *msg;
	} bad[] = {
		{ "<domain><memory unit='XB'>4</memory></domain>", "unknown memory unit 'XB'" },
		{ "<domain><memory>0</memory></domain>", "memory size is 0" },
		{ "<domain><memory>-5</memory></domain>", "invalid memory size '-5'" },
		{ "<domain><memory>4</memory><numatune><memory nodeset='3'/></numatune></domain>",
		  "unknown node 'node3'" },
		{ "<domain><memory>4", "malformed domain XML" },
		{ "<network/>", "not <domain>" },
		{ "<domain><name>x</name></domain>", "no <memory>" },
		{ "<domain><cpu><numa><cell id='0' memory='1' unit='G'/></numa></cpu>"
		  "<numatune><memnode cellid='4' nodeset='0'/></numatune></domain>",
		  "cellid '4' is not a guest NUMA cell" },
		{ "<!DOCTYPE domain [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
		  "<domain><name>&x;</name><memory>4</memory></domain>", "DOCTYPE" },
		{ "<!DOCTYPE domain [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">"
		  "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">"
		  "<!ENTITY e \"&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;\"><!ENTITY f \"&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;\">"
		  "<!ENTITY g \"&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;\"><!ENTITY h \"&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;\">]>"
		  "<domain><name>&h;</name><memory>4</memory></domain>", "" },
	};
	cap_host h;

	std_host(&h);
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) err = NULL;
		cap_shape *s = xml_shape(&h, bad[i].xml, &err);

		if (s) {
			g_test_fail_printf("case %zu accepted", i);
			cap_shape_free(s);
			continue;
		}
		if (!err || !strstr(err->message, bad[i].msg))
			g_test_fail_printf("case %zu: message '%s' lacks '%s'", i,
					   err ? err->message : "", bad[i].msg);
	}
}

/* libvirt takes up to 8 EiB a backend; a guest above 4 EiB is refused. */
static void test_xml_too_large(void)
{
	static const char *const bad[] = {
		"<domain><memory unit='EiB'>5</memory></domain>",
		"<domain><cpu><numa><cell id='0' memory='3' unit='EiB'/>"
		"<cell id='1' memory='3' unit='EiB'/></numa></cpu></domain>",
	};
	cap_host h;

	std_host(&h);
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) err = NULL;
		cap_shape *s = xml_shape(&h, bad[i], &err);

		if (s) {
			g_test_fail_printf("case %zu accepted (%" G_GUINT64_FORMAT " bytes)", i,
					   cap_shape_total(s));
			cap_shape_free(s);
			continue;
		}
		if (!err || !strstr(err->message, "too large"))
			g_test_fail_printf("case %zu: message '%s'", i, err ? err->message : "");
	}
}

/*
 * a valid domain XML padded to @size bytes with 64-byte comments (libxml2
 * refuses a single run of 10 MB of blanks)
 */
static char *padded_xml(const char *name, gsize size)
{
	static const char xml[] = "<domain><memory unit='GiB'>4</memory></domain>\n";
	g_autofree char *buf = g_malloc(size);
	char *p = g_build_filename(tmpdir, name, NULL);
	gsize n = strlen(xml);

	memset(buf, ' ', size);
	memcpy(buf, xml, n);
	for (; n + 64 <= size; n += 64) {
		memset(buf + n, 'x', 64);
		memcpy(buf + n, "<!--", 4);
		memcpy(buf + n + 60, "-->\n", 4);
	}
	buf[size - 1] = '\n';
	g_assert_true(g_file_set_contents(p, buf, (gssize)size, NULL));
	return p;
}

/*
 * --xml reads at most 16 MiB (+1 byte): a bigger regular file is refused
 * unread, and /dev/zero, which never ends, is refused after 16 MiB + 1.
 */
static void test_xml_file_limit(void)
{
	g_autofree char *ok = padded_xml("pad-ok.xml", CAP_XML_MAX);
	g_autofree char *big = padded_xml("pad-big.xml", CAP_XML_MAX + 1);
	const char *args[] = { "--host", "node0=256G", "--xml", "/dev/zero", NULL };
	g_autofree char *out = NULL, *err_text = NULL;
	g_autoptr(GError) err = NULL;
	cap_host h;
	cap_shape *s;

	std_host(&h);
	s = cap_shape_from_xml_file(&h, ok, &err);
	g_assert_no_error(err);
	g_assert_nonnull(s);
	if (s)
		g_assert_cmpuint(cap_shape_total(s), ==, G(4));
	cap_shape_free(s);
	g_clear_error(&err);

	s = cap_shape_from_xml_file(&h, big, &err);
	g_assert_null(s);
	g_assert_error(err, DMEM_ERROR, DMEM_ERROR_FAILED);
	if (err)
		g_assert_nonnull(strstr(err->message, "is larger than 16 MiB"));
	g_unlink(ok);
	g_unlink(big);
	/* without the limit, /dev/zero would be read until memory runs out */
	if (s || !err || !strstr(err->message, "is larger than 16 MiB")) {
		cap_shape_free(s);
		return;
	}
	g_clear_error(&err);
	s = cap_shape_from_xml_file(&h, "/dev/zero", &err);
	g_assert_null(s);
	g_assert_error(err, DMEM_ERROR, DMEM_ERROR_FAILED);
	g_clear_error(&err);

	g_assert_cmpint(run_cli(args, &out, &err_text), ==, 2);
	g_assert_cmpstr(err_text, ==,
			"dmem-capacity: error: --xml: '/dev/zero' is larger than 16 MiB: not a domain XML\n");
	g_assert_cmpstr(out, ==, "");
}

/*
 * libvirt nodesets apply left to right: "^1,1-2" is nodes 1-2 and
 * "0-3,^2,2" all four.  Each cell is bound where the hook binds its file;
 * the DIMM, bound elsewhere than its guest cell, is a cell of its own.
 */
static const char caret_xml[] =
	"<domain type='kvm'><name>vm-caret</name>"
	"<uuid>5d2b7c1e-3f4a-4b6c-8d9e-0a1b2c3d4e5f</uuid>"
	"<maxMemory slots='2' unit='GiB'>32</maxMemory><memory unit='GiB'>9</memory>"
	"<cpu><numa><cell id='0' cpus='0' memory='2' unit='GiB'/>"
	"<cell id='1' cpus='1' memory='2' unit='GiB'/>"
	"<cell id='2' cpus='2' memory='4' unit='GiB'/></numa></cpu>"
	"<numatune><memory mode='strict' nodeset='0-3,^1'/>"
	"<memnode cellid='0' mode='strict' nodeset='^1,1-2'/>"
	"<memnode cellid='1' mode='strict' nodeset='0-3,^2,2'/></numatune>"
	"<devices><memory model='dimm'><source><nodemask>0-3,^0,^3</nodemask></source>"
	"<target><size unit='GiB'>1</size><node>2</node></target></memory></devices></domain>";

static void test_xml_caret_as_hook(void)
{
	static const char *const want[] = { "1,2", "0,1,2,3", "0,2,3", "1,2" };
	g_autofree char *xml = write_tmp("caret.xml", caret_xml);
	const char *args[] = { "--host", "node0=64G,node1=64G,node2=64G,node3=64G", "--xml", xml,
			       "--json", NULL };
	JsonNode *cap = run_json(args), *hook = hook_plan(xml);
	JsonArray *cells, *backends;

	g_assert_nonnull(cap);
	g_assert_nonnull(hook);
	if (!cap || !hook)
		return;
	cells = json_object_get_array_member(
		json_array_get_object_element(
			json_object_get_array_member(json_node_get_object(cap), "shapes"), 0),
		"cells");
	backends = json_object_get_array_member(json_node_get_object(hook), "backends");
	g_assert_cmpuint(json_array_get_length(cells), ==, G_N_ELEMENTS(want));
	g_assert_cmpuint(json_array_get_length(backends), ==, G_N_ELEMENTS(want));
	for (guint i = 0; i < G_N_ELEMENTS(want) && i < json_array_get_length(cells) &&
			  i < json_array_get_length(backends); i++) {
		JsonObject *c = json_array_get_object_element(cells, i);
		JsonObject *b = json_array_get_object_element(backends, i);
		g_autofree char *cn = int_list(json_object_get_array_member(c, "host_nodes"));
		g_autofree char *bn = int_list(json_object_get_array_member(b, "host_nodes"));

		g_assert_cmpstr(cn, ==, want[i]);
		g_assert_cmpstr(bn, ==, want[i]);
		/* whole GiBs: the hook's 2M-rounded file is what libvirt asks */
		g_assert_cmpint(json_object_get_int_member(c, "bytes"), ==,
				json_object_get_int_member(b, "size"));
	}
	json_node_unref(cap);
	json_node_unref(hook);
}

/* A DIMM on a guest cell the domain does not have is refused, as the hook refuses it. */
static void test_xml_dimm_bad_node(void)
{
	static const char *const nodes[] = { "2", "-1", "x" };
	cap_host h;

	std_host(&h);
	for (size_t i = 0; i < G_N_ELEMENTS(nodes); i++) {
		g_autofree char *xml = g_strdup_printf(
			"<domain><name>vm-dimm</name><maxMemory slots='2' unit='GiB'>16</maxMemory>"
			"<cpu><numa><cell id='0' cpus='0' memory='2' unit='GiB'/>"
			"<cell id='1' cpus='1' memory='2' unit='GiB'/></numa></cpu>"
			"<devices><memory model='dimm'><target><size unit='GiB'>1</size>"
			"<node>%s</node></target></memory></devices></domain>", nodes[i]);
		g_autofree char *want = g_strdup_printf(
			"test.xml: memory device target node '%s' is not a guest NUMA cell", nodes[i]);
		g_autoptr(GError) err = NULL;
		g_autoptr(cap_shape) s = xml_shape(&h, xml, &err);

		g_assert_null(s);
		g_assert_nonnull(err);
		if (err)
			g_assert_cmpstr(err->message, ==, want);
		if (i == 0) {
			g_autofree char *path = write_tmp("dimm-node2.xml", xml);
			const char *args[] = { "--host", "node0=256G,node1=256G", "--xml", path, NULL };
			g_autofree char *out = NULL, *cerr = NULL;

			g_assert_cmpint(run_cli(args, &out, &cerr), ==, 2);
			g_assert_nonnull(strstr(cerr, "memory device target node '2' is not a guest NUMA cell\n"));
			g_assert_cmpstr(out, ==, "");
		}
	}
}

/*
 * A guest on hugetlbfs (<hugepages>, a DIMM with <source><pagesize>) has a
 * shape like any other: the hook refuses to serve it from dmem, but the
 * report sizes it, to compare dmem with what the host runs today.
 */
static void test_xml_hugepages_shape(void)
{
	static const char xml[] =
		"<domain><name>vm-huge</name><maxMemory slots='2' unit='GiB'>16</maxMemory>"
		"<memoryBacking><hugepages><page size='1' unit='GiB'/></hugepages></memoryBacking>"
		"<cpu><numa><cell id='0' cpus='0' memory='2' unit='GiB'/>"
		"<cell id='1' cpus='1' memory='2' unit='GiB'/></numa></cpu>"
		"<devices><memory model='dimm'><source><pagesize unit='KiB'>2048</pagesize></source>"
		"<target><size unit='GiB'>1</size><node>1</node></target></memory></devices></domain>";
	cap_host h;
	g_autoptr(cap_shape) s = NULL;

	std_host(&h);
	s = xml_shape_ok(&h, xml);
	if (!s)
		return;
	g_assert_cmpint(s->ncells, ==, 2);
	g_assert_cmpuint(s->cell[0].bytes, ==, G(2));
	g_assert_cmpuint(s->cell[1].bytes, ==, G(3));	/* + the DIMM on cell 1 */
}

/* ---- live tree -------------------------------------------------------- */

static void test_live_tree(void)
{
	g_autofree char *root = fake_root(true);
	cap_host h;
	g_autoptr(GError) err = NULL;
	cap_shape *s;

	cap_host_init(&h);
	g_assert_true(cap_host_from_root(&h, root, &err));
	g_assert_no_error(err);
	g_assert_true(h.live);
	g_assert_true(h.has_dmem);
	g_assert_cmpint(h.nnodes, ==, 2);
	g_assert_cmpuint(h.memtotal, ==, UINT64_C(32505856) * 1024);
	g_assert_cmpuint(h.node[0].blocks_bytes, ==, G(16));
	g_assert_cmpuint(h.node[0].ram, ==, G(256));
	g_assert_cmpint(h.node[0].ram_src, ==, CAP_SRC_MEASURED);
	g_assert_cmpuint(h.node[0].dmem_total, ==, G(240));
	g_assert_cmpuint(h.node[0].dmem_free, ==, G(200));
	g_assert_cmpuint(h.node[0].dmem_used, ==, G(40));
	g_assert_cmpuint(h.node[0].dmem_requested, ==, 0); /* a kernel without requested_bytes */
	g_assert_cmpuint(h.node[0].dmem_present, ==, 0);     /* ... or any optional counter */
	g_assert_cmpint(h.node[0].dmem_src, ==, CAP_SRC_MEASURED);
	g_assert_true(cap_model_present(&h, CAP_M_DMEM_FREE));
	s = spec(&h, "4G");
	g_assert_cmpuint(fit(&h, CAP_M_DMEM_BOOTED, s, NULL), ==, 120);
	g_assert_cmpuint(fit(&h, CAP_M_DMEM_FREE, s, NULL), ==, 110);
	cap_shape_free(s);

	/* 2 GiB blocks: 128 of them (256 GiB) cover MemTotal + dmem, so
	 * they already include the dmem ranges and are not added twice */
	g_autofree char *bs = g_build_filename(root, "sys/devices/system/memory/block_size_bytes",
					       NULL);
	g_assert_true(g_file_set_contents(bs, "80000000\n", -1, NULL));
	cap_host_init(&h);
	g_assert_true(cap_host_from_root(&h, root, &err));
	g_assert_cmpuint(h.node[0].ram, ==, G(256));
	g_assert_cmpuint(h.node[0].blocks_bytes, ==, G(256));
	g_assert_true(g_file_set_contents(bs, "8000000\n", -1, NULL));
}

static void test_live_fallback(void)
{
	g_autofree char *root = fake_root(false);
	cap_host h;
	g_autoptr(GError) err = NULL;

	cap_host_init(&h);
	g_assert_true(cap_host_from_root(&h, root, &err));
	g_assert_no_error(err);
	g_assert_false(h.node[1].has_blocks);
	g_assert_cmpint(h.node[1].ram_src, ==, CAP_SRC_MODELLED);
	/* MemTotal 16252928 kB * 64/63 + 240 GiB */
	g_assert_cmpuint(h.node[1].ram, ==, UINT64_C(16252928) * 1024 / 63 * 64 + G(240));
}

/*
 * Booted without dmem=: dmem stats present, every pool 0.  The reserve is
 * not "measured" as all of RAM and there is no "as booted" model.
 */
static void test_live_no_pool(void)
{
	g_autofree char *root = fake_root_no_pool();
	cap_host h;
	g_autoptr(GError) err = NULL;

	cap_host_init(&h);
	g_assert_true(cap_host_from_root(&h, root, &err));
	g_assert_no_error(err);
	g_assert_true(h.has_dmem);
	g_assert_false(cap_host_dmem_booted(&h));
	cap_host_measure_reserve(&h);
	g_assert_false(h.reserve_measured);
	g_assert_cmpuint(h.reserve, ==, CAP_DEFAULT_RESERVE);
	g_assert_false(cap_model_present(&h, CAP_M_DMEM_BOOTED));
	g_assert_false(cap_model_present(&h, CAP_M_DMEM_FREE));
}

static void test_live_missing(void)
{
	g_autofree char *root = g_build_filename(tmpdir, "nothing-here", NULL);
	cap_host h;
	g_autoptr(GError) err = NULL;

	cap_host_init(&h);
	g_assert_false(cap_host_from_root(&h, root, &err));
	g_assert_nonnull(err);
}

/* ---- the binary ------------------------------------------------------- */

static const struct {
	const char *name;
	const char *args[8];
	const char *msg;
} cli_bad[] = {
	{ "dmem-unknown-node", { "--host", "node0=256G,node1=256G", "--dmem", "node2=1G" },
	  "--dmem: unknown node 'node2' (host has node0, node1)" },
	{ "guest-unknown-node", { "--host", "node0=256G", "--guest", "4G@node1" },
	  "unknown node 'node1'" },
	{ "host-unknown-unit", { "--host", "node0=256Q" }, "unknown unit 'Q'" },
	{ "guest-unknown-unit", { "--host", "node0=256G", "--guest", "4GB" }, "unknown unit 'GB'" },
	{ "guest-negative", { "--host", "node0=256G", "--guest", "-4G" }, "negative size" },
	{ "guest-zero", { "--host", "node0=256G", "--guest", "0M" }, "is zero" },
	{ "host-zero", { "--host", "node0=0G" }, "is zero" },
	{ "dmem-negative", { "--host", "node0=256G", "--dmem", "node0=-1G" }, "negative size" },
	{ "dmem-too-big", { "--host", "node0=256G", "--dmem", "node0=300G" }, "exceeds" },
	{ "dmem-without-host", { "--dmem", "node0=1G" }, "needs --host" },
	{ "reserve-unit", { "--host", "node0=256G", "--reserve", "4Z" }, "unknown unit 'Z'" },
	{ "pagesize", { "--host", "node0=256G", "--dmem-pagesize", "64K" }, "not 4K, 2M or 1G" },
	{ "unknown-arg", { "--frobnicate" }, "Unknown option --frobnicate" },
	{ "stray-arg", { "--host", "node0=1G", "stray" }, "unknown argument 'stray'" },
	{ "missing-value", { "--host" }, "Missing argument for --host" },
	{ "mix-before-connecting", { "--connect", "qemu+ssh://nowhere/system", "--mix", "3:x" },
	  "--mix 3:x: 'x' is not a whole number" },
	{ "mix-one-weight", { "--host", "node0=1G", "--guest", "1G", "--mix", "3" },
	  "--mix 3: 1 weight for 1 guest shape (one a shape, at least two)" },
	{ "refresh-without-connect", { "--host", "node0=1G", "--refresh" }, "--refresh is for --connect" },
	{ "xml-missing", { "--host", "node0=1G", "--xml", "/nonexistent/d.xml" }, "--xml" },
	{ "host-above-4EiB", { "--host", "node0=8192P" }, "size '8192P' is too large (at most 4096P)" },
	{ "host-total-above-4EiB", { "--host", "node0=4096P,node1=1G" },
	  "--host: the nodes add up to more than 4096P" },
	{ "guest-above-4EiB", { "--host", "node0=256G", "--guest", "8192P", "--json" }, "too large" },
	{ "guest-cells-above-4EiB", { "--host", "node0=256G", "--guest", "4096P+4096P" },
	  "the cells add up to more than 4096P" },
	{ "reserve-above-4EiB", { "--host", "node0=256G", "--reserve", "9000P", "--json" },
	  "--reserve: size '9000P' is too large" },
	{ "dmem-above-4EiB", { "--host", "node0=4096P", "--dmem", "node0=8192P" }, "too large" },
};

static void test_cli_bad(gconstpointer data)
{
	size_t i = GPOINTER_TO_SIZE(data);
	g_autofree char *out = NULL, *err = NULL;
	int rc = run_cli(cli_bad[i].args, &out, &err);

	g_assert_cmpint(rc, ==, 2);
	if (!err)
		return;
	g_assert_true(g_str_has_prefix(err, "dmem-capacity: error: "));
	g_assert_nonnull(strstr(err, cli_bad[i].msg));
	/* exactly one line */
	g_assert_nonnull(strchr(err, '\n'));
	g_assert_true(strchr(err, '\n') == err + strlen(err) - 1);
	g_assert_cmpstr(out, ==, "");
}

static void test_cli_table(void)
{
	const char *args[] = { "--host", "node0=256G,node1=256G", "--dmem", "node0=240G,node1=240G",
			       "--guest", "4G", NULL };
	g_autofree char *out = NULL, *err = NULL;

	g_assert_cmpint(run_cli(args, &out, &err), ==, 0);
	if (!out)
		return;
	g_assert_nonnull(strstr(out, "Nothing is measured"));
	g_assert_nonnull(strstr(out, "guest \"4G\""));
	/*
	 * The given pool is a labelled row of its own (60 60 120 -4); on the
	 * same 4 GiB reserve as every other row, dmem fits 126, as many as
	 * hugetlbfs 1G + HVO and more than anything else.
	 */
	g_assert_true(g_regex_match_simple("\\ndmem, as booted +60 +60 +120 +-4 ", out, 0, 0));
	g_assert_true(g_regex_match_simple("\\ndmem, same reserve +63 +63 +126 +\\+2 ", out, 0, 0));
	g_assert_true(g_regex_match_simple("\\nhugetlbfs 1G \\+ HVO +63 +63 +126 ", out, 0, 0));
	g_assert_true(g_regex_match_simple("\\nreserve 4.00 GiB for host kernel\\+QEMU, in every model",
					   out, 0, 0));
	g_assert_null(strstr(out, "recommended:"));
	g_assert_cmpstr(err, ==, "");
}

/*
 * --recommend: the dmem= line that gives each node its equal-terms pool,
 * and the gain over hugetlbfs with HVO, on the planning case and on the
 * JSON side.
 */
static void test_cli_recommend(void)
{
	const char *args[] = { "--host", "node0=256G,node1=256G", "--guest", "4G", "--recommend", NULL };
	const char *jargs[] = { "--host", "node0=256G,node1=256G", "--reserve", "8G", "--dmem-pagesize",
				"1G", "--guest", "4G", "--recommend", "--json", NULL };
	g_autofree char *out = NULL, *err = NULL;
	JsonObject *o, *rec;
	JsonNode *root;

	g_assert_cmpint(run_cli(args, &out, &err), ==, 0);
	if (!out)
		return;
	/* 2 GiB reserve a node + memmap of what it keeps, in 128M sections */
	g_assert_nonnull(strstr(out, "\nrecommended: dmem=!2176M:128M\n"));
	g_assert_nonnull(strstr(out, "node0 253.88 GiB node1 253.88 GiB"));
	g_assert_nonnull(strstr(out, "guest \"4G\": dmem 126 vs hugetlbfs 2M + HVO 126 (+0), "
				     "hugetlbfs 1G + HVO 126 (+0)\n"));
	/* no pool given: no "as booted" row */
	g_assert_null(strstr(out, "dmem, as booted"));

	root = run_json(jargs);
	g_assert_nonnull(root);
	if (!root)
		return;
	o = json_node_get_object(root);
	rec = json_object_get_object_member(o, "recommend");
	g_assert_nonnull(rec);
	/* 4 GiB a node + memmap (~4 MiB), rounded to whole GiBs of 1G dpages */
	g_assert_cmpstr(json_object_get_string_member(rec, "dmem"), ==, "!5G:1G");
	g_assert_cmpint(json_object_get_int_member(rec, "align_bytes"), ==, (gint64)G(1));
	g_assert_false(json_object_get_boolean_member(rec, "keep_uneven"));
	g_assert_cmpint(fit_json(o, 0, "dmem"), ==, 2 * 62);
	g_assert_cmpint(fit_json(o, 0, "hugetlb-1g-hvo"), ==, 2 * 62);
	g_assert_cmpstr(json_object_get_string_member(json_object_get_object_member(o, "host"),
						      "reserve_source"), ==, "given");
	json_node_unref(root);
}

/*
 * A node smaller than what every node keeps gets no dmem: 0, said so,
 * not RAM - keep wrapped around to 16 EiB.
 */
static void test_cli_recommend_small_node(void)
{
	const char *args[] = { "--host", "node0=64G,node1=2G", "--guest", "1G", "--recommend", NULL };
	const char *tiny[] = { "--host", "node0=1G", "--recommend", NULL };
	g_autofree char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL;

	g_assert_cmpint(run_cli(args, &out, &err), ==, 0);
	if (!out)
		return;
	g_assert_nonnull(strstr(out, "\nrecommended: dmem=!2176M:128M\n"));
	g_assert_nonnull(strstr(out, " node0 61.88 GiB node1 0 B (too small: nothing left after what "
				     "it keeps)\n"));
	g_assert_null(strstr(out, "17179869183"));
	g_assert_cmpstr(err, ==, "");

	/* a host smaller than its reserve keeps all of it */
	g_assert_cmpint(run_cli(tiny, &out2, &err2), ==, 0);
	if (out2)
		g_assert_nonnull(strstr(out2, "\nrecommended: dmem=!1G:128M\n"));
	if (out2)
		g_assert_nonnull(strstr(out2, " node0 0 B (too small: nothing left after what it keeps)\n"));
}

/*
 * A live host booted without dmem=: one line, exit 1, no output and no SVG;
 * --recommend (what to boot with) still works, on the default reserve.
 */
static void test_cli_live_no_pool(void)
{
	g_autofree char *root_dir = fake_root_no_pool();
	g_autofree char *svg = g_build_filename(tmpdir, "no-pool.svg", NULL);
	const char *modes[][8] = {
		{ "--root", root_dir, "--guest", "4G", NULL },
		{ "--root", root_dir, "--guest", "4G", "--json", NULL },
		{ "--root", root_dir, "--prometheus", NULL },
		{ "--root", root_dir, "--reserve", "8G", "--svg", svg, NULL },
	};
	const char *rec[] = { "--root", root_dir, "--guest", "4G", "--recommend", NULL };
	g_autofree char *out = NULL, *err = NULL;

	for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
		g_autofree char *o = NULL, *e = NULL;

		g_assert_cmpint(run_cli(modes[i], &o, &e), ==, 1);
		g_assert_cmpstr(e, ==, "dmem-capacity: error: no dmem reserved on this host (every "
				       "node's pool is 0): boot with dmem= (--recommend gives a value)\n");
		g_assert_cmpstr(o, ==, "");
	}
	g_assert_false(g_file_test(svg, G_FILE_TEST_EXISTS));

	g_assert_cmpint(run_cli(rec, &out, &err), ==, 0);
	if (!out)
		return;
	g_assert_nonnull(strstr(out, "\nreserve 4.00 GiB for host kernel+QEMU, in every model (default)"));
	g_assert_null(strstr(out, "(measured)"));
	g_assert_null(strstr(out, "dmem, as booted"));
	g_assert_nonnull(strstr(out, "\nrecommended: dmem=!2176M:128M\n"));
	g_assert_nonnull(strstr(out, " node0 13.88 GiB node1 13.88 GiB\n"));
	g_assert_nonnull(strstr(out, "\nwarning: no dmem reserved on any node (booted without dmem=)"));
	g_assert_cmpstr(err, ==, "");
}

/*
 * The JSON writer never emits a negative byte count, even for a figure the
 * parser would have refused (2^63 and more, set here directly).
 */
static void test_json_u64(void)
{
	cap_host h;
	cap_report r;
	g_autofree char *text = NULL;
	JsonNode *root, *ram;

	cap_host_init(&h);
	h.nnodes = 1;
	h.node[0].ram = (UINT64_C(1) << 63) + CAP_TIB;
	h.reserve = G_MAXUINT64 - 1;
	cap_report_build(&r, &h, NULL, 0);
	text = cap_report_json(&r);
	cap_report_clear(&r);
	g_assert_null(strstr(text, ":-"));
	root = parse_json(text);
	g_assert_nonnull(root);
	if (!root)
		return;
	ram = json_object_get_member(json_object_get_object_member(json_node_get_object(root), "host"),
				     "ram_bytes");
	g_assert_nonnull(ram);
	if (ram)
		g_assert_cmpfloat(json_node_get_double(ram), >=, 9.2e18);
	json_node_unref(root);
}

static void test_cli_json_planning(void)
{
	const char *args[] = { "--host", "node0=256G,node1=256G", "--dmem", "node0=240G,node1=240G",
			       "--guest", "4G", "--guest", "2G+2G", "--json", NULL };
	JsonNode *root = run_json(args);
	JsonObject *o, *m4k;

	g_assert_nonnull(root);
	if (!root)
		return;
	o = json_node_get_object(root);
	g_assert_cmpstr(json_object_get_string_member(o, "mode"), ==, "planning");
	g_assert_cmpuint(json_array_get_length(json_object_get_array_member(o, "models")), ==, 7);
	m4k = find_by(json_object_get_array_member(o, "models"), "id", "struct-page-4k");
	g_assert_nonnull(m4k);
	if (m4k) {
		g_assert_cmpint(json_object_get_int_member(m4k, "metadata_bytes"), ==, (gint64)G(8));
		g_assert_cmpstr(json_object_get_string_member(m4k, "pool_source"), ==, "modelled");
	}
	g_assert_cmpint(fit_json(o, 0, "dmem-booted"), ==, 120);
	g_assert_cmpint(fit_json(o, 0, "struct-page-4k"), ==, 124);
	g_assert_cmpint(fit_json(o, 0, "hugetlb-1g-hvo"), ==, 126);
	g_assert_cmpint(fit_json(o, 1, "dmem-booted"), ==, 120);
	g_assert_cmpint(fit_json(o, 1, "dmem-free"), ==, -1);
	json_node_unref(root);
}

static void test_cli_json_live(void)
{
	g_autofree char *root_dir = fake_root(true);
	g_autofree char *zn = g_build_filename(root_dir, "sys/kernel/mm/dmem/node0/zeroed_bytes", NULL);
	g_autofree char *rq = g_build_filename(root_dir, "sys/kernel/mm/dmem/node1/requested_bytes",
					       NULL);
	const char *args[] = { "--root", root_dir, "--guest", "4G", "--json", NULL };
	JsonNode *root;
	JsonObject *o, *n0, *n1, *dm;

	g_unlink(zn); /* another test's */
	/* node1's kernel says dmem= asked nothing of it: a 0, unlike node0's absent file */
	g_assert_true(g_file_set_contents(rq, "0\n", -1, NULL));
	root = run_json(args);
	g_assert_nonnull(root);
	if (!root)
		return;
	o = json_node_get_object(root);
	g_assert_cmpstr(json_object_get_string_member(o, "mode"), ==, "live");
	n0 = json_array_get_object_element(
		json_object_get_array_member(json_object_get_object_member(o, "host"), "nodes"), 0);
	g_assert_cmpstr(json_object_get_string_member(n0, "dmem_source"), ==, "measured");
	g_assert_cmpstr(json_object_get_string_member(n0, "ram_source"), ==, "measured");
	g_assert_cmpint(json_object_get_int_member(n0, "dmem_free_bytes"), ==, (gint64)G(200));
	/* a kernel without background zeroing: no zeroed figure, not a 0 */
	g_assert_false(json_object_has_member(n0, "dmem_zeroed_bytes"));
	n1 = json_array_get_object_element(
		json_object_get_array_member(json_object_get_object_member(o, "host"), "nodes"), 1);
	g_assert_true(json_object_has_member(n1, "dmem_requested_bytes"));
	g_assert_cmpint(json_object_get_int_member(n1, "dmem_requested_bytes"), ==, 0);
	g_unlink(rq);
	dm = find_by(json_object_get_array_member(o, "models"), "id", "dmem-free");
	g_assert_nonnull(dm);
	if (dm)
		g_assert_cmpstr(json_object_get_string_member(dm, "pool_source"), ==, "measured");
	g_assert_cmpint(fit_json(o, 0, "dmem-booted"), ==, 120);
	g_assert_cmpint(fit_json(o, 0, "dmem-free"), ==, 110);
	json_node_unref(root);
}

static void test_cli_table_live(void)
{
	g_autofree char *root_dir = fake_root(true);
	const char *args[] = { "--root", root_dir, "--guest", "4G", NULL };
	g_autofree char *out = NULL, *err = NULL;

	g_assert_cmpint(run_cli(args, &out, &err), ==, 0);
	if (!out)
		return;
	g_assert_nonnull(strstr(out, "M = measured on this host"));
	g_assert_true(g_regex_match_simple("\\ndmem, free now +50 +60 +110 .*measured", out, 0, 0));
	g_assert_null(strstr(out, "short of the command line"));
	/* node1's kernel does not zero in the background: no figure, not a 0 */
	g_assert_true(g_regex_match_simple("\\nnode1 .* n/a - ", out, 0, 0));
	/*
	 * no --reserve: every model leaves each node what it keeps outside
	 * dmem as booted (256G - 240G - its metadata, 263.5 MiB)
	 */
	g_assert_nonnull(strstr(out, "\nreserve 31.49 GiB for the host, in every model: what each node "
				     "keeps outside dmem as booted (measured)\n"));
	g_assert_null(strstr(out, "below its reserve share"));
	g_assert_true(g_regex_match_simple("\\ndmem, same reserve +60 +60 +120 +\\+2 ", out, 0, 0));
	g_assert_true(g_regex_match_simple("\\nhugetlbfs 1G \\+ HVO +60 +60 +120 ", out, 0, 0));

	/* a boot that reserved less than dmem= asked (requested_bytes) says so */
	g_autofree char *rq = g_build_filename(root_dir, "sys/kernel/mm/dmem/node0/requested_bytes",
					       NULL);
	g_autofree char *out2 = NULL, *err2 = NULL;

	g_assert_true(g_file_set_contents(rq, "274877906944\n", -1, NULL));
	g_assert_cmpint(run_cli(args, &out2, &err2), ==, 0);
	g_assert_nonnull(strstr(out2, "node0: this boot reserved 240.00 GiB of the 256.00 GiB that dmem= asked: "
				      "the pool is short of the command line\n"));
	g_assert_null(strstr(out2, "node1: this boot"));
}

/* --prometheus: node_exporter's textfile format, from the live pool */
static void test_cli_prometheus(void)
{
	g_autofree char *root_dir = fake_root(true);
	const char *args[] = { "--root", root_dir, "--guest", "4G", "--prometheus", NULL };
	const char *both[] = { "--root", root_dir, "--json", "--prometheus", NULL };
	g_autofree char *pn = g_build_filename(root_dir, "sys/kernel/mm/dmem/node0/pinned_bytes", NULL);
	g_autofree char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL;
	g_auto(GStrv) lines = NULL;
	int samples = 0;

	g_autofree char *zn = g_build_filename(root_dir, "sys/kernel/mm/dmem/node0/zeroed_bytes", NULL);
	g_autofree char *z1 = g_build_filename(root_dir, "sys/kernel/mm/dmem/node1/zeroed_bytes", NULL);
	g_autofree char *rq = g_build_filename(root_dir, "sys/kernel/mm/dmem/node0/requested_bytes",
					       NULL);

	g_assert_true(g_file_set_contents(pn, "2097152\n", -1, NULL));
	g_assert_true(g_file_set_contents(zn, "107374182400\n", -1, NULL));
	g_assert_true(g_file_set_contents(z1, "0\n", -1, NULL));
	g_unlink(rq); /* another test's */
	g_assert_cmpint(run_cli(args, &out, &err), ==, 0);
	if (!out)
		return;
	g_assert_nonnull(strstr(out, "\ndmem_pool_total_bytes{node=\"0\"} 257698037760\n"));
	g_assert_nonnull(strstr(out, "\ndmem_pool_free_bytes{node=\"0\"} 214748364800\n"));
	g_assert_nonnull(strstr(out, "\ndmem_pool_pinned_bytes{node=\"0\"} 2097152\n"));
	/* a counter the kernel does not have is no sample, not a 0; one that says 0 is */
	g_assert_null(strstr(out, "\ndmem_pool_pinned_bytes{node=\"1\"}"));
	g_assert_null(strstr(out, "\ndmem_pool_requested_bytes{"));
	g_assert_null(strstr(out, "\ndmem_pool_poisoned_bytes{"));
	g_assert_nonnull(strstr(out, "\ndmem_pool_zeroed_bytes{node=\"0\"} 107374182400\n"));
	g_assert_nonnull(strstr(out, "\ndmem_pool_zeroed_bytes{node=\"1\"} 0\n"));
	g_assert_nonnull(strstr(out, "\ndmem_capacity_guests{shape=\"4G\",model=\"dmem-free\"} 110\n"));
	g_assert_nonnull(strstr(out, "# TYPE dmem_pool_poisoned_bytes gauge\n"));
	/* every sample line is NAME{LABELS} VALUE, every metric has HELP and TYPE */
	lines = g_strsplit(out, "\n", -1);
	for (int i = 0; lines[i]; i++) {
		if (!*lines[i] || g_str_has_prefix(lines[i], "# HELP ") ||
		    g_str_has_prefix(lines[i], "# TYPE "))
			continue;
		g_assert_true(g_regex_match_simple("^[a-z_]+(\\{[a-z]+=\"[^\"]*\"(,[a-z]+=\"[^\"]*\")*\\})? [0-9]+$",
						   lines[i], 0, 0));
		samples++;
	}
	/* total, free and used of each node, node0's pinned, both zeroed; reserve; guests */
	g_assert_cmpint(samples, ==, 3 * 2 + 1 + 2 + 1 + 8);
	g_assert_cmpint(run_cli(both, &out2, &err2), ==, 2);
	g_assert_nonnull(strstr(err2, "--json and --prometheus exclude each other"));
	g_unlink(pn);
	g_unlink(z1);
}

static void test_cli_svg(void)
{
	g_autofree char *xml = write_tmp("odd.xml", "<domain><name>a&amp;b&lt;c\"</name>"
						     "<memory unit='GiB'>4</memory></domain>");
	g_autofree char *svg = g_build_filename(tmpdir, "chart.svg", NULL);
	const char *args[] = { "--host", "node0=256G,node1=256G", "--dmem", "node0=240G,node1=240G",
			       "--guest", "4G", "--xml", xml, "--svg", svg, NULL };
	g_autofree char *out = NULL, *err = NULL;
	xmlDoc *doc;
	int rects = 0, titles = 0;
	bool found_name = false;

	g_assert_cmpint(run_cli(args, &out, &err), ==, 0);
	doc = xmlReadFile(svg, NULL, XML_PARSE_NONET);
	g_assert_nonnull(doc);
	if (!doc)
		return;
	xmlNode *root = xmlDocGetRootElement(doc);

	g_assert_cmpstr((const char *)root->name, ==, "svg");
	g_assert_nonnull(root->ns);
	if (root->ns)
		g_assert_cmpstr((const char *)root->ns->href, ==, "http://www.w3.org/2000/svg");
	for (xmlNode *n = root->children; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE)
			continue;
		if (!strcmp((const char *)n->name, "rect")) {
			rects++;
			if (n->children)
				titles++;
		}
		if (!strcmp((const char *)n->name, "text")) {
			xmlChar *t = xmlNodeGetContent(n);

			if (t && !strcmp((const char *)t, "a&b<c\""))
				found_name = true;
			xmlFree(t);
		}
	}
	/* background + 2 shapes x 7 models (dmem as given too) + 7 legend swatches */
	g_assert_cmpint(rects, ==, 1 + 14 + 7);
	g_assert_cmpint(titles, ==, 14);
	g_assert_true(found_name);
	xmlFreeDoc(doc);
}

static void test_cli_xml_file(void)
{
	g_autofree char *xml = write_tmp("numa.xml", numa_xml);
	const char *args[] = { "--host", "node0=256G,node1=256G", "--dmem", "node0=240G,node1=240G",
			       "--xml", xml, "--json", NULL };
	JsonNode *root = run_json(args);

	g_assert_nonnull(root);
	if (!root)
		return;
	g_assert_cmpint(fit_json(json_node_get_object(root), 0, "dmem-booted"), ==, 53);
	json_node_unref(root);
}

/*
 * libvirt's built-in test driver needs no daemon: a custom node file with
 * one NUMA domain pinned by memnode, read over a read-only connection.
 */
static void test_cli_libvirt(void)
{
	g_autofree char *node = write_tmp("lv-node.xml",
		"<node><domain type='test'><name>lv-numa</name>"
		"<memory unit='GiB'>8</memory><vcpu>2</vcpu><os><type>hvm</type></os>"
		"<cpu><numa><cell id='0' cpus='0' memory='4' unit='GiB'/>"
		"<cell id='1' cpus='1' memory='4' unit='GiB'/></numa></cpu>"
		"<numatune><memnode cellid='0' mode='strict' nodeset='0'/>"
		"<memnode cellid='1' mode='strict' nodeset='1'/></numatune></domain></node>");
	g_autofree char *uri = g_strdup_printf("test://%s", node);
	const char *args[] = { "--host", "node0=256G,node1=256G", "--dmem", "node0=240G,node1=240G",
			       "--libvirt", uri, "--json", NULL };
	JsonNode *root = run_json(args);
	JsonObject *o, *s;

	g_assert_nonnull(root);
	if (!root)
		return;
	o = json_node_get_object(root);
	s = find_by(json_object_get_array_member(o, "shapes"), "name", "lv-numa");
	g_assert_nonnull(s);
	if (s) {
		g_assert_cmpstr(json_object_get_string_member(s, "origin"), ==, "libvirt:lv-numa");
		g_assert_cmpint(json_object_get_int_member(s, "bytes"), ==, (gint64)G(8));
	}
	g_assert_cmpint(fit_json(o, 0, "dmem-booted"), ==, 60);
	json_node_unref(root);

	/* a URI that cannot be opened: exit 1 (environment), one line */
	const char *bad[] = { "--host", "node0=1G", "--libvirt", "test:///nonexistent/x.xml", NULL };
	g_autofree char *o2 = NULL, *e2 = NULL;

	g_assert_cmpint(run_cli(bad, &o2, &e2), ==, 1);
	if (e2) {
		g_assert_true(g_str_has_prefix(e2, "dmem-capacity: error: --libvirt: cannot connect"));
		g_assert_true(strchr(e2, '\n') == e2 + strlen(e2) - 1);
	}
}

/*
 * --mix: a 9 GiB pool as booted, guests of 1G and 2G two to one: a set is
 * 4 GiB, so 2 sets, and the last GiB takes one more 1G guest of a third
 * set.  Bad ratios are exit 2, one line.
 */
static void test_cli_mix(void)
{
	const char *args[] = { "--host", "node0=12G", "--dmem", "node0=9G", "--guest", "1G",
			       "--guest", "2G", "--mix", "2:1", "--json", NULL };
	const char *prom[] = { "--host", "node0=12G", "--dmem", "node0=9G", "--guest", "1G",
			       "--guest", "2G", "--mix", "2:1", "--prometheus", NULL };
	static const char *const bad[][2] = {
		{ "3", "--mix 3: 1 weight for 2 guest shapes" },
		{ "1:2:3", "--mix 1:2:3: 3 weights for 2 guest shapes" },
		{ "2:0", "--mix 2:0: '0' is not a whole number of guests from 1 to 1000" },
		{ "2:x", "--mix 2:x: 'x' is not a whole number of guests from 1 to 1000" },
		{ "2:", "--mix 2:: '' is not a whole number of guests from 1 to 1000" },
	};
	g_autofree char *pout = NULL, *perr = NULL;
	JsonNode *root = run_json(args);
	JsonObject *mix, *f;

	g_assert_nonnull(root);
	if (root) {
		mix = json_object_get_object_member(json_node_get_object(root), "mix");
		g_assert_nonnull(mix);
		if (mix) {
			g_assert_cmpstr(json_object_get_string_member(mix, "ratio"), ==, "2:1");
			f = find_by(json_object_get_array_member(mix, "fit"), "model", "dmem-booted");
			g_assert_nonnull(f);
			if (f) {
				g_assert_cmpint(json_object_get_int_member(f, "sets"), ==, 2);
				g_assert_cmpint(json_object_get_int_member(f, "guests"), ==, 7);
			}
		}
		json_node_unref(root);
	}
	g_assert_cmpint(run_cli(prom, &pout, &perr), ==, 0);
	if (pout)
		g_assert_nonnull(strstr(pout, "\ndmem_capacity_mix_guests{mix=\"2:1\",model=\"dmem-booted\"} 7\n"));
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		const char *a[] = { "--host", "node0=12G", "--guest", "1G", "--guest", "2G", "--mix",
				    bad[i][0], NULL };
		g_autofree char *o = NULL, *e = NULL;
		g_autofree char *want = g_strdup_printf("dmem-capacity: error: %s", bad[i][1]);

		g_assert_cmpint(run_cli(a, &o, &e), ==, 2);
		if (e) {
			g_assert_true(g_str_has_prefix(e, want));
			g_assert_true(strchr(e, '\n') == e + strlen(e) - 1);
		}
	}
}

/*
 * --connect: the test driver as a fleet.  A custom node file has the
 * storage pools dmem-node0 and dmem-node1 (the driver gives every pool
 * 100 GiB, all available); test:///default has none.  The test driver
 * has no host UUID: that a second connection to a host counts once is
 * checked in L1 (accept.capacity-fleet).
 */
static const char fleet_node[] =
	"<node><cpu><mhz>2000</mhz><model>i686</model><active>4</active><max>4</max>"
	"<nodes>1</nodes><sockets>1</sockets><cores>4</cores><threads>1</threads></cpu>"
	"<memory>16777216</memory>"
	"<pool type='dir'><name>dmem-node0</name><target><path>/run/d0</path></target></pool>"
	"<pool type='dir'><name>dmem-node1</name><target><path>/run/d1</path></target></pool>"
	"<pool type='dir'><name>dmem-nodeX</name><target><path>/run/dx</path></target></pool>"
	"</node>";

static gint64 total_json(JsonObject *root, const char *model)
{
	JsonObject *t = json_object_get_object_member(root, "total");
	JsonArray *s = t ? json_object_get_array_member(t, "shapes") : NULL;
	JsonObject *f;

	if (!s || !json_array_get_length(s))
		return -1;
	f = find_by(json_object_get_array_member(json_array_get_object_element(s, 0), "fit"),
		    "model", model);
	return f ? json_object_get_int_member(f, "guests") : -1;
}

static void test_cli_connect(void)
{
	g_autofree char *node = write_tmp("fleet-node.xml", fleet_node);
	g_autofree char *uri = g_strdup_printf("test://%s", node);
	const char *args[] = { "--connect", uri, "--connect", "test:///default", "--guest", "1G",
			       "--json", NULL };
	JsonNode *root = run_json(args);
	JsonObject *o, *h0, *h1;
	JsonArray *hosts, *nodes;

	g_assert_nonnull(root);
	if (!root)
		return;
	o = json_node_get_object(root);
	g_assert_cmpstr(json_object_get_string_member(o, "mode"), ==, "fleet");
	hosts = json_object_get_array_member(o, "hosts");
	g_assert_cmpint(json_array_get_length(hosts), ==, 2);
	h0 = json_array_get_object_element(hosts, 0);
	h1 = json_array_get_object_element(hosts, 1);
	/* the custom host: two pools (dmem-nodeX is not a node), read-only: not refreshed */
	g_assert_cmpstr(json_object_get_string_member(h0, "uri"), ==, uri);
	g_assert_cmpint(json_object_get_int_member(h0, "dmem_pools"), ==, 2);
	g_assert_false(json_object_get_boolean_member(h0, "refreshed"));
	nodes = json_object_get_array_member(json_object_get_object_member(h0, "host"), "nodes");
	g_assert_cmpint(json_array_get_length(nodes), ==, 2);
	for (guint i = 0; i < json_array_get_length(nodes); i++) {
		JsonObject *n = json_array_get_object_element(nodes, i);

		g_assert_cmpint(json_object_get_int_member(n, "dmem_total_bytes"), ==, (gint64)G(100));
		g_assert_cmpint(json_object_get_int_member(n, "dmem_free_bytes"), ==, (gint64)G(100));
	}
	/* 100 GiB a node: 100 1G guests a node, and as many in the free pool */
	g_assert_cmpint(fit_json(h0, 0, "dmem-booted"), ==, 200);
	g_assert_cmpint(fit_json(h0, 0, "dmem-free"), ==, 200);
	/* test:///default: no dmem, a warning that says why */
	g_assert_cmpint(json_object_get_int_member(h1, "dmem_pools"), ==, 0);
	g_assert_cmpint(fit_json(h1, 0, "dmem-booted"), ==, -1);
	g_assert_true(g_str_has_prefix(json_array_get_string_element(
		json_object_get_array_member(h1, "warnings"), 0), "no active storage pool named dmem-node"));
	/* the total: both hosts */
	g_assert_false(json_object_has_member(h1, "same_host_as"));
	g_assert_cmpint(total_json(o, "dmem-booted"), ==, 200);
	g_assert_cmpint(total_json(o, "struct-page-4k"), ==,
			fit_json(h0, 0, "struct-page-4k") + fit_json(h1, 0, "struct-page-4k"));
	json_node_unref(root);
}

/* --connect in table and --prometheus form, a host that cannot be read, bad combinations */
static void test_cli_connect_forms(void)
{
	g_autofree char *node = write_tmp("fleet-node.xml", fleet_node);
	g_autofree char *uri = g_strdup_printf("test://%s", node);
	const char *table[] = { "--connect", uri, "--connect", "test:///default", "--guest", "1G",
				"--guest", "2G", "--mix", "1:1", NULL };
	const char *prom[] = { "--connect", uri, "--connect", "test:///default", "--guest", "1G",
			       "--prometheus", NULL };
	const char *down[] = { "--connect", "test:///nonexistent/x.xml", "--connect", uri,
			       "--guest", "1G", "--json", NULL };
	const char *bad[] = { "--connect", uri, "--host", "node0=1G", NULL };
	g_autofree char *out = NULL, *err = NULL, *pout = NULL, *perr = NULL;
	g_autofree char *dout = NULL, *derr = NULL, *bout = NULL, *berr = NULL;
	g_autofree char *sample = NULL;
	g_auto(GStrv) lines = NULL;
	JsonNode *root;

	g_assert_cmpint(run_cli(table, &out, &err), ==, 0);
	if (out) {
		g_assert_nonnull(strstr(out, "\n2   "));
		g_assert_nonnull(strstr(out, " 2, as last refreshed\n"));
		g_assert_true(g_regex_match_simple("\\n +total +200 +200 ", out, 0, 0));
		/* 1G + 2G a set: 66 sets of the 200 GiB, and a 1G guest of the 67th */
		g_assert_nonnull(strstr(out, "\nmix 1:1 of the shapes: guests that fit per host\n"));
		g_assert_true(g_regex_match_simple("\\n1 +\\S+ +133 +133 ", out, 0, 0));
	}
	{
		/* --refresh: read-write, the pools refreshed first */
		const char *rw[] = { "--connect", uri, "--refresh", "--guest", "1G", NULL };
		g_autofree char *o = NULL, *e = NULL;

		g_assert_cmpint(run_cli(rw, &o, &e), ==, 0);
		g_assert_nonnull(o);
		g_assert_nonnull(strstr(o, " 2, refreshed\n"));
	}

	g_assert_cmpint(run_cli(prom, &pout, &perr), ==, 0);
	if (pout) {
		sample = g_strdup_printf("\ndmem_pool_total_bytes{host=\"%s\",uri=\"%s\",node=\"1\"} %"
					 G_GUINT64_FORMAT "\n", g_get_host_name(), uri, G(100));
		g_assert_nonnull(strstr(pout, sample));
		g_assert_nonnull(strstr(pout, ",uri=\"test:///default\",shape=\"1G\",model=\"struct-page-4k\"} "));
		/* one HELP and TYPE a metric, whatever the number of hosts */
		g_assert_null(strstr(strstr(pout, "# TYPE dmem_pool_total_bytes") + 1,
				     "# TYPE dmem_pool_total_bytes"));
		lines = g_strsplit(pout, "\n", -1);
		for (int i = 0; lines[i]; i++)
			if (*lines[i] && lines[i][0] != '#')
				g_assert_true(g_regex_match_simple(
					"^[a-z_]+(\\{[a-z]+=\"[^\"]*\"(,[a-z]+=\"[^\"]*\")*\\})? [0-9]+$",
					lines[i], 0, 0));
	}

	/* a host down: one stderr line, an error entry, the others reported, exit 1 */
	g_assert_cmpint(run_cli(down, &dout, &derr), ==, 1);
	if (derr) {
		g_assert_true(g_str_has_prefix(derr, "dmem-capacity: error: --connect: cannot connect to "
						     "test:///nonexistent/x.xml: "));
		g_assert_true(strchr(derr, '\n') == derr + strlen(derr) - 1);
	}
	root = dout ? parse_json(dout) : NULL;
	g_assert_nonnull(root);
	if (root) {
		JsonArray *h = json_object_get_array_member(json_node_get_object(root), "hosts");

		g_assert_true(json_object_has_member(json_array_get_object_element(h, 0), "error"));
		g_assert_cmpint(fit_json(json_array_get_object_element(h, 1), 0, "dmem-booted"), ==, 200);
		json_node_unref(root);
	}

	g_assert_cmpint(run_cli(bad, &bout, &berr), ==, 2);
	if (berr)
		g_assert_nonnull(strstr(berr, "--connect reads live hosts: it excludes --host"));
}

int main(int argc, char **argv)
{
	g_autofree char *bin = NULL, *hook = NULL;
	int rc;

	g_test_init(&argc, &argv, NULL);
	g_test_set_nonfatal_assertions();
	cap_bin = g_getenv("CAP_BIN");
	if (!cap_bin) {
		bin = g_build_filename(g_get_current_dir(), "build/bin/dmem-capacity", NULL);
		cap_bin = bin;
	}
	hook_bin = g_getenv("HOOK_BIN");
	if (!hook_bin) {
		hook = g_build_filename(g_get_current_dir(), "build/bin/dmemfs-hook", NULL);
		hook_bin = hook;
	}
	tmpdir = g_dir_make_tmp("dmem-capacity-XXXXXX", NULL);

	g_test_add_func("/capacity/units/sizes", test_sizes);
	g_test_add_func("/capacity/units/bad-sizes", test_bad_sizes);
	g_test_add_func("/capacity/units/size-limit-4EiB", test_size_limit);
	g_test_add_func("/capacity/units/nodes", test_nodes);
	g_test_add_func("/capacity/model/memmap-and-bitmap", test_memmap);
	g_test_add_func("/capacity/model/2x256G-all-models", test_models_2x256);
	g_test_add_func("/capacity/model/reserve-split", test_reserve_split);
	g_test_add_func("/capacity/model/host-specs", test_host_specs);
	g_test_add_func("/capacity/fit/single-cell", test_fit_single);
	g_test_add_func("/capacity/fit/multi-cell-spread", test_fit_spread);
	g_test_add_func("/capacity/fit/pinned-cells", test_fit_pinned);
	g_test_add_func("/capacity/fit/page-rounding", test_fit_rounding);
	g_test_add_func("/capacity/fit/bad-guest-specs", test_bad_specs);
	g_test_add_func("/capacity/xml/numa-cells-numatune-dimm", test_xml_numa);
	g_test_add_func("/capacity/xml/total-memory-and-units", test_xml_total);
	g_test_add_func("/capacity/xml/bad-input-and-entities", test_xml_bad);
	g_test_add_func("/capacity/xml/caret-nodeset-as-hook-plan", test_xml_caret_as_hook);
	g_test_add_func("/capacity/xml/dimm-unknown-cell-refused", test_xml_dimm_bad_node);
	g_test_add_func("/capacity/xml/virtio-mem-counts-requested", test_xml_virtio_mem);
	g_test_add_func("/capacity/xml/hugepages-guest-has-a-shape", test_xml_hugepages_shape);
	g_test_add_func("/capacity/xml/memory-above-4EiB", test_xml_too_large);
	g_test_add_func("/capacity/xml/file-size-limit", test_xml_file_limit);
	g_test_add_func("/capacity/live/fake-tree", test_live_tree);
	g_test_add_func("/capacity/live/memtotal-fallback", test_live_fallback);
	g_test_add_func("/capacity/live/missing-root", test_live_missing);
	g_test_add_func("/capacity/live/booted-without-dmem", test_live_no_pool);
	g_test_add_func("/capacity/report/json-u64-never-negative", test_json_u64);
	for (size_t i = 0; i < G_N_ELEMENTS(cli_bad); i++) {
		g_autofree char *p = g_strdup_printf("/capacity/cli/exit2/%s", cli_bad[i].name);

		g_test_add_data_func(p, GSIZE_TO_POINTER(i), test_cli_bad);
	}
	g_test_add_func("/capacity/cli/table-planning", test_cli_table);
	g_test_add_func("/capacity/cli/recommend", test_cli_recommend);
	g_test_add_func("/capacity/cli/recommend-node-below-keep", test_cli_recommend_small_node);
	g_test_add_func("/capacity/cli/live-booted-without-dmem", test_cli_live_no_pool);
	g_test_add_func("/capacity/cli/prometheus", test_cli_prometheus);
	g_test_add_func("/capacity/cli/table-live", test_cli_table_live);
	g_test_add_func("/capacity/cli/json-planning", test_cli_json_planning);
	g_test_add_func("/capacity/cli/json-live", test_cli_json_live);
	g_test_add_func("/capacity/cli/xml-file", test_cli_xml_file);
	g_test_add_func("/capacity/cli/svg-well-formed", test_cli_svg);
	g_test_add_func("/capacity/cli/libvirt-readonly-test-driver", test_cli_libvirt);
	g_test_add_func("/capacity/cli/mix", test_cli_mix);
	g_test_add_func("/capacity/cli/connect-fleet-json", test_cli_connect);
	g_test_add_func("/capacity/cli/connect-table-prometheus-errors", test_cli_connect_forms);

	rc = g_test_run();
	if (tmpdir) {
		g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", tmpdir);

		if (system(cmd) != 0)
			g_printerr("could not remove %s\n", tmpdir);
	}
	return rc;
}
