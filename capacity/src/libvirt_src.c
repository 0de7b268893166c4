// SPDX-License-Identifier: GPL-2.0
/* Guest shapes from the defined libvirt domains, over a read-only connection. */
#include <stdlib.h>
#include <string.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>

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

G_DEFINE_QUARK(cap-error-quark, cap_error)

static void libvirt_error(GError **error, const char *what, const char *name)
{
	virErrorPtr e = virGetLastError();

	g_set_error(error, CAP_ERROR, CAP_ERROR_ENVIRONMENT, "--libvirt: %s %s: %s", what, name,
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
		libvirt_error(error, "no XML for domain", name);
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

	virSetErrorFunc(NULL, quiet);
	/* the test driver parses its file with libxml2: keep its noise off stderr */
	xmlSetGenericErrorFunc(NULL, quiet_xml);
	conn = virConnectOpenReadOnly(uri);
	if (!conn) {
		libvirt_error(error, "cannot connect to", what);
		return FALSE;
	}
	n = virConnectListAllDomains(conn, &doms, 0);
	if (n < 0) {
		libvirt_error(error, "cannot list the domains of", what);
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
