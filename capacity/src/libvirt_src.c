// SPDX-License-Identifier: GPL-2.0
/* Guest shapes from the defined libvirt domains, over a read-only connection. */
#include <stdlib.h>
#include <string.h>

#include <glib.h>
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

static char *last_error(void)
{
	virErrorPtr e = virGetLastError();

	return g_strdup(e && e->message ? e->message : "unknown libvirt error");
}

/*
 * Appends one shape per defined domain (running or not) to out.  The
 * inactive XML is used: it is what the next "virsh start" will ask for.
 * A domain whose XML is bad input (e.g. a nodeset naming a node this
 * host lacks) sets *usage so that the caller exits 2.
 */
int cap_shapes_from_libvirt(const cap_host *h, const char *uri, GPtrArray *out, char **err,
			    bool *usage)
{
	virConnectPtr conn;
	virDomainPtr *doms = NULL;
	int n, ret = 0;

	*usage = false;
	virSetErrorFunc(NULL, quiet);
	/* the test driver parses its file with libxml2: keep its noise off stderr */
	xmlSetGenericErrorFunc(NULL, quiet_xml);
	conn = virConnectOpenReadOnly(uri);
	if (!conn) {
		g_autofree char *m = last_error();

		*err = g_strdup_printf("--libvirt: cannot connect to %s: %s",
				       uri ? uri : "the default URI", m);
		return -1;
	}
	n = virConnectListAllDomains(conn, &doms, 0);
	if (n < 0) {
		g_autofree char *m = last_error();

		*err = g_strdup_printf("--libvirt: cannot list domains: %s", m);
		virConnectClose(conn);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);
		g_autofree char *origin = g_strdup_printf("libvirt:%s", name ? name : "?");
		char *xml;
		cap_shape *s;

		if (ret < 0)
			goto next;
		xml = virDomainGetXMLDesc(doms[i], VIR_DOMAIN_XML_INACTIVE);
		if (!xml) {
			g_autofree char *m = last_error();

			*err = g_strdup_printf("--libvirt: no XML for domain %s: %s", name, m);
			ret = -1;
			goto next;
		}
		s = cap_shape_from_xml(h, xml, (int)strlen(xml), origin, err);
		free(xml);
		if (!s) {
			*usage = true;
			ret = -1;
			goto next;
		}
		g_ptr_array_add(out, s);
		ret++;
next:
		virDomainFree(doms[i]);
	}
	free(doms);
	virConnectClose(conn);
	return ret;
}
