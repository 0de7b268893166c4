// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The dmem-node<N> storage pools: names, targets and pool XML (nodepool.h).
 */
#include "nodepool.h"
#include "dmem-xml.h"

#include <libxml/tree.h>
#include <string.h>

char *dmem_nodepool_name(guint node)
{
	return g_strdup_printf(DMEM_NODEPOOL_PREFIX "%u", node);
}

gboolean dmem_nodepool_parse(const char *name, guint *node)
{
	g_autofree char *canon = NULL;
	guint64 n;

	if (!name || !g_str_has_prefix(name, DMEM_NODEPOOL_PREFIX) ||
	    !g_ascii_string_to_unsigned(name + strlen(DMEM_NODEPOOL_PREFIX), 10, 0,
					DMEM_MAX_NODES - 1, &n, NULL))
		return FALSE;
	canon = dmem_nodepool_name(n);
	if (strcmp(canon, name))
		return FALSE;
	*node = n;
	return TRUE;
}

char *dmem_nodepool_target(const char *dir, guint node)
{
	return g_strdup_printf("%s/node%u", dir, node);
}

char *dmem_nodepool_mount_options(guint node)
{
	return g_strdup_printf("pagesize=" DMEM_NODEPOOL_PAGESIZE ",nodes=%u", node);
}

char *dmem_nodepool_xml(const char *dir, guint node)
{
	g_autofree char *name = dmem_nodepool_name(node);
	g_autofree char *target = dmem_nodepool_target(dir, node);
	xmlDocPtr doc = xmlNewDoc(BAD_CAST "1.0");
	xmlNodePtr pool = xmlNewNode(NULL, BAD_CAST "pool");
	xmlNodePtr t;
	xmlChar *buf = NULL;
	int len = 0;
	char *out;

	xmlDocSetRootElement(doc, pool);
	xmlNewProp(pool, BAD_CAST "type", BAD_CAST "dir");
	xmlNewTextChild(pool, NULL, BAD_CAST "name", BAD_CAST name);
	t = xmlNewChild(pool, NULL, BAD_CAST "target", NULL);
	xmlNewTextChild(t, NULL, BAD_CAST "path", BAD_CAST target);
	xmlDocDumpFormatMemory(doc, &buf, &len, 1);
	out = g_strndup((const char *)buf, len);
	xmlFree(buf);
	xmlFreeDoc(doc);
	return out;
}

gboolean dmem_nodepool_xml_matches(const char *xml, const char *dir, guint node)
{
	g_autofree char *name = dmem_nodepool_name(node);
	g_autofree char *target = dmem_nodepool_target(dir, node);
	g_autofree char *type = NULL, *got_name = NULL, *path = NULL;
	g_autoptr(DmemXml) x = NULL;

	if (!xml || !(x = dmem_xml_parse(xml, strlen(xml), "storage pool XML", "pool", NULL)))
		return FALSE;
	type = dmem_xml_prop(xmlDocGetRootElement(x->doc), "type");
	got_name = dmem_xml_string(x, NULL, "name");
	path = dmem_xml_string(x, NULL, "target/path");
	return !g_strcmp0(type, "dir") && !g_strcmp0(got_name, name) && !g_strcmp0(path, target);
}
