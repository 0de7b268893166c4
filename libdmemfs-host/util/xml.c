// SPDX-License-Identifier: GPL-2.0-or-later
/* Untrusted XML, read through typed XPath getters (dmem-xml.h). */
#include "dmem-xml.h"

#include <libxml/parser.h>
#include <libxml/xpathInternals.h>
#include <string.h>

void dmem_xml_free(DmemXml *x)
{
	if (!x)
		return;
	if (x->ctx)
		xmlXPathFreeContext(x->ctx);
	if (x->doc)
		xmlFreeDoc(x->doc);
	g_free(x);
}

DmemXml *dmem_xml_parse(const char *text, gsize len, const char *what, const char *root,
			GError **error)
{
	g_autoptr(DmemXml) x = g_new0(DmemXml, 1);
	xmlNodePtr r;

	if (len > DMEM_XML_MAX || len > G_MAXINT) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s larger than %u bytes", what,
			    DMEM_XML_MAX);
		return NULL;
	}
	/* no network, no entity substitution, no DTD loading, quiet */
	x->doc = xmlReadMemory(text, (int)len, what, NULL,
			       XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!x->doc) {
		const xmlError *e = xmlGetLastError();
		g_autofree char *msg = g_strdup(e && e->message ? e->message : "parse error");

		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "malformed %s: %s", what,
			    g_strstrip(msg));
		return NULL;
	}
	if (x->doc->intSubset || x->doc->extSubset) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "malformed %s: DOCTYPE not allowed",
			    what);
		return NULL;
	}
	r = xmlDocGetRootElement(x->doc);
	if (!r || strcmp((const char *)r->name, root) || r->ns) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "malformed %s: root is not <%s>",
			    what, root);
		return NULL;
	}
	x->ctx = xmlXPathNewContext(x->doc);
	if (!x->ctx) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: out of memory", what);
		return NULL;
	}
	return g_steal_pointer(&x);
}

gboolean dmem_xml_register_ns(DmemXml *x, const char *prefix, const char *uri)
{
	return xmlXPathRegisterNs(x->ctx, (const xmlChar *)prefix, (const xmlChar *)uri) == 0;
}

/* @expr evaluated relative to @at (NULL: the root); its node set or NULL */
static xmlXPathObjectPtr eval_nodeset(DmemXml *x, xmlNodePtr at, const char *expr)
{
	xmlXPathObjectPtr o;

	x->ctx->node = at ? at : xmlDocGetRootElement(x->doc);
	o = xmlXPathEvalExpression((const xmlChar *)expr, x->ctx);
	if (o && o->type == XPATH_NODESET && o->nodesetval)
		return o;
	xmlXPathFreeObject(o);
	return NULL;
}

GPtrArray *dmem_xml_nodes(DmemXml *x, xmlNodePtr at, const char *expr)
{
	GPtrArray *out = g_ptr_array_new();
	xmlXPathObjectPtr o = eval_nodeset(x, at, expr);

	for (int i = 0; o && i < o->nodesetval->nodeNr; i++)
		if (o->nodesetval->nodeTab[i]->type == XML_ELEMENT_NODE)
			g_ptr_array_add(out, o->nodesetval->nodeTab[i]);
	xmlXPathFreeObject(o);
	return out;
}

GPtrArray *dmem_xml_strings(DmemXml *x, xmlNodePtr at, const char *expr)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
	xmlXPathObjectPtr o = eval_nodeset(x, at, expr);

	for (int i = 0; o && i < o->nodesetval->nodeNr; i++) {
		char *v = dmem_xml_content(o->nodesetval->nodeTab[i]);

		g_ptr_array_add(out, v ? v : g_strdup(""));
	}
	xmlXPathFreeObject(o);
	return out;
}

xmlNodePtr dmem_xml_node(DmemXml *x, xmlNodePtr at, const char *expr)
{
	g_autoptr(GPtrArray) n = dmem_xml_nodes(x, at, expr);

	return n->len ? g_ptr_array_index(n, 0) : NULL;
}

char *dmem_xml_prop(xmlNodePtr n, const char *name)
{
	xmlChar *v = n ? xmlGetNoNsProp(n, (const xmlChar *)name) : NULL;
	char *s = v ? g_strdup((const char *)v) : NULL;

	xmlFree(v);
	return s;
}

char *dmem_xml_content(xmlNodePtr n)
{
	xmlChar *v = n ? xmlNodeGetContent(n) : NULL;
	char *s = v ? g_strdup((const char *)v) : NULL;

	xmlFree(v);
	return s;
}

char *dmem_xml_string(DmemXml *x, xmlNodePtr at, const char *expr)
{
	char *s = dmem_xml_content(dmem_xml_node(x, at, expr));

	if (s && !*g_strstrip(s))
		g_clear_pointer(&s, g_free);
	return s;
}

int dmem_xml_u64(DmemXml *x, xmlNodePtr at, const char *expr, guint64 max, guint64 *out,
		 GError **error)
{
	g_autofree char *s = dmem_xml_string(x, at, expr);

	if (!s)
		return 0;
	if (!g_ascii_isdigit(*s) || !g_ascii_string_to_unsigned(s, 10, 0, max, out, NULL)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: '%s' is not a number up to %"
			    G_GUINT64_FORMAT, expr, s, max);
		return -1;
	}
	return 1;
}
