// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmemfs-hook: plans on libvirt 9.0 domain XMLs (cross-checked against the
 * argv real libvirt 9.0 generated for the same XML), admission control,
 * prepare / release / reconnect against a temporary directory, and the CLI.
 */
#include "dmem-xml.h"
#include "domain.h"
#include "hook.h"
#include "testutil.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIX "libvirt-hook/tests/fixtures/"
#define GiB (1ULL << 30)
#define MiB (1ULL << 20)

static DomainPlan *plan_fixture(const char *name, guint64 pagesize, gboolean force, GError **e)
{
	g_autofree char *rel = g_strdup_printf(FIX "%s.xml", name);
	gsize len;
	g_autofree char *xml = test_read_fixture(rel, &len);
	PlanOptions o = { .force = force, .pagesize = pagesize };

	return plan_from_xml(xml, len, &o, e);
}

static const PlanBackend *backend(const DomainPlan *p, guint i)
{
	g_assert_cmpuint(i, <, p->backends->len);
	return g_ptr_array_index(p->backends, i);
}

static char *nodes_of(const PlanBackend *b)
{
	return b->has_nodes ? dmem_nodeset_format(&b->policy.nodes) : g_strdup("-");
}

/* ---- plan vs. what libvirt 9.0 really passes to QEMU ------------------------ */

static void test_plan_vs_libvirt(gconstpointer data)
{
	const char *name = data;
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) p = plan_fixture(name, 0, FALSE, &e);
	g_autofree char *rel = g_strdup_printf("qemu-memdev-wrapper/tests/fixtures/%s.args", name);
	g_autofree char *args = test_read_fixture(rel, NULL);
	g_auto(GStrv) lines = g_strsplit(args, "\n", -1);
	guint seen = 0;

	g_assert_no_error(e);
	g_assert_true(p->opted_in);
	for (guint i = 0; lines[i] && lines[i + 1]; i++) {
		g_autoptr(JsonParser) jp = json_parser_new();
		JsonObject *o;
		const char *type;
		const PlanBackend *b;

		if (strcmp(lines[i], "-object") || lines[i + 1][0] != '{')
			continue;
		g_assert_true(json_parser_load_from_data(jp, lines[i + 1], -1, NULL));
		o = json_node_get_object(json_parser_get_root(jp));
		type = json_object_get_string_member(o, "qom-type");
		if (!g_str_has_prefix(type, "memory-backend-"))
			continue;
		/* same ids, same order, same libvirt size */
		b = backend(p, seen++);
		g_assert_cmpstr(b->id, ==, json_object_get_string_member(o, "id"));
		g_assert_cmpuint(b->libvirt_size, ==,
				 (guint64)json_object_get_int_member(o, "size"));
		g_assert_cmpuint(b->size % b->pagesize, ==, 0);
		g_assert_cmpuint(b->size, >=, b->libvirt_size);
		g_assert_cmpuint(b->size - b->libvirt_size, <, b->pagesize);
		/* a page size of its own exactly where libvirt went to hugetlbfs */
		g_assert_cmpint(g_str_has_prefix(json_object_get_string_member_with_default(o, "mem-path", ""),
						 "/dev/hugepages"), ==, b->pagesize != p->pagesize);
		/* host-nodes/policy equal libvirt's wherever libvirt passes them */
		g_assert_cmpint(json_object_has_member(o, "host-nodes"), ==, b->libvirt_passes_policy);
		if (b->libvirt_passes_policy) {
			JsonArray *hn = json_object_get_array_member(o, "host-nodes");
			guint n = json_array_get_length(hn);

			g_assert_cmpuint(n, ==, dmem_nodeset_count(&b->policy.nodes));
			for (guint k = 0; k < n; k++)
				g_assert_true(dmem_nodeset_has(&b->policy.nodes,
							       (guint)json_array_get_int_element(hn, k)));
			g_assert_cmpstr(json_object_get_string_member(o, "policy"), ==,
					dmem_policy_name(b->policy.mode));
		}
	}
	g_assert_cmpuint(seen, ==, p->backends->len);
	g_assert_cmpuint(seen, >, 0);
}

static void test_plan_sizes_and_ids(void)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) p = plan_fixture("numa-memnode", 0, FALSE, &e);
	g_autoptr(DomainPlan) d = NULL, r = NULL, u = NULL, v = NULL;
	g_autofree char *json = NULL;

	g_assert_no_error(e);
	g_assert_cmpstr(p->uuid, ==, "8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59"); /* lowercased */
	g_assert_cmpstr(p->mount, ==, "/run/dmemfs/2M");
	/* 1048577 KiB -> libvirt 1 MiB alignment -> 2M dpages */
	g_assert_cmpuint(backend(p, 0)->libvirt_size, ==, 1025 * MiB);
	g_assert_cmpuint(backend(p, 0)->size, ==, 1026 * MiB);
	g_assert_cmpuint(backend(p, 1)->size, ==, 2000 * MiB);
	g_assert_cmpuint(backend(p, 2)->size, ==, GiB);

	/* DIMMs: 2 MiB alignment, memdimm<slot>, user aliases kept */
	d = plan_fixture("dimm", 0, FALSE, &e);
	g_assert_no_error(e);
	g_assert_cmpuint(d->backends->len, ==, 4);
	g_assert_cmpstr(backend(d, 1)->id, ==, "memdimm1"); /* explicit slot 1 */
	g_assert_cmpuint(backend(d, 1)->libvirt_size, ==, 514 * MiB);
	g_assert_cmpstr(backend(d, 2)->id, ==, "memdimm0"); /* lowest free slot */
	g_assert_cmpstr(backend(d, 3)->id, ==, "memua-extra");
	g_assert_cmpint(backend(d, 3)->cell, ==, 0);

	/* virtio-mem: ids virtiomem<N> in document order (no slot), a user alias
	 * kept; the file is the whole device, admission counts <requested> */
	v = plan_fixture("virtio-mem", 0, FALSE, &e);
	g_assert_no_error(e);
	g_assert_cmpuint(v->backends->len, ==, 4);
	g_assert_cmpstr(backend(v, 1)->id, ==, "memvirtiomem0");
	g_assert_true(backend(v, 1)->virtio_mem);
	g_assert_cmpuint(backend(v, 1)->size, ==, GiB);
	g_assert_cmpuint(backend(v, 1)->admit, ==, 256 * MiB);
	g_assert_cmpuint(backend(v, 1)->block, ==, 2 * MiB);
	g_assert_cmpstr(backend(v, 2)->id, ==, "memdimm0"); /* virtio-mem took no slot */
	g_assert_false(backend(v, 2)->virtio_mem);
	g_assert_cmpuint(backend(v, 2)->admit, ==, backend(v, 2)->size);
	g_assert_cmpstr(backend(v, 3)->id, ==, "memua-grow");
	g_assert_cmpuint(backend(v, 3)->size, ==, GiB); /* 1023 MiB, 2 MiB aligned */
	g_assert_cmpuint(backend(v, 3)->admit, ==, 0);
	g_assert_cmpuint(backend(v, 3)->block, ==, 4 * MiB);
	json = plan_to_json(v);
	g_assert_nonnull(strstr(json, "\"id\":\"memvirtiomem0\",\"cell\":0,\"size\":1073741824,"
				"\"model\":\"virtio-mem\",\"requested\":268435456,"
				"\"block\":2097152,"));

	/* restrictive: libvirt passes no host-nodes, the hook binds to the nodeset */
	r = plan_fixture("restrictive", 0, FALSE, &e);
	g_assert_no_error(e);
	g_assert_false(backend(r, 0)->libvirt_passes_policy);
	g_assert_cmpint(backend(r, 0)->policy.mode, ==, DMEM_POLICY_BIND);
	g_assert_true(dmem_nodeset_has(&backend(r, 0)->policy.nodes, 0));

	/* units: 1000 MB and 1000000000 bytes; cell ids in any order */
	u = plan_fixture("numa-ram", 0, FALSE, &e);
	g_assert_no_error(e);
	g_assert_cmpuint(backend(u, 0)->libvirt_size, ==, 1000341504);
	g_assert_cmpuint(backend(u, 1)->libvirt_size, ==, 1000341504);
	g_assert_false(backend(u, 0)->has_nodes); /* no numatune */
}

static void test_plan_multinode(void)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) p = plan_fixture("multinode", 0, FALSE, &e);
	const char *want[][3] = {
		{ "ram-node0", "0,3", "bind" },        /* 0-3,^1,^2 */
		{ "ram-node1", "1-2", "interleave" },
		{ "ram-node2", "0-1", "bind" },        /* global <memory> */
		{ "memdimm0", "3", "interleave" },     /* source nodemask, memnode 1 mode */
	};

	g_assert_no_error(e);
	g_assert_cmpuint(p->pagesize, ==, GiB);
	g_assert_cmpuint(p->backends->len, ==, 4);
	for (guint i = 0; i < 4; i++) {
		g_autofree char *n = nodes_of(backend(p, i));

		g_assert_cmpstr(backend(p, i)->id, ==, want[i][0]);
		g_assert_cmpstr(n, ==, want[i][1]);
		g_assert_cmpstr(dmem_policy_name(backend(p, i)->policy.mode), ==, want[i][2]);
	}
	/* 2049 MiB rounded up to 1G dpages */
	g_assert_cmpuint(backend(p, 1)->libvirt_size, ==, 2049 * MiB);
	g_assert_cmpuint(backend(p, 1)->size, ==, 3 * GiB);
}

typedef struct {
	const char *fixture;
	const char *message;
} Refusal;

static const Refusal refusals[] = {
	{ "bad-hugepages", "<hugepages><page> size 16 KiB: dmemfs pages are 4K, 2M or 1G" },
	{ "bad-hugepages-nodeset", "<hugepages><page> nodeset: 3 is not a guest NUMA cell" },
	{ "bad-dimm-pagesize", "memory device <source><pagesize> 64 KiB: dmemfs pages are 4K, "
			       "2M or 1G" },
	{ "bad-placement-auto", "placement='auto' is not supported" },
	{ "bad-huge-size", "too large" },
	{ "bad-huge-cell", "overflowed after alignment" },
	{ "bad-unit", "unknown memory unit 'XB'" },
	{ "bad-nodeset", "invalid nodeset '0-3,^2-3'" },
	{ "bad-legacy-machine", "legacy -numa node,mem=" },
	{ "bad-virtio-mem", "model 'nvdimm' is not supported" },
	{ "bad-virtio-mem-block", "memvirtiomem0: virtio-mem block size 1024 KiB is smaller than "
				  "the dmemfs page size (2M)" },
	{ "bad-virtio-mem-pagesize", "memvirtiomem0: virtio-mem block size 2048 KiB is smaller "
				     "than the dmemfs page size (1G)" },
	{ "bad-virtio-mem-restrictive", "virtio-mem with numatune mode 'restrictive'" },
	{ "bad-virtio-mem-requested", "requested size is larger than its size" },
	{ "bad-virtio-mem-slots", "memory device count '3' exceeds slots count '2'" },
	{ "bad-virtio-mem-node", "virtio-mem device without <target><node>" },
	{ "bad-mode", "unsupported numatune mode 'firsttouch'" },
	{ "bad-memnode-cell", "cellid '1' is not a guest NUMA cell" },
	{ "bad-malformed", "malformed domain XML" },
	{ "bad-entity", "DOCTYPE not allowed" },
	{ "bad-no-uuid", "no valid <uuid>" },
};

static void test_plan_refused(gconstpointer data)
{
	const Refusal *r = data;
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) p = plan_fixture(r->fixture, 2 * MiB, TRUE, &e);

	g_assert_null(p);
	g_assert_nonnull(e);
	g_assert_nonnull(strstr(e->message, r->message));
	g_assert_null(strchr(e->message, '\n'));
}

static void test_plan_not_opted(void)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) p = plan_fixture("not-opted", 0, FALSE, &e);

	/* not ours: no plan, whatever it asks for */
	g_assert_no_error(e);
	g_assert_false(p->opted_in);
	g_assert_cmpuint(p->backends->len, ==, 0);
}

/* the plan counts VFIO devices, so nobody parses the domain XML a second time */
static void test_plan_hostdevs(void)
{
	static const char xml[] =
		"<domain><uuid>8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59</uuid><devices>"
		"<hostdev mode='subsystem' type='pci'/><disk/><hostdev/>"
		"<interface type='hostdev'/><interface type='network'/></devices>"
		"<hostdev/></domain>";
	g_autoptr(GError) e = NULL;
	PlanOptions o = { 0 };
	g_autoptr(DomainPlan) p = plan_from_xml(xml, strlen(xml), &o, &e);

	g_assert_no_error(e);
	g_assert_cmpuint(p->hostdevs, ==, 3); /* under <devices>, SR-IOV interfaces too */
	g_assert_cmpint(p->domid, ==, -1); /* not running: no id */
}

/* a running domain's id (libvirt's short name for its memory directory) */
static void test_plan_domid(void)
{
	static const char *const xml[] = {
		("<domain type='kvm' id='17'><name>a</name>"
		 "<uuid>8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59</uuid></domain>"),
		"<domain id='-1'><uuid>8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59</uuid></domain>",
		"<domain id='x'><uuid>8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59</uuid></domain>",
	};
	static const gint64 want[] = { 17, -1, -1 };

	for (guint i = 0; i < G_N_ELEMENTS(xml); i++) {
		g_autoptr(GError) e = NULL;
		PlanOptions o = { 0 };
		g_autoptr(DomainPlan) p = plan_from_xml(xml[i], strlen(xml[i]), &o, &e);

		g_assert_no_error(e);
		g_assert_cmpint(p->domid, ==, want[i]);
	}
}

/*
 * The paths a domain's XML names, for the check that none is on dmemfs:
 * attributes and element text anywhere, absolute only, as written (blanks
 * kept: libvirt does not trim them), <metadata> (our mount=) left out.
 */
static void test_plan_paths(void)
{
	static const char xml[] =
		"<domain><uuid>8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59</uuid>"
		"<metadata><d:dmemfs xmlns:d='" DMEMFS_XMLNS "' pagesize='2M' mount='/run/dmemfs/2M'/></metadata><memory unit='MiB'>64</memory>"
		"<os><kernel> /boot/k </kernel><initrd>rel/i</initrd></os><devices>"
		"<emulator>/usr/bin/qemu</emulator>"
		"<disk type='file'><source file='/run/dmemfs/2M/libvirt-b/ram-node0'/></disk>"
		"<serial type='file'><source path='/var/log/s'/></serial>"
		"<filesystem><source dir='/srv/x'/><target dir='tag'/></filesystem>"
		"</devices></domain>";
	static const char *const want[] = { " /boot/k ", "/usr/bin/qemu",
					    "/run/dmemfs/2M/libvirt-b/ram-node0", "/var/log/s",
					    "/srv/x" };
	g_autoptr(GError) e = NULL;
	PlanOptions o = { 0 };
	g_autoptr(DomainPlan) p = plan_from_xml(xml, strlen(xml), &o, &e);

	g_assert_no_error(e);
	g_assert_cmpuint(p->paths->len, ==, G_N_ELEMENTS(want));
	for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
		gboolean found = FALSE;

		for (guint j = 0; j < p->paths->len; j++)
			found |= !strcmp(g_ptr_array_index(p->paths, j), want[i]);
		g_assert_true(found);
	}
	/* none of these is on dmemfs here (no dmemfs on the unit-test host) */
	g_assert_true(domain_paths_off_dmemfs(p, &e));
	g_assert_no_error(e);
}

/*
 * Page sizes per backend, as libvirt 9.0 picks them (hugepages.args): a
 * cell's <hugepages><page nodeset>, a DIMM's own <source><pagesize>, else
 * its cell's; the rest keep the domain's.  <hugepages/> alone is 2M.
 */
static void test_plan_hugepages(void)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) p = plan_fixture("hugepages", 0, FALSE, &e);
	g_autoptr(DomainPlan) q = NULL;
	g_autofree char *json = NULL;
	static const struct {
		const char *id;
		guint64 pagesize, size;
	} want[] = {
		{ "ram-node0", GiB, GiB }, { "ram-node1", 2 * MiB, GiB },
		{ "memdimm0", GiB, GiB }, { "memdimm1", GiB, GiB }, { "memdimm2", 2 * MiB, 512 * MiB },
	};

	g_assert_no_error(e);
	g_assert_cmpuint(p->pagesize, ==, 2 * MiB);
	g_assert_cmpuint(p->backends->len, ==, G_N_ELEMENTS(want));
	for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
		g_assert_cmpstr(backend(p, i)->id, ==, want[i].id);
		g_assert_cmpuint(backend(p, i)->pagesize, ==, want[i].pagesize);
		g_assert_cmpuint(backend(p, i)->size, ==, want[i].size);
	}
	/* the JSON names a page size only where it is not the domain's */
	json = plan_to_json(p);
	g_assert_nonnull(strstr(json, "{\"id\":\"ram-node0\",\"cell\":0,\"size\":1073741824,"
				      "\"pagesize\":1073741824}"));
	g_assert_nonnull(strstr(json, "{\"id\":\"ram-node1\",\"cell\":1,\"size\":1073741824}"));
	/* <hugepages/> alone: the default huge page, 2M, for a 1G domain */
	q = plan_fixture("not-opted", GiB, TRUE, &e);
	g_assert_no_error(e);
	g_assert_cmpuint(backend(q, 0)->pagesize, ==, 2 * MiB);
	g_assert_cmpuint(q->pagesize, ==, GiB);
}

static void test_plan_pagesize_source(void)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) p = plan_fixture("nonuma", 1 * GiB, TRUE, &e);
	const char *noopt = "<domain><uuid>0b7c6d3e-5f1a-4e2b-9c8d-7a6b5c4d3e2f</uuid>"
			    "<memory>1024</memory></domain>";
	PlanOptions force = { .force = TRUE };
	g_autoptr(DomainPlan) q = NULL;
	g_autofree char *big = g_malloc0(DMEM_XML_MAX + 2);

	g_assert_no_error(e);
	g_assert_cmpuint(p->pagesize, ==, GiB);     /* --pagesize beats metadata 2M */
	g_assert_cmpuint(backend(p, 0)->size, ==, 5 * GiB);
	q = plan_from_xml(noopt, strlen(noopt), &force, &e);
	g_assert_null(q);
	g_assert_nonnull(strstr(e->message, "no dmemfs page size"));
	g_clear_error(&e);
	q = plan_from_xml(big, DMEM_XML_MAX + 1, &force, &e);
	g_assert_null(q);
	g_assert_nonnull(strstr(e->message, "larger than"));
}

static void test_plan_kib(void)
{
	const struct { const char *v, *u; guint64 kib; } ok[] = {
		{ "1", NULL, 1 }, { "1", "", 1 }, { "1", "k", 1 }, { "1", "KiB", 1 },
		{ "1", "KB", 1 }, { "1000", "bytes", 1 }, { "1025", "b", 2 },
		{ "1", "M", 1024 }, { "1", "mib", 1024 }, { "1", "MB", 977 },
		{ "1", "G", 1048576 }, { "1", "GB", 976563 }, { "2", "T", 2147483648ULL },
		{ " 7", "KiB", 7 },
	};
	const struct { const char *v, *u; } bad[] = {
		{ "1", "XB" }, { "1", "KIBI" }, { "-1", "KiB" }, { "1.5", "GiB" },
		{ "abc", NULL }, { "", NULL }, { "8", "EiB" }, { "9223372036854775807", "KiB" },
		{ "18446744073709551616", "b" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(ok); i++) {
		guint64 k = 0;
		g_autoptr(GError) e = NULL;

		g_assert_true(plan_parse_kib(ok[i].v, ok[i].u, &k, &e));
		g_assert_cmpuint(k, ==, ok[i].kib);
	}
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		guint64 k = 0;
		g_autoptr(GError) e = NULL;

		g_assert_false(plan_parse_kib(bad[i].v, bad[i].u, &k, &e));
		g_assert_nonnull(e);
	}
}

/* ---- admission control ----------------------------------------------------- */

static GArray *stats_of(guint n, const guint64 *free_bytes)
{
	GArray *s = g_array_new(FALSE, TRUE, sizeof(DmemNodeStat));

	for (guint i = 0; i < n; i++) {
		DmemNodeStat st = { .node = i, .total_bytes = 16 * GiB, .free_bytes = free_bytes[i],
				    .used_bytes = 16 * GiB - free_bytes[i] };

		g_array_append_val(s, st);
	}
	return s;
}

static void test_admission(void)
{
	g_autoptr(GError) e = NULL;
	/*
	 * multinode needs: 3G bind on 0,3; 3G interleave on 1-2 (counted as 2G on
	 * each: ceil(pages / nodes)); 1G bind on 0-1; 1G interleave on 3
	 */
	g_autoptr(DomainPlan) p = plan_fixture("multinode", 0, FALSE, &e);
	const guint64 fits[] = { 3 * GiB, 3 * GiB, 2 * GiB, 1 * GiB };
	const guint64 short2[] = { 3 * GiB, 2 * GiB, 1 * GiB, 4 * GiB }; /* interleave needs 2+2 */
	const guint64 tight[] = { 2 * GiB, 2 * GiB, 2 * GiB, 1 * GiB + 2 * MiB };
	g_autoptr(GArray) a = stats_of(4, fits), b = stats_of(4, short2), c = stats_of(4, tight);
	g_autoptr(GArray) none = g_array_new(FALSE, TRUE, sizeof(DmemNodeStat));

	g_assert_no_error(e);
	g_assert_true(plan_admit(p, a, &e));
	g_assert_no_error(e);
	g_assert_false(plan_admit(p, b, &e));
	g_assert_error(e, DMEM_ERROR, DMEM_ERROR_NO_SPACE);
	/* one line naming what was needed and what is free per node */
	g_assert_null(strchr(e->message, '\n'));
	g_assert_nonnull(strstr(e->message, "ram-node1=3221225472 on nodes 1-2 (interleave)"));
	g_assert_nonnull(strstr(e->message, "ram-node0=3221225472 on nodes 0,3 (bind)"));
	g_assert_nonnull(strstr(e->message, "free: node0=3221225472 node1=2147483648 "
					    "node2=1073741824 node3=4294967296"));
	g_clear_error(&e);
	/* node 3 is shared by ram-node0 and memdimm0: 1G + 2M free is not 2G */
	g_assert_false(plan_admit(p, c, &e));
	g_clear_error(&e);
	g_assert_false(plan_admit(p, none, &e));
	g_assert_nonnull(strstr(e->message, "node0=0 (no dmem)"));
}

static void test_admission_policies(void)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) nn = plan_fixture("nonuma", 0, FALSE, &e); /* 4098 MiB, any node */
	g_autoptr(DomainPlan) pm = plan_fixture("numa-memnode", 0, FALSE, &e);
	const guint64 split[] = { 2 * GiB, 3 * GiB };
	const guint64 small[] = { 2 * GiB, 2 * GiB };
	/* preferred node 0 may spill to node 1; bind 0 may not */
	const guint64 pref[] = { 2100 * MiB, 2000 * MiB };
	g_autoptr(GArray) a = stats_of(2, split), b = stats_of(2, small), c = stats_of(2, pref);

	g_assert_no_error(e);
	g_assert_true(plan_admit(nn, a, &e)); /* no numatune: spread over nodes */
	g_assert_false(plan_admit(nn, b, &e));
	g_assert_nonnull(strstr(e->message, "pc.ram=4297064448 on any node"));
	g_clear_error(&e);
	/* numa-memnode: node0 needs 1026M bind + 1G interleave; 2000M preferred spills */
	g_assert_true(plan_admit(pm, c, &e));
	g_assert_no_error(e);
}

/* ---- prepare / release / reconnect with a fake dmemfs -------------------------- */

static guint fake_calls, fake_barrier, fake_in_flight, fake_max_in_flight;
static const char *fake_fail_name;
static gboolean fake_fs_ok = TRUE;
static GMutex fake_lock;
static GCond fake_cond;

static guint64 fake_fs_unmounted; /* a page size whose mount is not a dmemfs */

static gboolean fake_check(int dirfd, guint64 pagesize, GError **error)
{
	gboolean ok = fake_fs_ok && pagesize != fake_fs_unmounted;

	(void)dirfd;
	if (!ok)
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "not a dmemfs mount (fake)");
	return ok;
}

/*
 * Fails for the file named fake_fail_name.  With fake_barrier set, each
 * call waits (up to 5 s) until that many calls are in flight: the most
 * seen at once is fake_max_in_flight.
 */
static gboolean fake_prealloc(int fd, guint64 size, guint64 pagesize, const DmemPolicy *pol,
			      GError **error)
{
	g_autofree char *link = g_strdup_printf("/proc/self/fd/%d", fd);
	g_autofree char *path = g_file_read_link(link, NULL);
	gint64 deadline = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;

	(void)size; (void)pagesize; (void)pol;
	g_mutex_lock(&fake_lock);
	fake_calls++;
	fake_in_flight++;
	fake_max_in_flight = MAX(fake_max_in_flight, fake_in_flight);
	g_cond_broadcast(&fake_cond);
	while (fake_barrier && fake_in_flight < fake_barrier &&
	       g_cond_wait_until(&fake_cond, &fake_lock, deadline))
		;
	fake_in_flight--;
	g_mutex_unlock(&fake_lock);
	if (fake_fail_name && path && g_str_has_suffix(path, fake_fail_name)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_NO_SPACE, "fallocate: No space left on device");
		return FALSE;
	}
	return TRUE;
}

static const DmemfsOps fake_ops = { fake_check, fake_prealloc };

static void fake_reset(void)
{
	fake_calls = 0;
	fake_fail_name = NULL;
	fake_barrier = 0;
	fake_max_in_flight = 0;
	fake_fs_ok = TRUE;
	fake_fs_unmounted = 0;
}

static DomainEnv env_of(TestTree *t)
{
	DomainEnv env = { t->cfg, &fake_ops, getuid(), getgid() };

	return env;
}

static DomainPlan *prep_plan(TestTree *t, const char *fixture)
{
	g_autoptr(GError) e = NULL;
	DomainPlan *p = plan_fixture(fixture, 0, FALSE, &e);

	g_assert_no_error(e);
	g_free(p->mount); /* the fixture names /run/dmemfs/2M */
	p->mount = NULL;
	test_tree_set_node(t, 0, 64 * GiB, 32 * GiB);
	test_tree_set_node(t, 1, 64 * GiB, 32 * GiB);
	return p;
}

static void test_prepare_creates(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(DomainPlan) p = prep_plan(t, "numa-memnode");
	g_autoptr(GError) e = NULL;
	DomainEnv env = env_of(t);
	g_autofree char *dir = dmem_domain_path(t->mounts[1], p->uuid, NULL);
	struct stat st;

	fake_reset();
	/* every cell's file is preallocated at once, by a thread of its own */
	fake_barrier = p->backends->len;
	g_assert_true(domain_prepare(&env, p, &e));
	g_assert_no_error(e);
	g_assert_cmpint(stat(dir, &st), ==, 0);
	g_assert_cmpuint(st.st_mode & 07777, ==, 0710);
	g_assert_cmpint(test_count_entries(dir), ==, 3);
	for (guint i = 0; i < p->backends->len; i++) {
		g_autofree char *f = g_build_filename(dir, backend(p, i)->id, NULL);

		g_assert_cmpint(stat(f, &st), ==, 0);
		g_assert_cmpuint(st.st_size, ==, backend(p, i)->size);
		g_assert_cmpuint(st.st_mode & 07777, ==, 0600);
		g_assert_cmpuint(st.st_uid, ==, getuid());
		g_assert_cmpuint(st.st_gid, ==, getgid());
	}
	g_assert_cmpuint(fake_calls, ==, 3);
	g_assert_cmpuint(fake_max_in_flight, ==, 3);
	g_assert_true(domain_reconnect(&env, p, &e));
	g_assert_no_error(e);
}

/*
 * virtio-mem: its file is the device's whole size but stays sparse (QEMU
 * preallocates the blocks it plugs); admission counts only <requested>.
 */
static void test_prepare_virtio_mem(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(DomainPlan) p = prep_plan(t, "virtio-mem");
	g_autoptr(GError) e = NULL;
	DomainEnv env = env_of(t);
	g_autofree char *dir = dmem_domain_path(t->mounts[1], p->uuid, NULL);
	g_autofree char *f = g_build_filename(dir, "memvirtiomem0", NULL);
	struct stat st;

	fake_reset();
	/* cell 1G + DIMM 514M + requested 256M = 1794M fit in 1800M; 1G + 1G would not */
	test_tree_set_node(t, 0, 64 * GiB, 1800 * MiB);
	g_assert_true(domain_prepare(&env, p, &e));
	g_assert_no_error(e);
	g_assert_cmpuint(fake_calls, ==, 2); /* ram-node0 and memdimm0 only */
	g_assert_cmpint(stat(f, &st), ==, 0);
	g_assert_cmpuint(st.st_size, ==, GiB);
	g_assert_cmpuint(st.st_mode & 07777, ==, 0600);
	g_assert_cmpint(test_count_entries(dir), ==, 4);
	g_assert_true(domain_release(&env, p->uuid, &e));
	/* 2M less: refused, and the message names what the device requests */
	test_tree_set_node(t, 0, 64 * GiB, 1792 * MiB);
	g_assert_false(domain_prepare(&env, p, &e));
	g_assert_nonnull(strstr(e->message, "memvirtiomem0=268435456 (virtio-mem requested, of "
				"1073741824) on node 0 (bind)"));
	g_assert_cmpint(access(dir, F_OK), ==, -1);
}

/*
 * Backends with page sizes of their own go to the mount of that size; a
 * page size with no dmemfs mounted is refused with the sizes that are,
 * before anything is created.
 */
static void test_prepare_hugepages(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(DomainPlan) p = prep_plan(t, "hugepages");
	g_autoptr(GError) e = NULL;
	DomainEnv env = env_of(t);
	g_autofree char *d2 = dmem_domain_path(t->mounts[1], p->uuid, NULL);
	g_autofree char *d1g = dmem_domain_path(t->mounts[2], p->uuid, NULL);
	g_autofree char *want = NULL;

	fake_reset();
	fake_fs_unmounted = GiB;
	g_assert_false(domain_prepare(&env, p, &e));
	want = g_strdup_printf("ram-node0: page size 1G: %s: not a dmemfs mount (fake) (dmemfs "
			       "mounted here: 4K %s, 2M %s)", t->mounts[2], t->mounts[0],
			       t->mounts[1]);
	g_assert_cmpstr(e->message, ==, want);
	g_assert_cmpuint(fake_calls, ==, 0);
	for (int i = 0; i < DMEM_N_PAGESIZES; i++)
		g_assert_cmpint(test_count_entries(t->mounts[i]), ==, 0);
	g_clear_error(&e);

	fake_reset();
	g_assert_true(domain_prepare(&env, p, &e));
	g_assert_no_error(e);
	g_assert_cmpint(test_count_entries(d1g), ==, 3); /* ram-node0, memdimm0, memdimm1 */
	g_assert_cmpint(test_count_entries(d2), ==, 2);  /* ram-node1, memdimm2 */
	g_assert_cmpint(test_count_entries(t->mounts[0]), ==, 0);
	g_assert_true(domain_reconnect(&env, p, &e));
	g_assert_true(domain_release(&env, p->uuid, &e));
	g_assert_cmpint(access(d1g, F_OK), ==, -1);
	g_assert_cmpint(access(d2, F_OK), ==, -1);

	/* a failure in one mount removes what the other got */
	fake_reset();
	fake_fail_name = "/memdimm2";
	g_assert_false(domain_prepare(&env, p, &e));
	g_assert_nonnull(strstr(e->message, "memdimm2: fallocate: No space left"));
	g_assert_cmpint(test_count_entries(t->mounts[1]), ==, 0);
	g_assert_cmpint(test_count_entries(t->mounts[2]), ==, 0);
}

static void test_prepare_cleanup_halfway(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(DomainPlan) p = prep_plan(t, "dimm");
	g_autoptr(GError) e = NULL;
	DomainEnv env = env_of(t);

	fake_reset();
	fake_fail_name = "/memdimm0"; /* the others are created meanwhile */
	g_assert_false(domain_prepare(&env, p, &e));
	g_assert_nonnull(strstr(e->message, "memdimm0: fallocate: No space left"));
	g_assert_cmpuint(fake_calls, ==, p->backends->len);
	g_assert_cmpuint(fake_calls, >, 1);
	g_assert_cmpint(test_count_entries(t->mounts[1]), ==, 0); /* not even the dir */
}

static void test_prepare_refusals_create_nothing(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(DomainPlan) p = prep_plan(t, "numa-memnode");
	g_autoptr(GError) e = NULL;
	DomainEnv env = env_of(t);

	/* admission: node 0 has 1G free, the domain needs more there */
	fake_reset();
	test_tree_set_node(t, 0, 64 * GiB, GiB);
	g_assert_false(domain_prepare(&env, p, &e));
	g_assert_error(e, DMEM_ERROR, DMEM_ERROR_NO_SPACE);
	g_assert_cmpuint(fake_calls, ==, 0);
	g_assert_cmpint(test_count_entries(t->mounts[1]), ==, 0);
	g_clear_error(&e);
	/* not a dmemfs */
	test_tree_set_node(t, 0, 64 * GiB, 32 * GiB);
	fake_fs_ok = FALSE;
	g_assert_false(domain_prepare(&env, p, &e));
	g_assert_nonnull(strstr(e->message, "not a dmemfs mount"));
	g_assert_cmpint(test_count_entries(t->mounts[1]), ==, 0);
	g_clear_error(&e);
	/* a mount from the (untrusted) XML that is not configured */
	fake_fs_ok = TRUE;
	p->mount = g_strdup("/etc");
	g_assert_false(domain_prepare(&env, p, &e));
	g_assert_nonnull(strstr(e->message, "not a configured 2M dmemfs mount"));
	g_clear_error(&e);
	/* sysfs stats missing */
	g_clear_pointer(&p->mount, g_free);
	g_free(t->cfg->sysfs_root);
	t->cfg->sysfs_root = g_strdup("/nonexistent/dmem");
	g_assert_false(domain_prepare(&env, p, &e));
	g_assert_cmpint(test_count_entries(t->mounts[1]), ==, 0);
}

static void test_prepare_reclaims_stale(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(DomainPlan) p = prep_plan(t, "nonuma");
	g_autoptr(GError) e = NULL;
	DomainEnv env = env_of(t);
	g_autofree char *stale = dmem_domain_path(t->mounts[2], p->uuid, NULL);
	g_autofree char *f = g_build_filename(stale, "old", NULL);
	g_autofree char *now = dmem_domain_path(t->mounts[1], p->uuid, "pc.ram");

	fake_reset();
	g_mkdir(stale, 0700);
	g_file_set_contents(f, "x", 1, NULL);
	g_assert_true(domain_prepare(&env, p, &e));
	g_assert_no_error(e);
	g_assert_false(g_file_test(stale, G_FILE_TEST_EXISTS));
	g_assert_true(g_file_test(now, G_FILE_TEST_IS_REGULAR));
}

static void test_release_idempotent(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(DomainPlan) p = prep_plan(t, "multinode");
	g_autoptr(GError) e = NULL;
	DomainEnv env = env_of(t);
	/* release XML: same domain, no id attribute, only the uuid matters */
	gsize len;
	g_autofree char *xml = test_read_fixture(FIX "multinode.xml", &len);
	PlanOptions o = { .uuid_only = TRUE };
	g_autoptr(DomainPlan) rel = NULL;
	char *id = strstr(xml, " id='42'");

	g_assert_nonnull(id);
	memset(id, ' ', strlen(" id='42'"));
	rel = plan_from_xml(xml, len, &o, &e);
	g_assert_no_error(e);
	g_assert_cmpstr(rel->uuid, ==, p->uuid);
	g_assert_cmpuint(rel->backends->len, ==, 0);

	/* release before any prepare (libvirt does that after a failed prepare) */
	g_assert_true(domain_release(&env, rel->uuid, &e));
	test_tree_set_node(t, 2, 64 * GiB, 32 * GiB);
	test_tree_set_node(t, 3, 64 * GiB, 32 * GiB);
	fake_reset();
	g_assert_true(domain_prepare(&env, p, &e));
	g_assert_no_error(e);
	g_assert_cmpint(test_count_entries(t->mounts[2]), ==, 1);
	g_assert_true(domain_release(&env, rel->uuid, &e));
	g_assert_cmpint(test_count_entries(t->mounts[2]), ==, 0);
	g_assert_true(domain_release(&env, rel->uuid, &e));
	g_assert_no_error(e);
	/* reconnect after the files vanished: reported */
	g_assert_false(domain_reconnect(&env, p, &e));
	g_assert_nonnull(strstr(e->message, "ram-node0"));
}

/*
 * A domain dmem-liveupdate carries (the mark in its directory): release
 * keeps its files, prepare reuses them as they are; without the mark,
 * release frees them as before.
 */
static void test_carried_kept_and_reused(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(DomainPlan) p = prep_plan(t, "nonuma");
	g_autoptr(GError) e = NULL;
	DomainEnv env = env_of(t);
	g_autofree char *dir = dmem_domain_path(t->mounts[1], p->uuid, NULL);
	g_autofree char *f = g_build_filename(dir, "pc.ram", NULL);
	g_autofree char *mark = g_build_filename(dir, DMEM_CARRIED_MARK, NULL);
	struct stat before, after;

	fake_reset();
	g_assert_true(domain_prepare(&env, p, &e));
	g_assert_no_error(e);
	g_assert_false(domain_carried(&env, p->uuid));
	g_assert_cmpint(stat(f, &before), ==, 0);
	g_assert_true(g_file_set_contents(mark, "", 0, NULL));
	/* a mark the carry state does not list counts for nothing, and goes */
	g_assert_false(domain_carried(&env, p->uuid));
	g_assert_false(g_file_test(mark, G_FILE_TEST_EXISTS));
	g_assert_true(g_file_set_contents(mark, "", 0, NULL));
	test_tree_carry(t, p->uuid, TRUE);
	g_assert_true(domain_carried(&env, p->uuid));
	/* release end and prepare begin of a carried domain keep its files */
	g_assert_true(domain_on_release(&env, p->uuid, &e));
	g_assert_true(domain_on_prepare(&env, p, &e));
	g_assert_no_error(e);
	g_assert_cmpint(stat(f, &after), ==, 0);
	g_assert_cmpuint(before.st_ino, ==, after.st_ino);
	g_assert_true(g_file_test(mark, G_FILE_TEST_IS_REGULAR));
	/* a state that cannot be read: the files stay (the mark counts) */
	{
		g_autofree char *sp = g_build_filename(t->dir, "state", DMEM_CARRY_FILE, NULL);
		g_autofree char *good = NULL;

		g_assert_true(g_file_get_contents(sp, &good, NULL, NULL));
		g_assert_true(g_file_set_contents(sp, "garbage", -1, NULL));
		g_assert_true(domain_carried(&env, p->uuid));
		g_assert_true(g_file_set_contents(sp, good, -1, NULL));
	}
	/* the state gone, the mark left behind: an ordinary domain again */
	test_tree_carry(t, p->uuid, FALSE);
	g_assert_false(domain_carried(&env, p->uuid));
	g_assert_false(g_file_test(mark, G_FILE_TEST_EXISTS));
	g_assert_true(domain_on_release(&env, p->uuid, &e));
	g_assert_false(g_file_test(dir, G_FILE_TEST_EXISTS));
}

/* ---- the CLI ------------------------------------------------------------------- */

static const char *golden_numa_memnode =
	"{\"uuid\":\"8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59\",\"pagesize\":2097152,\"backends\":["
	"{\"id\":\"ram-node0\",\"cell\":0,\"size\":1075838976,\"host_nodes\":[0],\"policy\":\"bind\"},"
	"{\"id\":\"ram-node1\",\"cell\":1,\"size\":2097152000,\"host_nodes\":[0],\"policy\":\"preferred\"},"
	"{\"id\":\"ram-node2\",\"cell\":2,\"size\":1073741824,\"host_nodes\":[0],\"policy\":\"interleave\"}]}\n";

static void test_cli_plan(void)
{
	g_autofree char *xml = test_read_fixture(FIX "numa-memnode.xml", NULL);
	g_autofree char *plain = test_read_fixture(FIX "nonuma-plain.xml", NULL);
	g_autofree char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL;
	const char *a1[] = { "--plan", NULL };
	const char *a2[] = { "--plan", "--pagesize", "1G", NULL };

	g_assert_cmpint(test_run("dmemfs-hook", a1, NULL, xml, &out, &err), ==, 0);
	g_assert_cmpstr(out, ==, golden_numa_memnode);
	g_assert_cmpstr(err, ==, "");
	/* no numatune: no host_nodes/policy; 1 GiB pc.ram stays 1 GiB with 1G pages */
	g_assert_cmpint(test_run("dmemfs-hook", a2, NULL, plain, &out2, &err2), ==, 0);
	g_assert_cmpstr(out2, ==, "{\"uuid\":\"33333333-4444-4555-8666-777777777777\","
				  "\"pagesize\":1073741824,\"backends\":[{\"id\":\"pc.ram\","
				  "\"size\":1073741824}]}\n");
}

static void test_cli_plan_check_and_refusal(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *xml = test_read_fixture(FIX "numa-memnode.xml", NULL);
	g_autofree char *bad = test_read_fixture(FIX "bad-hugepages.xml", NULL);
	const char *a[] = { "--plan", "--check", NULL };
	const char *p[] = { "--plan", NULL };
	const char *env[] = { "DMEMFS_HOST_CONF", t->conf, NULL };
	g_autofree char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL;
	g_autofree char *out3 = NULL, *err3 = NULL;

	test_tree_set_node(t, 0, 8 * GiB, 8 * GiB);
	g_assert_cmpint(test_run("dmemfs-hook", a, env, xml, &out, &err), ==, 0);
	g_assert_cmpstr(out, ==, golden_numa_memnode);
	g_assert_nonnull(strstr(err, "fits in the dmem pool; free: node0=8589934592"));
	g_assert_null(strstr(err, "zeroed"));
	/* a kernel that zeroes in the background: how much of it is clean */
	test_tree_set_stat(t, 0, "zeroed_bytes", 2 * GiB);
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	g_assert_cmpint(test_run("dmemfs-hook", a, env, xml, &out, &err), ==, 0);
	g_assert_nonnull(strstr(err, " node0=8589934592 (2147483648 zeroed)"));
	test_tree_set_node(t, 0, 8 * GiB, 3 * GiB);
	g_assert_cmpint(test_run("dmemfs-hook", a, env, xml, &out2, &err2), ==, 1);
	g_assert_cmpstr(out2, ==, "");
	g_assert_true(g_str_has_prefix(err2, "dmemfs-hook: domain 8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59 does not fit"));
	g_assert_cmpint(strchr(err2, '\n') - err2, ==, (int)strlen(err2) - 1); /* one line */
	g_assert_null(strstr(err2, "pool short"));
	/* a boot that reserved less than dmem= asked says so, on the same line */
	test_tree_set_stat(t, 0, "requested_bytes", 16 * GiB);
	g_clear_pointer(&out2, g_free);
	g_clear_pointer(&err2, g_free);
	g_assert_cmpint(test_run("dmemfs-hook", a, env, xml, &out2, &err2), ==, 1);
	g_assert_nonnull(strstr(err2, " node0=3221225472 (2147483648 zeroed) (pool short: "
				      "8589934592 of the 17179869184 bytes dmem= asked)"));
	g_assert_cmpint(strchr(err2, '\n') - err2, ==, (int)strlen(err2) - 1);
	g_assert_cmpint(test_run("dmemfs-hook", p, env, bad, &out3, &err3), ==, 1);
	g_assert_cmpstr(err3, ==, "dmemfs-hook: <hugepages><page> size 16 KiB: dmemfs pages are "
				  "4K, 2M or 1G\n");
}

static void test_cli_hook_ops(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *xml = test_read_fixture(FIX "nonuma.xml", NULL);
	g_autofree char *other = test_read_fixture(FIX "not-opted.xml", NULL);
	const char *env[] = { "DMEMFS_HOST_CONF", t->conf, NULL };
	const char *ops[][3] = {
		{ "start", "begin", "0" }, { "started", "begin", "0" }, { "stopped", "end", "0" },
		{ "migrate", "begin", "0" }, { "restore", "begin", "0" }, { "attach", "begin", "0" },
	};
	g_autofree char *dir = dmem_domain_path(t->mounts[1], "0b7c6d3e-5f1a-4e2b-9c8d-7a6b5c4d3e2f", NULL);

	test_tree_set_node(t, 0, 64 * GiB, 64 * GiB);
	/* every other operation: exit 0, no output (migrate/restore would take stdout as XML) */
	for (guint i = 0; i < G_N_ELEMENTS(ops); i++) {
		const char *a[] = { "nonuma", ops[i][0], ops[i][1], "-", NULL };
		g_autofree char *out = NULL, *err = NULL;

		g_assert_cmpint(test_run("dmemfs-hook", a, env, xml, &out, &err), ==, 0);
		g_assert_cmpstr(out, ==, "");
		g_assert_cmpstr(err, ==, "");
	}
	/* a domain without our metadata passes straight through, even with hugepages */
	{
		const char *a[] = { "plain", "prepare", "begin", "-", NULL };
		g_autofree char *out = NULL, *err = NULL;

		g_assert_cmpint(test_run("dmemfs-hook", a, env, other, &out, &err), ==, 0);
		g_assert_cmpstr(out, ==, "");
		g_assert_cmpstr(err, ==, "");
	}
	/*
	 * <seclabel type='none'/>, on a dmem domain or any other: refused at
	 * prepare unless the host says confinement=none (the tree's config does)
	 */
	{
		g_autofree char *c = NULL;
		g_autofree char *strict = g_build_filename(t->dir, "strict.conf", NULL);
		const char *senv[] = { "DMEMFS_HOST_CONF", strict, NULL };
		const char *docs[] = { xml, other };

		g_assert_true(g_file_get_contents(t->conf, &c, NULL, NULL));
		*strstr(c, "confinement=none") = '#';
		g_assert_true(g_file_set_contents(strict, c, -1, NULL));
		for (guint i = 0; i < G_N_ELEMENTS(docs); i++) {
			const char *a[] = { "d", "prepare", "begin", "-", NULL };
			g_autofree char *un = g_strdup(docs[i]);
			g_autofree char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL;
			char *end = strstr(un, "</domain>");

			g_assert_nonnull(end);
			*end = '\0';
			{
				g_autofree char *doc = g_strconcat(un, "<seclabel type='none'/></domain>",
								    NULL);
				/* a static label: "unconfined", or another domain's profile */
				g_autofree char *stat = g_strconcat(un, "<seclabel type='static' "
								     "model='apparmor' relabel='no'>"
								     "<label>libvirt-00000000-0000-4000-"
								     "8000-000000000001</label></seclabel>"
								     "</domain>", NULL);
				g_autofree char *out3 = NULL, *err3 = NULL;

				g_assert_cmpint(test_run("dmemfs-hook", a, senv, doc, &out, &err), ==, 1);
				g_assert_nonnull(strstr(err, "its <seclabel> is type 'none' or a static"));
				g_assert_cmpint(test_run("dmemfs-hook", a, senv, stat, &out3, &err3), ==, 1);
				g_assert_nonnull(strstr(err3, "its <seclabel> is type 'none' or a static"));
				g_assert_cmpint(test_count_entries(t->mounts[1]), ==, 0);
				/* the host separates domains otherwise: the plain one passes */
				if (i == 1) {
					g_assert_cmpint(test_run("dmemfs-hook", a, env, doc, &out2, &err2),
							==, 0);
					g_assert_cmpstr(err2, ==, "");
				}
			}
		}
	}
	/* prepare on a directory that is not dmemfs: one line, exit 1, nothing created */
	{
		const char *a[] = { "nonuma", "prepare", "begin", "-", NULL };
		g_autofree char *out = NULL, *err = NULL;

		g_assert_cmpint(test_run("dmemfs-hook", a, env, xml, &out, &err), ==, 1);
		g_assert_true(g_str_has_prefix(err, "dmemfs-hook: domain 0b7c6d3e-5f1a-4e2b-9c8d-7a6b5c4d3e2f: "));
		g_assert_nonnull(strstr(err, "not a dmemfs mount"));
		g_assert_cmpint(strchr(err, '\n') - err, ==, (int)strlen(err) - 1);
		g_assert_cmpint(test_count_entries(t->mounts[1]), ==, 0);
	}
	/* release without id, twice, after files were left behind */
	g_mkdir(dir, 0700);
	for (int i = 0; i < 2; i++) {
		const char *a[] = { "nonuma", "release", "end", "-", NULL };
		g_autofree char *out = NULL, *err = NULL;
		g_autofree char *noid = g_strdup(xml);
		char *id = strstr(noid, " id='3'");

		memset(id, ' ', 7);
		g_assert_cmpint(test_run("dmemfs-hook", a, env, noid, &out, &err), ==, 0);
		g_assert_cmpstr(err, ==, "");
		g_assert_false(g_file_test(dir, G_FILE_TEST_EXISTS));
	}
	/* reconnect with missing files: report, but exit 0 (non-zero kills QEMU) */
	{
		const char *a[] = { "nonuma", "reconnect", "begin", "-", NULL };
		g_autofree char *out = NULL, *err = NULL;

		g_assert_cmpint(test_run("dmemfs-hook", a, env, xml, &out, &err), ==, 0);
		g_assert_nonnull(strstr(err, "missing or short"));
	}
	/* usage */
	{
		const char *a[] = { "only-two", "args", NULL };

		g_assert_cmpint(test_run("dmemfs-hook", a, env, "", NULL, NULL), ==, 2);
	}
	/* a domain named "--plan" is hooked like any other */
	{
		const char *a[] = { "--plan", "release", "end", "-", NULL };
		g_autofree char *out = NULL, *err = NULL;

		g_assert_cmpint(test_run("dmemfs-hook", a, env, xml, &out, &err), ==, 0);
		g_assert_cmpstr(out, ==, "");
		g_assert_cmpstr(err, ==, "");
	}
	/* --plan's options: one line, exit 2, nothing read */
	{
		static const char *const bad[][4] = {
			{ "--plan", "--frobnicate", NULL },
			{ "--plan", "--pagesize", NULL },
			{ "--plan", "stray", NULL },
			{ "--plan", "--pagesize", "64K" },
		};

		for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
			g_autofree char *out = NULL, *err = NULL;

			g_assert_cmpint(test_run("dmemfs-hook", (const char *const *)bad[i], env, xml,
						 &out, &err), ==, 2);
			g_assert_true(g_str_has_prefix(err, "dmemfs-hook: "));
			g_assert_true(strchr(err, '\n') == err + strlen(err) - 1);
			g_assert_cmpstr(out, ==, "");
		}
	}
}

/*
 * The events the hook handles, one function each, found by (operation,
 * sub-operation); libvirt's every other event is not ours: exit 0 without
 * output, stdin not even read (dmemfs-hook(8)).
 */
static void test_event_table(void)
{
	static const char *const ours[][2] = {
		{ "prepare", "begin" }, { "start", "begin" }, { "reconnect", "begin" },
		{ "release", "end" },
	};
	static const char *const others[][2] = {
		{ "prepare", "end" }, { "start", "end" }, { "started", "begin" },
		{ "stopped", "end" }, { "release", "begin" }, { "reconnect", "end" },
		{ "migrate", "begin" }, { "restore", "begin" }, { "attach", "begin" },
		{ "PREPARE", "begin" }, { "prepare", "begin " }, { "", "" },
	};
	g_autoptr(TestTree) t = test_tree_new(NULL);
	const char *env[] = { "DMEMFS_HOST_CONF", t->conf, NULL };

	for (guint i = 0; i < G_N_ELEMENTS(ours); i++) {
		const HookEvent *ev = hook_event_find(ours[i][0], ours[i][1]);

		g_assert_nonnull(ev);
		if (!ev)
			continue;
		g_assert_cmpstr(ev->op, ==, ours[i][0]);
		g_assert_cmpstr(ev->sub, ==, ours[i][1]);
		g_assert_nonnull(ev->fn);
		/* libvirt's XML at release end has no id */
		g_assert_cmpint(ev->uuid_only, ==, !strcmp(ours[i][0], "release"));
	}
	for (guint i = 0; i < G_N_ELEMENTS(others); i++) {
		const char *a[] = { "nonuma", others[i][0], others[i][1], "-", NULL };
		g_autofree char *out = NULL, *err = NULL;

		g_assert_null(hook_event_find(others[i][0], others[i][1]));
		/* not XML at all: never read */
		g_assert_cmpint(test_run("dmemfs-hook", a, env, "not XML", &out, &err), ==, 0);
		g_assert_cmpstr(out, ==, "");
		g_assert_cmpstr(err, ==, "");
	}
	/* one of ours reads it: one line, exit 1 */
	{
		const char *a[] = { "nonuma", "prepare", "begin", "-", NULL };
		g_autofree char *out = NULL, *err = NULL;

		g_assert_cmpint(test_run("dmemfs-hook", a, env, "not XML", &out, &err), ==, 1);
		g_assert_cmpstr(out, ==, "");
		g_assert_true(g_str_has_prefix(err, "dmemfs-hook: "));
		g_assert_true(strchr(err, '\n') == err + strlen(err) - 1);
	}
}

/* --plan's and --adopt's options, in any order; misuse is one line, exit 2 */
static void test_cli_options(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *xml = test_read_fixture(FIX "numa-memnode.xml", NULL);
	const char *env[] = { "DMEMFS_HOST_CONF", t->conf, NULL };
	static const char *const bad[][4] = {
		{ NULL }, { "only-two", "args", NULL }, { "--check", NULL },
		{ "--pagesize", "2M", NULL }, { "--adopt", "--plan", NULL },
		{ "--adopt", "stray", NULL }, { "--plan", "--adopt", NULL },
	};

	test_tree_set_node(t, 0, 8 * GiB, 8 * GiB);
	{
		const char *a[] = { "--check", "--plan", NULL };
		g_autofree char *out = NULL, *err = NULL;

		g_assert_cmpint(test_run("dmemfs-hook", a, env, xml, &out, &err), ==, 0);
		g_assert_cmpstr(out, ==, golden_numa_memnode);
		g_assert_true(g_str_has_prefix(err, "dmemfs-hook: domain "));
	}
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *out = NULL, *err = NULL;

		g_assert_cmpint(test_run("dmemfs-hook", (const char *const *)bad[i], env, xml,
					 &out, &err), ==, 2);
		g_assert_cmpstr(out, ==, "");
		g_assert_true(g_str_has_prefix(err, "dmemfs-hook: "));
		g_assert_true(strchr(err, '\n') == err + strlen(err) - 1);
	}
	{
		const char *a[] = { "--help", NULL };
		g_autofree char *out = NULL, *err = NULL;

		g_assert_cmpint(test_run("dmemfs-hook", a, env, NULL, &out, &err), ==, 0);
		g_assert_nonnull(strstr(out, "--adopt"));
	}
}

/* dmemfs-hook --adopt: every 0.35 <mount>/<uuid> to libvirt-<uuid>, the rest untouched */
static void test_cli_adopt(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	const char *env[] = { "DMEMFS_HOST_CONF", t->conf, NULL };
	const char *u = "0b7c6d3e-5f1a-4e2b-9c8d-7a6b5c4d3e2f";
	const char *a[] = { "--adopt", NULL };
	g_autofree char *old2 = g_build_filename(t->mounts[1], u, NULL);
	g_autofree char *old1g = g_build_filename(t->mounts[2], u, NULL);
	g_autofree char *f = g_build_filename(old2, "ram-node0", NULL);
	g_autofree char *nf = dmem_domain_path(t->mounts[1], u, "ram-node0");
	g_autofree char *new1g = dmem_domain_path(t->mounts[2], u, NULL);
	g_autofree char *other = g_build_filename(t->mounts[1], "not-a-uuid", NULL);
	g_autofree char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL;

	g_assert_cmpint(g_mkdir(old2, 0710), ==, 0);
	g_assert_true(g_file_set_contents(f, "x", 1, NULL));
	g_assert_cmpint(g_mkdir(old1g, 0710), ==, 0);
	g_assert_cmpint(g_mkdir(other, 0700), ==, 0);
	g_assert_cmpint(test_run("dmemfs-hook", a, env, NULL, &out, &err), ==, 0);
	g_assert_cmpstr(err, ==, "");
	g_assert_true(g_file_test(nf, G_FILE_TEST_IS_REGULAR));
	g_assert_true(g_file_test(new1g, G_FILE_TEST_IS_DIR));
	g_assert_false(g_file_test(old2, G_FILE_TEST_EXISTS));
	g_assert_true(g_file_test(other, G_FILE_TEST_IS_DIR));
	/* one that cannot move: a line, exit 1, the others still done */
	g_assert_cmpint(g_mkdir(old2, 0710), ==, 0);
	g_assert_cmpint(test_run("dmemfs-hook", a, env, NULL, &out2, &err2), ==, 1);
	g_assert_true(g_str_has_prefix(err2, "dmemfs-hook: "));
	g_assert_nonnull(strstr(err2, "exists"));
	g_assert_cmpint(strchr(err2, '\n') - err2, ==, (int)strlen(err2) - 1);
}

int main(int argc, char **argv)
{
	static const char *const argv_fixtures[] = {
		"nonuma", "nonuma-memfd-global", "nonuma-plain", "numa-memnode",
		"numa-ram", "restrictive", "dimm", "virtio-mem", "hugepages",
	};

	g_test_init(&argc, &argv, NULL);
	g_test_set_nonfatal_assertions();
	for (guint i = 0; i < G_N_ELEMENTS(argv_fixtures); i++) {
		g_autofree char *n = g_strdup_printf("/hook/plan/matches-libvirt-9.0/%s", argv_fixtures[i]);

		g_test_add_data_func(n, argv_fixtures[i], test_plan_vs_libvirt);
	}
	g_test_add_func("/hook/plan/sizes-ids-dimms-restrictive", test_plan_sizes_and_ids);
	g_test_add_func("/hook/plan/multinode-nodesets", test_plan_multinode);
	g_test_add_func("/hook/prepare/virtio-mem-sparse-admits-requested", test_prepare_virtio_mem);
	for (guint i = 0; i < G_N_ELEMENTS(refusals); i++) {
		g_autofree char *n = g_strdup_printf("/hook/plan/refused/%s", refusals[i].fixture);

		g_test_add_data_func(n, &refusals[i], test_plan_refused);
	}
	g_test_add_func("/hook/plan/not-opted-in", test_plan_not_opted);
	g_test_add_func("/hook/plan/counts-hostdevs", test_plan_hostdevs);
	g_test_add_func("/hook/plan/domain-id", test_plan_domid);
	g_test_add_func("/hook/plan/paths", test_plan_paths);
	g_test_add_func("/hook/plan/hugepages-pagesize-per-backend", test_plan_hugepages);
	g_test_add_func("/hook/prepare/pagesize-per-backend-mounts", test_prepare_hugepages);
	g_test_add_func("/hook/plan/pagesize-source-and-limits", test_plan_pagesize_source);
	g_test_add_func("/hook/plan/libvirt-units", test_plan_kib);
	g_test_add_func("/hook/admission/per-node", test_admission);
	g_test_add_func("/hook/admission/policies", test_admission_policies);
	g_test_add_func("/hook/prepare/creates-0600-files", test_prepare_creates);
	g_test_add_func("/hook/prepare/cleanup-on-failure-halfway", test_prepare_cleanup_halfway);
	g_test_add_func("/hook/prepare/refusals-create-nothing", test_prepare_refusals_create_nothing);
	g_test_add_func("/hook/prepare/reclaims-stale-dir", test_prepare_reclaims_stale);
	g_test_add_func("/hook/release/idempotent-without-id", test_release_idempotent);
	g_test_add_func("/hook/carried/kept-and-reused", test_carried_kept_and_reused);
	g_test_add_func("/hook/cli/plan-json", test_cli_plan);
	g_test_add_func("/hook/cli/plan-check-and-refusal", test_cli_plan_check_and_refusal);
	g_test_add_func("/hook/cli/hook-operations", test_cli_hook_ops);
	g_test_add_func("/hook/cli/adopt", test_cli_adopt);
	g_test_add_func("/hook/cli/options", test_cli_options);
	g_test_add_func("/hook/events/table", test_event_table);
	return g_test_run();
}
