// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libvirt as a source: guest shapes from the defined domains (--libvirt),
 * and whole hosts (--connect): their NUMA cells from the capabilities
 * (MemTotal of each node) and their dmem from the dir storage pools named
 * dmem-node<N>, each on a dmemfs instance mounted with nodes=N, whose
 * statfs is that node's pool.  Read-only by default, with the figures of
 * each pool's last refresh; --refresh connects read-write and refreshes
 * each pool first.
 */
#include <stdlib.h>
#include <string.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include "dmem-xml.h"
#include "nodepool.h"

#include "capacity.h"

static void quiet(void *ud, virErrorPtr e)
{
	(void)ud;
	(void)e;
}

static void quiet_xml(void *ctx, const char *msg, ...)
{
	(void)ctx;
	(void)msg;
}

/*
 * Failures come back as one error line of ours: keep libvirt's own log
 * (its version banner, a hostname it cannot resolve) off stderr, unless
 * the user asked for it with LIBVIRT_LOG_OUTPUTS.
 */
static void quiet_libvirt(void)
{
	/* before libvirt initialises, which reads it */
	g_setenv("LIBVIRT_LOG_OUTPUTS", "1:file:/dev/null", FALSE);
	virSetErrorFunc(NULL, quiet);
	/* the test driver parses its file with libxml2: keep its noise off stderr */
	xmlSetGenericErrorFunc(NULL, quiet_xml);
}

G_DEFINE_QUARK(cap-error-quark, cap_error)

/* "OPT: WHAT NAME: libvirt's message" */
static void libvirt_error(GError **error, const char *opt, const char *what, const char *name)
{
	virErrorPtr e = virGetLastError();

	g_set_error(error, CAP_ERROR, CAP_ERROR_ENVIRONMENT, "%s: %s %s: %s", opt, what, name,
		    e && e->message ? e->message : "unknown libvirt error");
}

/* The inactive XML: it is what the next "virsh start" will ask for. */
static gboolean add_domain(const cap_host *h, virDomainPtr dom, GPtrArray *out, GError **error)
{
	const char *name = virDomainGetName(dom);
	g_autofree char *origin = g_strdup_printf("libvirt:%s", name);
	g_autofree char *xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
	cap_shape *s;

	if (!xml) {
		libvirt_error(error, "--libvirt", "no XML for domain", name);
		return FALSE;
	}
	s = cap_shape_from_xml(h, xml, strlen(xml), origin, error);
	if (!s)
		return FALSE;
	g_ptr_array_add(out, s);
	return TRUE;
}

/* One shape per defined domain, running or not. */
gboolean cap_shapes_from_libvirt(const cap_host *h, const char *uri, GPtrArray *out,
				 GError **error)
{
	const char *what = uri ? uri : "the default URI";
	virConnectPtr conn;
	virDomainPtr *doms = NULL;
	gboolean ok = TRUE;
	int n;

	quiet_libvirt();
	conn = virConnectOpenReadOnly(uri);
	if (!conn) {
		libvirt_error(error, "--libvirt", "cannot connect to", what);
		return FALSE;
	}
	n = virConnectListAllDomains(conn, &doms, 0);
	if (n < 0) {
		libvirt_error(error, "--libvirt", "cannot list the domains of", what);
		ok = FALSE;
	}
	for (int i = 0; i < n; i++) {
		ok = ok && add_domain(h, doms[i], out, error);
		virDomainFree(doms[i]);
	}
	free(doms);
	virConnectClose(conn);
	return ok;
}

/* The host's UUID and NUMA cells (MemTotal of each node) from its capabilities. */
static gboolean read_capabilities(cap_host *h, virConnectPtr conn, cap_remote *r, GError **error)
{
	g_autofree char *caps = virConnectGetCapabilities(conn);
	g_autoptr(DmemXml) x = NULL;
	g_autoptr(GPtrArray) cells = NULL;
	g_autoptr(GError) e = NULL;

	if (!caps) {
		libvirt_error(error, "--connect", "cannot read the capabilities of", r->uri);
		return FALSE;
	}
	/* no network, no entities: what a remote daemon sends is not trusted */
	x = dmem_xml_parse(caps, strlen(caps), "capabilities XML", "capabilities", &e);
	if (!x) {
		g_set_error(error, CAP_ERROR, CAP_ERROR_ENVIRONMENT, "--connect: %s: %s", r->uri,
			    e->message);
		return FALSE;
	}
	r->uuid = dmem_xml_string(x, NULL, "./host/uuid");
	cells = dmem_xml_nodes(x, NULL, "./host/topology/cells/cell");
	for (guint i = 0; i < cells->len; i++) {
		xmlNodePtr c = g_ptr_array_index(cells, i);
		g_autofree char *id = dmem_xml_prop(c, "id");
		g_autoptr(GPtrArray) mem = dmem_xml_nodes(x, c, "./memory");
		guint64 nid = 0, kib = 0;
		cap_node *n;

		if (!id || !g_ascii_string_to_unsigned(id, 10, 0, DMEM_MAX_NODES - 1, &nid, NULL)) {
			g_set_error(error, CAP_ERROR, CAP_ERROR_ENVIRONMENT,
				    "--connect: a NUMA cell of %s without a valid id", r->uri);
			return FALSE;
		}
		n = cap_host_node(h, nid, error);
		if (!n)
			return FALSE;
		for (guint k = 0; k < mem->len; k++) {
			xmlNodePtr m = g_ptr_array_index(mem, k);
			g_autofree char *unit = dmem_xml_prop(m, "unit");
			g_autofree char *text = dmem_xml_content(m);

			/* libvirt writes a cell's memory in KiB */
			if ((!unit || !strcmp(unit, "KiB")) && text &&
			    g_ascii_string_to_unsigned(text, 10, 0, CAP_MAX_SIZE / 1024, &kib, NULL)) {
				n->memtotal = kib * 1024;
				n->has_memtotal = true;
			}
		}
	}
	return TRUE;
}

/* The dmem of each node from its storage pool, refreshed where the connection may. */
static gboolean read_pools(cap_host *h, virConnectPtr conn, cap_remote *r, GError **error)
{
	virStoragePoolPtr *pools = NULL;
	gboolean ok = TRUE;
	int n = virConnectListAllStoragePools(conn, &pools, VIR_CONNECT_LIST_STORAGE_POOLS_ACTIVE);

	if (n < 0) {
		libvirt_error(error, "--connect", "cannot list the storage pools of", r->uri);
		return FALSE;
	}
	for (int i = 0; i < n; i++) {
		const char *name = virStoragePoolGetName(pools[i]);
		virStoragePoolInfo info;
		guint id;
		cap_node *node;

		if (ok && dmem_nodepool_parse(name, &id)) {
			g_autofree char *what = g_strdup_printf("%s of %s", name, r->uri);

			if (r->refreshed && virStoragePoolRefresh(pools[i], 0) < 0) {
				libvirt_error(error, "--connect", "cannot refresh the storage pool", what);
				ok = FALSE;
			} else if (virStoragePoolGetInfo(pools[i], &info) < 0) {
				libvirt_error(error, "--connect", "cannot read the storage pool", what);
				ok = FALSE;
			} else if ((node = cap_host_node(h, id, error)) == NULL) {
				ok = FALSE;
			} else if (info.capacity > CAP_MAX_SIZE) {
				g_set_error(error, CAP_ERROR, CAP_ERROR_ENVIRONMENT,
					    "--connect: the storage pool %s holds more than %"
					    G_GUINT64_FORMAT "P", what, CAP_MAX_SIZE / CAP_PIB);
				ok = FALSE;
			} else {
				node->dmem_total = info.capacity;
				node->dmem_free = MIN(info.available, info.capacity);
				node->dmem_used = info.capacity - node->dmem_free;
				h->has_dmem = true;
				r->pools++;
			}
		}
		virStoragePoolFree(pools[i]);
	}
	free(pools);
	return ok;
}

gboolean cap_host_from_libvirt(cap_host *h, cap_remote *r, GError **error)
{
	virConnectPtr conn;
	virNodeInfo ni;
	gboolean ok;

	quiet_libvirt();
	h->live = true;
	h->remote = true;
	h->nnodes = 0;
	/*
	 * Read-only by default: nothing changes on a production host, the
	 * pools read as last refreshed.  --refresh connects read-write and
	 * refreshes them first (and fails where it may not).
	 */
	conn = r->refresh ? virConnectOpen(r->uri) : virConnectOpenReadOnly(r->uri);
	r->refreshed = conn && r->refresh;
	if (!conn) {
		libvirt_error(error, "--connect", "cannot connect to", r->uri);
		return FALSE;
	}
	r->hostname = virConnectGetHostname(conn);
	ok = read_capabilities(h, conn, r, error) && read_pools(h, conn, r, error);
	if (ok && virNodeGetInfo(conn, &ni) < 0) {
		libvirt_error(error, "--connect", "cannot read the node info of", r->uri);
		ok = FALSE;
	}
	virConnectClose(conn);
	if (!ok)
		return FALSE;
	h->memtotal = MIN((uint64_t)ni.memory, CAP_MAX_SIZE / 1024) * 1024;
	h->has_memtotal = true;
	if (!h->nnodes || !h->node[0].has_memtotal) {
		/* no NUMA cells in the capabilities: all of it on node 0 */
		cap_node *n = cap_host_node(h, 0, error);

		n->memtotal = h->memtotal;
		n->has_memtotal = true;
	}
	cap_host_node_ram(h);
	if (!cap_host_check_ram(h, r->uri, error)) {
		g_prefix_error(error, "--connect: ");
		return FALSE;
	}
	return TRUE;
}
