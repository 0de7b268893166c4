/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * XML we do not control (a domain's, a remote daemon's capabilities), read
 * with libxml2 and typed XPath getters: no network, no entities, no DTD.
 */
#ifndef DMEMFS_XML_H
#define DMEMFS_XML_H

#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "dmemfs-host.h"

/* largest document we read */
#define DMEM_XML_MAX (16u << 20)

typedef struct {
	xmlDocPtr doc;
	xmlXPathContextPtr ctx;
} DmemXml;

/*
 * Parse @len bytes of @text, named @what in errors ("domain XML"), whose
 * root must be <@root> in no namespace.  Refused with one line: larger
 * than DMEM_XML_MAX, not well formed, a DOCTYPE, another root.
 */
DmemXml *dmem_xml_parse(const char *text, gsize len, const char *what, const char *root,
			GError **error);
void dmem_xml_free(DmemXml *x);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DmemXml, dmem_xml_free)
gboolean dmem_xml_register_ns(DmemXml *x, const char *prefix, const char *uri);

/* element nodes matching @expr relative to @at (NULL: the root), xmlNodePtr */
GPtrArray *dmem_xml_nodes(DmemXml *x, xmlNodePtr at, const char *expr);
/* the text of every node matching @expr (attributes and text too), as it is */
GPtrArray *dmem_xml_strings(DmemXml *x, xmlNodePtr at, const char *expr);
/* the first of them, or NULL */
xmlNodePtr dmem_xml_node(DmemXml *x, xmlNodePtr at, const char *expr);
/* the first match's text, stripped; NULL when there is none or it is empty */
char *dmem_xml_string(DmemXml *x, xmlNodePtr at, const char *expr);
/*
 * The first match's text as a decimal at most @max: 1, 0 when there is no
 * match (absent), -1 when it is not such a number (@error says which).
 */
int dmem_xml_u64(DmemXml *x, xmlNodePtr at, const char *expr, guint64 max, guint64 *out,
		 GError **error);
/* an attribute in no namespace / a node's text, or NULL */
char *dmem_xml_prop(xmlNodePtr n, const char *name);
char *dmem_xml_content(xmlNodePtr n);

#endif
