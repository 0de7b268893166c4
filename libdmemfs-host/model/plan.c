// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Domain XML -> plan.  The sizes, ids and NUMA policies follow what libvirt
 * 9.0 itself passes to QEMU 7.2 for each memory backend:
 *
 *  - sizes: virDomainParseMemory() (unit suffixes of virScaleInteger(),
 *    default KiB, bytes rounded up to KiB, LLONG_MAX limit), then
 *    qemuDomainAlignMemorySizes(): NUMA cells and the initial memory to
 *    1 MiB, DIMMs to 2 MiB (x86).  The prepare hook runs before that
 *    alignment, so it is redone here.
 *  - ids: ram-node<cell id> with guest NUMA, pc.ram without; DIMMs are
 *    mem<alias> where the alias is dimm<slot> (explicit <address slot=>, else
 *    the lowest free slot in document order) or the user alias "ua-*";
 *    virtio-mem devices take no slot: mem<virtiomemN>, N counting them in
 *    document order (qemuDeviceMemoryGetAliasID()).
 *  - virtio-mem: the backend is the device's whole <size> (2 MiB aligned like
 *    a DIMM), the device plugs <requested> of it, in <block> units.  The file
 *    is created sparse; QEMU allocates the blocks it plugs (the wrapper sets
 *    prealloc on the device) and punches those it unplugs, so admission
 *    counts <requested>, not <size>.
 *  - policy: qemuBuildMemoryBackendProps(): nodeset = DIMM <source><nodemask>,
 *    else the cell's <memnode>, else the global <memory>; mode = the cell's
 *    memnode, else the global mode, else strict.  host-nodes/policy are
 *    passed unless the mode is restrictive (cgroup cpuset.mems only).
 */
#include "plan.h"

#include "dmem-xml.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <string.h>

#define LIBVIRT_MAX_BYTES ((guint64)G_MAXINT64) /* virMemoryMaxValue() on 64-bit */
#define CELL_ALIGN_KIB 1024ULL                   /* qemuDomainGetMemorySizeAlignment */
#define DIMM_ALIGN_KIB 2048ULL                   /* ...MemoryModuleSizeAlignment */

typedef enum { MODE_STRICT, MODE_PREFERRED, MODE_INTERLEAVE, MODE_RESTRICTIVE } TuneMode;

typedef struct {
	gboolean specified;
	TuneMode mode;
	DmemNodeset nodes;
} Tune;

static void backend_free(gpointer p)
{
	PlanBackend *b = p;

	g_free(b->id);
	g_free(b);
}

void plan_free(DomainPlan *plan)
{
	if (!plan)
		return;
	g_free(plan->uuid);
	g_free(plan->name);
	g_free(plan->mount);
	if (plan->backends)
		g_ptr_array_unref(plan->backends);
	if (plan->paths)
		g_ptr_array_unref(plan->paths);
	g_free(plan);
}

static void fail(GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void fail(GError **error, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (error && !*error)
		*error = g_error_new_valist(DMEM_ERROR, code, fmt, ap);
	va_end(ap);
}

static gboolean parse_uint(const char *s, guint64 max, guint64 *out)
{
	g_autofree char *t = s ? g_strstrip(g_strdup(s)) : NULL;

	return t && g_ascii_string_to_unsigned(t, 10, 0, max, out, NULL);
}

/* ---- sizes ----------------------------------------------------------------- */

/* virScaleInteger(): "", b/byte/bytes, k/KiB/KB, M/MiB/MB, G, T, P, E */
static gboolean unit_scale(const char *unit, guint64 *scale)
{
	guint64 base, s = 1;
	int steps;

	if (!unit || !*unit) {
		*scale = 1024;
		return TRUE;
	}
	if (!g_ascii_strcasecmp(unit, "b") || !g_ascii_strcasecmp(unit, "byte") ||
	    !g_ascii_strcasecmp(unit, "bytes")) {
		*scale = 1;
		return TRUE;
	}
	if (!unit[1] || !g_ascii_strcasecmp(unit + 1, "iB"))
		base = 1024;
	else if (g_ascii_tolower(unit[1]) == 'b' && !unit[2])
		base = 1000;
	else
		return FALSE;
	switch (g_ascii_tolower(unit[0])) {
	case 'k': steps = 1; break;
	case 'm': steps = 2; break;
	case 'g': steps = 3; break;
	case 't': steps = 4; break;
	case 'p': steps = 5; break;
	case 'e': steps = 6; break;
	default: return FALSE;
	}
	while (steps--)
		s *= base;
	*scale = s;
	return TRUE;
}

gboolean plan_parse_kib(const char *value, const char *unit, guint64 *kib, GError **error)
{
	const char *p = value;
	guint64 v, scale;

	if (!value) {
		fail(error, DMEM_ERROR_FAILED, "missing memory size");
		return FALSE;
	}
	while (g_ascii_isspace(*p))
		p++;
	if (!g_ascii_string_to_unsigned(p, 10, 0, G_MAXUINT64, &v, NULL)) {
		fail(error, DMEM_ERROR_FAILED, "invalid memory size '%s'", value);
		return FALSE;
	}
	if (!unit_scale(unit, &scale)) {
		fail(error, DMEM_ERROR_FAILED, "unknown memory unit '%s'", unit);
		return FALSE;
	}
	if (v && v > LIBVIRT_MAX_BYTES / scale) {
		fail(error, DMEM_ERROR_FAILED, "memory size %s %s is too large", value, unit);
		return FALSE;
	}
	v = (v * scale + 1023) / 1024;
	if (v >= (LIBVIRT_MAX_BYTES + 1023) / 1024) {
		fail(error, DMEM_ERROR_FAILED, "memory size %s %s is too large", value, unit);
		return FALSE;
	}
	*kib = v;
	return TRUE;
}

static gboolean elem_kib(DmemXml *x, xmlNodePtr n, const char *attr, guint64 *kib, GError **error)
{
	g_autofree char *v = attr ? dmem_xml_prop(n, attr) : dmem_xml_content(n);
	g_autofree char *u = dmem_xml_prop(n, "unit");

	(void)x;
	return plan_parse_kib(v, u, kib, error);
}

/* a page size in KiB (@attr, or the element's text) that dmemfs has */
static gboolean page_bytes(xmlNodePtr n, const char *attr, const char *what, guint64 *bytes,
			   GError **error)
{
	guint64 kib;

	if (!elem_kib(NULL, n, attr, &kib, error))
		return FALSE;
	if (kib > G_MAXUINT64 / 1024 || dmem_pagesize_index(kib * 1024) < 0) {
		fail(error, DMEM_ERROR_UNSUPPORTED,
		     "%s %" G_GUINT64_FORMAT " KiB: dmemfs pages are 4K, 2M or 1G", what, kib);
		return FALSE;
	}
	*bytes = kib * 1024;
	return TRUE;
}

/* libvirt alignment then dmemfs page rounding */
static gboolean backend_sizes(PlanBackend *b, guint64 kib, guint64 align_kib, GError **error)
{
	guint64 aligned;

	if (kib == 0) {
		fail(error, DMEM_ERROR_FAILED, "%s: memory size is 0", b->id);
		return FALSE;
	}
	if (!dmem_round_up(kib, align_kib, &aligned) || aligned > (LIBVIRT_MAX_BYTES >> 10)) {
		fail(error, DMEM_ERROR_FAILED, "%s: memory size overflowed after alignment", b->id);
		return FALSE;
	}
	b->libvirt_size = aligned * 1024;
	if (!dmem_round_up(b->libvirt_size, b->pagesize, &b->size) ||
	    b->size > (guint64)G_MAXINT64) {
		fail(error, DMEM_ERROR_FAILED, "%s: memory size too large for a dmemfs file", b->id);
		return FALSE;
	}
	b->admit = b->size;
	return TRUE;
}

/* ---- numatune ----------------------------------------------------------- */

static gboolean parse_mode(const char *s, const char *where, TuneMode *mode, GError **error)
{
	static const char *const names[] = { "strict", "preferred", "interleave", "restrictive" };

	if (!s) {
		*mode = MODE_STRICT;
		return TRUE;
	}
	for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
		if (!strcmp(s, names[i])) {
			*mode = (TuneMode)i;
			return TRUE;
		}
	}
	fail(error, DMEM_ERROR_FAILED, "%s: unsupported numatune mode '%s'", where, s);
	return FALSE;
}

static gboolean parse_numatune(DmemXml *x, guint ncells, Tune *global, Tune **cells, GError **error)
{
	xmlNodePtr mem = dmem_xml_node(x, NULL, "./numatune/memory");
	g_autoptr(GPtrArray) memnodes = dmem_xml_nodes(x, NULL, "./numatune/memnode");
	g_autofree char *placement = dmem_xml_prop(mem, "placement");
	g_autofree char *nodeset = dmem_xml_prop(mem, "nodeset");
	g_autofree char *mode = dmem_xml_prop(mem, "mode");
	g_autoptr(GError) e = NULL;

	*cells = g_new0(Tune, ncells ? ncells : 1);
	memset(global, 0, sizeof(*global));
	if (mem) {
		if (!parse_mode(mode, "numatune memory", &global->mode, error))
			return FALSE;
		if (placement && strcmp(placement, "static") && strcmp(placement, "auto")) {
			fail(error, DMEM_ERROR_FAILED, "numatune: unknown placement '%s'", placement);
			return FALSE;
		}
		/* no placement and no nodeset: libvirt makes it auto (or refuses) */
		if ((placement && !strcmp(placement, "auto")) || !nodeset) {
			fail(error, DMEM_ERROR_UNSUPPORTED,
			     "numatune placement='auto' is not supported: numad picks the nodes "
			     "after the prepare hook; give a static nodeset");
			return FALSE;
		}
		if (!dmem_nodeset_parse(nodeset, &global->nodes, &e)) {
			fail(error, DMEM_ERROR_FAILED, "numatune memory: %s", e->message);
			return FALSE;
		}
		global->specified = TRUE;
	}
	for (guint i = 0; i < memnodes->len; i++) {
		xmlNodePtr n = g_ptr_array_index(memnodes, i);
		g_autofree char *cellid = dmem_xml_prop(n, "cellid");
		g_autofree char *m = dmem_xml_prop(n, "mode");
		g_autofree char *ns = dmem_xml_prop(n, "nodeset");
		guint64 id;
		Tune *t;

		if (!parse_uint(cellid, G_MAXUINT, &id) || id >= ncells) {
			fail(error, DMEM_ERROR_FAILED,
			     "numatune memnode cellid '%s' is not a guest NUMA cell",
			     cellid ? cellid : "");
			return FALSE;
		}
		t = &(*cells)[id];
		if (t->specified) {
			fail(error, DMEM_ERROR_FAILED, "multiple numatune memnode elements for cell %u",
			     (guint)id);
			return FALSE;
		}
		if (!parse_mode(m, "numatune memnode", &t->mode, error))
			return FALSE;
		if (!ns) {
			fail(error, DMEM_ERROR_FAILED, "numatune memnode %u has no nodeset", (guint)id);
			return FALSE;
		}
		if (!dmem_nodeset_parse(ns, &t->nodes, &e)) {
			fail(error, DMEM_ERROR_FAILED, "numatune memnode %u: %s", (guint)id, e->message);
			return FALSE;
		}
		t->specified = TRUE;
	}
	return TRUE;
}

/* qemuBuildMemoryBackendProps() policy rules; cell < 0: no guest node */
static void apply_policy(PlanBackend *b, const Tune *global, const Tune *cells, guint ncells,
			 int cell, const DmemNodeset *source_nodes)
{
	const Tune *t = (cell >= 0 && (guint)cell < ncells && cells[cell].specified) ? &cells[cell]
										   : NULL;
	TuneMode mode = t ? t->mode : global->specified ? global->mode : MODE_STRICT;
	const DmemNodeset *nodes = source_nodes ? source_nodes
				   : t ? &t->nodes
				   : global->specified ? &global->nodes : NULL;

	if (!nodes)
		return;
	b->has_nodes = TRUE;
	b->policy.nodes = *nodes;
	b->libvirt_passes_policy = mode != MODE_RESTRICTIVE;
	switch (mode) {
	case MODE_PREFERRED:
		b->policy.mode = DMEM_POLICY_PREFERRED;
		break;
	case MODE_INTERLEAVE:
		b->policy.mode = DMEM_POLICY_INTERLEAVE;
		break;
	case MODE_STRICT:
	case MODE_RESTRICTIVE:
		b->policy.mode = DMEM_POLICY_BIND;
		break;
	}
}

/* machine types <= 5.0 use -numa node,mem= unless something forces backends */
static gboolean machine_legacy_numa(const char *machine)
{
	const char *ver;
	guint64 major, minor;
	g_auto(GStrv) parts = NULL;

	if (!machine || !(g_str_has_prefix(machine, "pc-i440fx-") ||
			  g_str_has_prefix(machine, "pc-q35-") || g_str_has_prefix(machine, "pc-")))
		return FALSE;
	ver = strrchr(machine, '-') + 1;
	parts = g_strsplit(ver, ".", 3);
	if (g_strv_length(parts) != 2 || !parse_uint(parts[0], 1000, &major) ||
	    !parse_uint(parts[1], 1000, &minor))
		return FALSE;
	return major < 5 || (major == 5 && minor == 0);
}

/* ---- the plan ------------------------------------------------------------- */

static PlanBackend *add_backend(DomainPlan *plan, char *id, int cell)
{
	PlanBackend *b = g_new0(PlanBackend, 1);

	b->id = id;
	b->cell = cell;
	g_ptr_array_add(plan->backends, b);
	return b;
}

static gboolean parse_metadata(DmemXml *x, DomainPlan *plan, GError **error)
{
	xmlNodePtr md = dmem_xml_node(x, NULL, "./metadata/dmemfs:dmemfs");
	g_autofree char *ps = dmem_xml_prop(md, "pagesize");

	if (!md)
		return TRUE;
	plan->opted_in = TRUE;
	plan->mount = dmem_xml_prop(md, "mount");
	if (ps && !dmem_pagesize_parse(ps, &plan->pagesize)) {
		fail(error, DMEM_ERROR_FAILED, "metadata pagesize '%s' is not 4K, 2M or 1G", ps);
		return FALSE;
	}
	return TRUE;
}

typedef struct {
	xmlNodePtr node;
	guint64 kib;
	int target;
	gboolean has_source_nodes;
	DmemNodeset source_nodes;
	int slot;              /* -1 = assign; virtio-mem: its index among them */
	char *user_alias;
	gboolean virtio_mem;
	guint64 block_kib;     /* virtio-mem */
	guint64 requested_kib; /* virtio-mem */
	guint64 pagesize;      /* <source><pagesize>, bytes; 0: none */
} Dimm;

static void dimm_clear(gpointer p)
{
	g_free(((Dimm *)p)->user_alias);
}

/* libvirt 9.0's virtio-mem rules (virDomainMemoryDefValidate) */
static gboolean parse_virtio_mem(DmemXml *x, xmlNodePtr n, Dimm *d, GError **error)
{
	xmlNodePtr block = dmem_xml_node(x, n, "./target/block");
	xmlNodePtr req = dmem_xml_node(x, n, "./target/requested");

	if (d->target < 0) {
		fail(error, DMEM_ERROR_FAILED, "virtio-mem device without <target><node>");
		return FALSE;
	}
	if (!block) {
		fail(error, DMEM_ERROR_FAILED, "virtio-mem device without <target><block>");
		return FALSE;
	}
	if (!elem_kib(x, block, NULL, &d->block_kib, error) ||
	    (req && !elem_kib(x, req, NULL, &d->requested_kib, error)))
		return FALSE;
	if (!d->block_kib || (d->block_kib & (d->block_kib - 1))) {
		fail(error, DMEM_ERROR_FAILED, "virtio-mem block size must be a power of two");
		return FALSE;
	}
	if (d->requested_kib % d->block_kib) {
		fail(error, DMEM_ERROR_FAILED,
		     "virtio-mem requested size must be a multiple of its block size");
		return FALSE;
	}
	if (d->requested_kib > d->kib) {
		fail(error, DMEM_ERROR_FAILED, "virtio-mem requested size is larger than its size");
		return FALSE;
	}
	return TRUE;
}

static gboolean parse_dimms(DmemXml *x, GArray *dimms, guint ncells, gboolean shape_only,
			    GError **error)
{
	g_autoptr(GPtrArray) mems = dmem_xml_nodes(x, NULL, "./devices/memory");
	xmlNodePtr maxmem = dmem_xml_node(x, NULL, "./maxMemory");
	g_autofree char *slots_s = dmem_xml_prop(maxmem, "slots");
	guint64 slots = 0, nvirtio = 0;
	g_autofree gboolean *used = NULL;

	if (!mems->len)
		return TRUE;
	if (!maxmem || !parse_uint(slots_s, 4096, &slots)) {
		fail(error, DMEM_ERROR_FAILED, "memory devices need <maxMemory slots=...>");
		return FALSE;
	}
	if (ncells == 0) {
		fail(error, DMEM_ERROR_FAILED,
		     "memory devices need at least one guest NUMA cell (libvirt rule)");
		return FALSE;
	}
	if (mems->len > slots) {
		fail(error, DMEM_ERROR_FAILED, "memory device count '%u' exceeds slots count '%u'",
		     mems->len, (guint)slots);
		return FALSE;
	}
	used = g_new0(gboolean, slots + 1);
	for (guint i = 0; i < mems->len; i++) {
		xmlNodePtr n = g_ptr_array_index(mems, i);
		g_autofree char *model = dmem_xml_prop(n, "model");
		g_autofree char *node_s = dmem_xml_content(dmem_xml_node(x, n, "./target/node"));
		g_autofree char *mask = dmem_xml_content(dmem_xml_node(x, n, "./source/nodemask"));
		xmlNodePtr addr = dmem_xml_node(x, n, "./address");
		g_autofree char *atype = dmem_xml_prop(addr, "type");
		g_autofree char *aslot = dmem_xml_prop(addr, "slot");
		g_autofree char *alias = dmem_xml_prop(dmem_xml_node(x, n, "./alias"), "name");
		xmlNodePtr size = dmem_xml_node(x, n, "./target/size");
		Dimm d = { .node = n, .target = -1, .slot = -1 };
		guint64 v;

		if (!model || (strcmp(model, "dimm") && strcmp(model, "virtio-mem"))) {
			fail(error, DMEM_ERROR_UNSUPPORTED,
			     "memory device model '%s' is not supported (dimm and virtio-mem are)",
			     model ? model : "");
			return FALSE;
		}
		d.virtio_mem = !strcmp(model, "virtio-mem");
		if (!shape_only && dmem_xml_node(x, n, "./source/pagesize") &&
		    !page_bytes(dmem_xml_node(x, n, "./source/pagesize"), NULL,
				"memory device <source><pagesize>", &d.pagesize, error))
			return FALSE;
		if (!size) {
			fail(error, DMEM_ERROR_FAILED, "memory device without <target><size>");
			return FALSE;
		}
		if (!elem_kib(x, size, NULL, &d.kib, error))
			return FALSE;
		if (node_s) {
			if (!parse_uint(node_s, G_MAXINT, &v) || v >= ncells) {
				fail(error, DMEM_ERROR_FAILED,
				     "memory device target node '%s' is not a guest NUMA cell", node_s);
				return FALSE;
			}
			d.target = (int)v;
		}
		if (mask) {
			g_autoptr(GError) e = NULL;

			if (!dmem_nodeset_parse(mask, &d.source_nodes, &e)) {
				fail(error, DMEM_ERROR_FAILED, "memory device nodemask: %s", e->message);
				return FALSE;
			}
			d.has_source_nodes = TRUE;
		}
		if (d.virtio_mem) {
			if (!parse_virtio_mem(x, n, &d, error))
				return FALSE;
			d.slot = (int)nvirtio++; /* no DIMM slot: a PCI device */
		} else if (addr && atype && !strcmp(atype, "dimm") && aslot) {
			if (!parse_uint(aslot, slots ? slots - 1 : 0, &v) || used[v]) {
				fail(error, DMEM_ERROR_FAILED, "invalid or duplicate dimm slot '%s'", aslot);
				return FALSE;
			}
			d.slot = (int)v;
			used[v] = TRUE;
		}
		if (alias && g_str_has_prefix(alias, "ua-"))
			d.user_alias = g_steal_pointer(&alias);
		g_array_append_val(dimms, d);
	}
	/* qemuDomainAssignMemorySlots(): the lowest free slot, in document order */
	for (guint i = 0; i < dimms->len; i++) {
		Dimm *d = &g_array_index(dimms, Dimm, i);
		guint64 s = 0;

		if (d->slot >= 0)
			continue;
		while (s < slots && used[s])
			s++;
		if (s >= slots) {
			fail(error, DMEM_ERROR_FAILED, "no free memory slot for a dimm");
			return FALSE;
		}
		used[s] = TRUE;
		d->slot = (int)s;
	}
	return TRUE;
}

/*
 * QEMU plugs and unplugs whole blocks; a block smaller than a dpage would
 * have it punch part of one, which dmemfs refuses.
 */
static gboolean virtio_mem_sizes(PlanBackend *b, const Dimm *d, gboolean shape_only,
				 GError **error)
{
	guint64 pagesize = b->pagesize;

	b->virtio_mem = TRUE;
	b->block = d->block_kib * 1024;
	b->admit = d->requested_kib * 1024;
	if (!shape_only && b->block < pagesize) {
		fail(error, DMEM_ERROR_UNSUPPORTED,
		     "%s: virtio-mem block size %" G_GUINT64_FORMAT
		     " KiB is smaller than the dmemfs page size (%s)",
		     b->id, d->block_kib, dmem_pagesize_name(pagesize));
		return FALSE;
	}
	if (!dmem_round_up(b->admit, pagesize, &b->admit) || b->admit > b->size) {
		fail(error, DMEM_ERROR_FAILED, "%s: requested size overflows its file", b->id);
		return FALSE;
	}
	return TRUE;
}

/*
 * <memoryBacking><hugepages>: the page size of each guest cell (cell 0 for
 * a domain without NUMA), picked as libvirt 9.0 picks it: the <page> whose
 * nodeset holds the cell, else the <page> without a nodeset, else none.
 * <hugepages/> alone is the host's default huge page, 2M on x86.  Cells
 * without a huge page keep @def, the domain's page size; for a shape
 * only, every cell does.
 */
static gboolean parse_hugepages(DmemXml *x, guint ncells, guint64 def, gboolean shape_only,
				guint64 *cell_ps, GError **error)
{
	xmlNodePtr hp = shape_only ? NULL : dmem_xml_node(x, NULL, "./memoryBacking/hugepages");
	g_autoptr(GPtrArray) pages = hp ? dmem_xml_nodes(x, hp, "./page") : NULL;
	guint64 all = pages && pages->len == 0 ? 2 * 1024 * 1024 : 0;

	for (guint i = 0; pages && i < pages->len; i++) {
		xmlNodePtr p = g_ptr_array_index(pages, i);
		g_autofree char *set_s = dmem_xml_prop(p, "nodeset");
		g_autoptr(GError) e = NULL;
		DmemNodeset set;
		guint64 ps;

		if (!page_bytes(p, "size", "<hugepages><page> size", &ps, error))
			return FALSE;
		if (!set_s) {
			all = ps;
			continue;
		}
		if (!dmem_nodeset_parse(set_s, &set, &e)) {
			fail(error, DMEM_ERROR_FAILED, "<hugepages><page> nodeset: %s", e->message);
			return FALSE;
		}
		for (guint c = 0; c < DMEM_MAX_NODES; c++) {
			if (!dmem_nodeset_has(&set, c))
				continue;
			if (c >= ncells) {
				fail(error, DMEM_ERROR_FAILED,
				     "<hugepages><page> nodeset: %u is not a guest NUMA cell", c);
				return FALSE;
			}
			cell_ps[c] = ps;
		}
	}
	for (guint c = 0; c < ncells; c++)
		if (!cell_ps[c])
			cell_ps[c] = all ? all : def;
	return TRUE;
}

static gboolean compute(DmemXml *x, DomainPlan *plan, gboolean shape_only, GError **error)
{
	g_autoptr(GPtrArray) cellnodes = dmem_xml_nodes(x, NULL, "./cpu/numa/cell");
	g_autoptr(GArray) dimms = g_array_new(FALSE, TRUE, sizeof(Dimm));
	g_autofree char *machine = dmem_xml_prop(dmem_xml_node(x, NULL, "./os/type"), "machine");
	g_autofree char *srctype = dmem_xml_prop(dmem_xml_node(x, NULL, "./memoryBacking/source"), "type");
	g_autofree Tune *cells = NULL;
	g_autofree guint64 *cell_kib = NULL;
	g_autofree guint64 *cell_ps = NULL; /* each cell's page size */
	guint ncells = cellnodes->len;
	Tune global;

	g_array_set_clear_func(dimms, dimm_clear);
	if (ncells > 256) {
		fail(error, DMEM_ERROR_FAILED, "too many guest NUMA cells (%u)", ncells);
		return FALSE;
	}
	cell_ps = g_new0(guint64, MAX(ncells, 1));
	if (!parse_hugepages(x, MAX(ncells, 1), plan->pagesize, shape_only, cell_ps, error))
		return FALSE;
	if (!shape_only && ncells && machine_legacy_numa(machine) &&
	    !(srctype && (!strcmp(srctype, "file") || !strcmp(srctype, "memfd")))) {
		fail(error, DMEM_ERROR_UNSUPPORTED,
		     "machine type %s gets legacy -numa node,mem= from libvirt: add "
		     "<memoryBacking><source type='file'/>", machine);
		return FALSE;
	}
	if (!parse_numatune(x, ncells, &global, &cells, error) ||
	    !parse_dimms(x, dimms, ncells, shape_only, error))
		return FALSE;

	if (ncells) {
		cell_kib = g_new0(guint64, ncells);
		for (guint i = 0; i < ncells; i++) {
			xmlNodePtr n = g_ptr_array_index(cellnodes, i);
			g_autofree char *id_s = dmem_xml_prop(n, "id");
			g_autofree char *mem = dmem_xml_prop(n, "memory");
			guint64 id = i, kib;

			if (id_s && !parse_uint(id_s, G_MAXUINT, &id)) {
				fail(error, DMEM_ERROR_FAILED, "invalid NUMA cell id '%s'", id_s);
				return FALSE;
			}
			if (id >= ncells || cell_kib[id]) {
				fail(error, DMEM_ERROR_FAILED,
				     "NUMA cell ids must be unique and 0..%u", ncells - 1);
				return FALSE;
			}
			if (!mem) {
				fail(error, DMEM_ERROR_FAILED, "NUMA cell %u has no memory", (guint)id);
				return FALSE;
			}
			if (!elem_kib(x, n, "memory", &kib, error))
				return FALSE;
			if (kib == 0) {
				fail(error, DMEM_ERROR_FAILED, "NUMA cell %u has memory 0", (guint)id);
				return FALSE;
			}
			cell_kib[id] = kib;
		}
		for (guint i = 0; i < ncells; i++) {
			PlanBackend *b = add_backend(plan, g_strdup_printf("ram-node%u", i), (int)i);

			b->pagesize = cell_ps[i];
			if (!backend_sizes(b, cell_kib[i], CELL_ALIGN_KIB, error))
				return FALSE;
			apply_policy(b, &global, cells, ncells, (int)i, NULL);
		}
	} else {
		xmlNodePtr m = dmem_xml_node(x, NULL, "./memory");
		PlanBackend *b;
		guint64 kib;

		if (!m) {
			fail(error, DMEM_ERROR_FAILED, "domain has no <memory>");
			return FALSE;
		}
		if (!elem_kib(x, m, NULL, &kib, error))
			return FALSE;
		b = add_backend(plan, g_strdup("pc.ram"), -1);
		b->pagesize = cell_ps[0];
		/* initial memory = total - memory devices (none without NUMA) */
		if (!backend_sizes(b, kib, CELL_ALIGN_KIB, error))
			return FALSE;
		apply_policy(b, &global, cells, 0, -1, NULL);
	}
	for (guint i = 0; i < dimms->len; i++) {
		Dimm *d = &g_array_index(dimms, Dimm, i);
		char *id = d->user_alias  ? g_strdup_printf("mem%s", d->user_alias)
			   : d->virtio_mem ? g_strdup_printf("memvirtiomem%d", d->slot)
					   : g_strdup_printf("memdimm%d", d->slot);
		PlanBackend *b = add_backend(plan, id, d->target);

		if (!dmem_backend_id_valid(id)) {
			fail(error, DMEM_ERROR_FAILED, "memory device alias '%s' is not usable", id);
			return FALSE;
		}
		/* libvirt: its own page size, else its cell's <hugepages> */
		b->pagesize = d->pagesize ? d->pagesize
			      : d->target >= 0 ? cell_ps[d->target] : plan->pagesize;
		if (!backend_sizes(b, d->kib, DIMM_ALIGN_KIB, error))
			return FALSE;
		if (d->virtio_mem && !virtio_mem_sizes(b, d, shape_only, error))
			return FALSE;
		apply_policy(b, &global, cells, ncells, d->target,
			     d->has_source_nodes ? &d->source_nodes : NULL);
		/* the hook's bind does not reach blocks QEMU plugs later: QEMU's must */
		if (!shape_only && b->virtio_mem && b->has_nodes && !b->libvirt_passes_policy) {
			fail(error, DMEM_ERROR_UNSUPPORTED,
			     "%s: virtio-mem with numatune mode 'restrictive' is not supported: "
			     "QEMU would plug blocks on any node (use strict)", id);
			return FALSE;
		}
	}
	return TRUE;
}

DomainPlan *plan_from_xml(const char *xml, gsize len, const PlanOptions *opts, GError **error)
{
	g_autoptr(DomainPlan) plan = g_new0(DomainPlan, 1);
	g_autoptr(DmemXml) x = NULL;
	g_autoptr(GPtrArray) hostdevs = NULL;
	g_autofree char *uuid = NULL, *id = NULL;
	guint64 domid;

	plan->backends = g_ptr_array_new_with_free_func(backend_free);
	x = dmem_xml_parse(xml, len, "domain XML", "domain", error);
	if (!x)
		return NULL;
	if (!dmem_xml_register_ns(x, "dmemfs", DMEMFS_XMLNS)) {
		fail(error, DMEM_ERROR_FAILED, "out of memory");
		return NULL;
	}
	uuid = dmem_xml_content(dmem_xml_node(x, NULL, "./uuid"));
	if (uuid)
		g_strstrip(uuid);
	plan->uuid = dmem_uuid_normalize(uuid);
	if (!plan->uuid && !(opts && opts->shape_only)) {
		fail(error, DMEM_ERROR_FAILED, "domain XML has no valid <uuid>");
		return NULL;
	}
	plan->name = dmem_xml_content(dmem_xml_node(x, NULL, "./name"));
	/* only a running domain's XML has one (libvirt's, a number) */
	id = dmem_xml_prop(dmem_xml_node(x, NULL, "."), "id");
	plan->domid = id && g_ascii_isdigit(*id) &&
		      g_ascii_string_to_unsigned(id, 10, 0, G_MAXINT32, &domid, NULL) ?
		      (gint64)domid : -1;
	hostdevs = dmem_xml_nodes(x, NULL, "./devices/hostdev | ./devices/interface[@type='hostdev']");
	plan->hostdevs = hostdevs->len;
	/* no profile of its own: none, or a static AppArmor label */
	plan->unconfined = dmem_xml_node(x, NULL, "./seclabel[@type='none'] | "
					 "./seclabel[@type='static'][not(@model) or "
					 "@model='apparmor']") != NULL;
	plan->paths = dmem_xml_strings(x, NULL,
				       "//@*[not(ancestor::metadata)][starts-with(normalize-space(.), '/')] | "
				       "//text()[not(ancestor::metadata)][starts-with(normalize-space(.), '/')]");
	if (!parse_metadata(x, plan, error))
		return NULL;
	if (opts && opts->pagesize)
		plan->pagesize = opts->pagesize;
	if (opts && opts->force)
		plan->opted_in = TRUE;
	if (!plan->opted_in || (opts && opts->uuid_only))
		return g_steal_pointer(&plan);
	if (!plan->pagesize) {
		fail(error, DMEM_ERROR_FAILED,
		     "no dmemfs page size (metadata pagesize= or --pagesize)");
		return NULL;
	}
	if (!compute(x, plan, opts && opts->shape_only, error))
		return NULL;
	return g_steal_pointer(&plan);
}

char *plan_to_json(const DomainPlan *plan)
{
	g_autoptr(JsonBuilder) jb = json_builder_new();
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonNode) root = NULL;

	json_builder_begin_object(jb);
	json_builder_set_member_name(jb, "uuid");
	json_builder_add_string_value(jb, plan->uuid);
	json_builder_set_member_name(jb, "pagesize");
	json_builder_add_int_value(jb, (gint64)plan->pagesize);
	json_builder_set_member_name(jb, "backends");
	json_builder_begin_array(jb);
	for (guint i = 0; i < plan->backends->len; i++) {
		const PlanBackend *b = g_ptr_array_index(plan->backends, i);

		json_builder_begin_object(jb);
		json_builder_set_member_name(jb, "id");
		json_builder_add_string_value(jb, b->id);
		if (b->cell >= 0) {
			json_builder_set_member_name(jb, "cell");
			json_builder_add_int_value(jb, b->cell);
		}
		json_builder_set_member_name(jb, "size");
		json_builder_add_int_value(jb, (gint64)b->size);
		/* its own page size, from <hugepages> or <source><pagesize> */
		if (b->pagesize != plan->pagesize) {
			json_builder_set_member_name(jb, "pagesize");
			json_builder_add_int_value(jb, (gint64)b->pagesize);
		}
		if (b->virtio_mem) {
			json_builder_set_member_name(jb, "model");
			json_builder_add_string_value(jb, "virtio-mem");
			json_builder_set_member_name(jb, "requested");
			json_builder_add_int_value(jb, (gint64)b->admit);
			json_builder_set_member_name(jb, "block");
			json_builder_add_int_value(jb, (gint64)b->block);
		}
		if (b->has_nodes) {
			json_builder_set_member_name(jb, "host_nodes");
			json_builder_begin_array(jb);
			for (guint n = 0; n < DMEM_MAX_NODES; n++)
				if (dmem_nodeset_has(&b->policy.nodes, n))
					json_builder_add_int_value(jb, n);
			json_builder_end_array(jb);
			json_builder_set_member_name(jb, "policy");
			json_builder_add_string_value(jb, dmem_policy_name(b->policy.mode));
		}
		json_builder_end_object(jb);
	}
	json_builder_end_array(jb);
	json_builder_end_object(jb);
	root = json_builder_get_root(jb);
	json_generator_set_root(gen, root);
	return json_generator_to_data(gen, NULL);
}
