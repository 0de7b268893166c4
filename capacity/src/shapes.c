// SPDX-License-Identifier: GPL-2.0
/*
 * Guest shapes: from "--guest 4G", "--guest 2G+2G", "--guest 8G@node0+8G@node1",
 * and from libvirt domain XML (<cpu><numa><cell>, <numatune>, DIMMs).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "capacity.h"

cap_shape *cap_shape_new(const char *name, const char *origin)
{
	cap_shape *s = g_new0(cap_shape, 1);

	s->name = g_strdup(name ? name : "(unnamed)");
	s->origin = g_strdup(origin);
	return s;
}

void cap_shape_free(cap_shape *s)
{
	if (!s)
		return;
	g_free(s->name);
	g_free(s->origin);
	g_free(s);
}

uint64_t cap_shape_total(const cap_shape *s)
{
	uint64_t t = 0;

	for (int c = 0; c < s->ncells; c++)
		t += s->cell[c].bytes;
	return t;
}

static uint64_t all_mask(const cap_host *h)
{
	return h->nnodes >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << h->nnodes) - 1;
}

static int parse_node_num(const cap_host *h, const char *p, const char **endp, int *idx,
			  char **err)
{
	int id;

	if (cap_parse_node_prefix(p, endp, &id, err) < 0)
		return -1;
	*idx = cap_host_index(h, id);
	if (*idx < 0) {
		g_autofree char *list = cap_host_node_list(h);

		*err = g_strdup_printf("unknown node 'node%d' (host has %s)", id, list);
		return -1;
	}
	return 0;
}

/* libvirt nodeset syntax: "0-3,^2,5" (a "node" prefix is accepted too). */
int cap_parse_nodeset(const cap_host *h, const char *set, uint64_t *mask, char **err)
{
	g_auto(GStrv) parts = g_strsplit(set, ",", -1);
	uint64_t m = 0, not = 0;

	for (int k = 0; parts[k]; k++) {
		char *p = g_strstrip(parts[k]);
		bool neg = false;
		int a, b;
		const char *end;

		if (*p == '^') {
			neg = true;
			p++;
		}
		if (parse_node_num(h, p, &end, &a, err) < 0)
			return -1;
		b = a;
		if (*end == '-' && !neg) {
			if (parse_node_num(h, end + 1, &end, &b, err) < 0)
				return -1;
		}
		if (*end) {
			*err = g_strdup_printf("bad nodeset '%s'", set);
			return -1;
		}
		int lo = h->node[a].id, hi = h->node[b].id;

		if (lo > hi) {
			*err = g_strdup_printf("bad nodeset range in '%s'", set);
			return -1;
		}
		for (int i = 0; i < h->nnodes; i++) {
			if (h->node[i].id < lo || h->node[i].id > hi)
				continue;
			if (neg)
				not |= UINT64_C(1) << i;
			else
				m |= UINT64_C(1) << i;
		}
	}
	m &= ~not;
	if (!m) {
		*err = g_strdup_printf("nodeset '%s' selects no host node", set);
		return -1;
	}
	*mask = m;
	return 0;
}

cap_shape *cap_shape_from_spec(const cap_host *h, const char *spec, char **err)
{
	g_auto(GStrv) cells = g_strsplit(spec, "+", -1);
	cap_shape *s = cap_shape_new(spec, "--guest");

	for (int k = 0; cells[k]; k++) {
		char *at = strchr(cells[k], '@');
		char *e = NULL;
		cap_cell *c;

		if (s->ncells >= CAP_MAX_CELLS) {
			*err = g_strdup_printf("--guest '%s': more than %d cells", spec, CAP_MAX_CELLS);
			goto fail;
		}
		c = &s->cell[s->ncells++];
		if (at)
			*at = '\0';
		if (cap_parse_size(cells[k], &c->bytes, &e) < 0) {
			*err = g_strdup_printf("--guest '%s': %s", spec, e);
			g_free(e);
			goto fail;
		}
		if (c->bytes < CAP_MIN_CELL) {
			*err = g_strdup_printf("--guest '%s': cell size %s is below the 1M minimum",
					       spec, cells[k]);
			goto fail;
		}
		c->mask = all_mask(h);
		if (at && cap_parse_nodeset(h, at + 1, &c->mask, &e) < 0) {
			*err = g_strdup_printf("--guest '%s': %s", spec, e);
			g_free(e);
			goto fail;
		}
	}
	return s;
fail:
	cap_shape_free(s);
	return NULL;
}

/* libvirt's scaled integers: unit defaults to KiB; KB/MB/... are decimal. */
static int libvirt_scaled(const char *what, const char *num, const char *unit, uint64_t *out,
			  char **err)
{
	static const struct {
		const char *u;
		uint64_t mul;
	} units[] = {
		{ "b", 1 }, { "bytes", 1 },
		{ "k", 1ULL << 10 }, { "KiB", 1ULL << 10 }, { "KB", 1000ULL },
		{ "M", 1ULL << 20 }, { "MiB", 1ULL << 20 }, { "MB", 1000000ULL },
		{ "G", 1ULL << 30 }, { "GiB", 1ULL << 30 }, { "GB", 1000000000ULL },
		{ "T", 1ULL << 40 }, { "TiB", 1ULL << 40 }, { "TB", 1000000000000ULL },
		{ "P", 1ULL << 50 }, { "PiB", 1ULL << 50 }, { "PB", 1000000000000000ULL },
	};
	uint64_t mul = 0, v;
	char *end;

	if (!unit)
		mul = 1024;
	for (size_t i = 0; unit && i < G_N_ELEMENTS(units); i++) {
		/* libvirt compares unit names case-insensitively */
		if (g_ascii_strcasecmp(unit, units[i].u) == 0) {
			mul = units[i].mul;
			break;
		}
	}
	if (!mul) {
		*err = g_strdup_printf("%s: unknown unit '%s'", what, unit);
		return -1;
	}
	if (!num) {
		*err = g_strdup_printf("%s: no value", what);
		return -1;
	}
	while (isspace((unsigned char)*num))
		num++;
	if (*num == '-') {
		*err = g_strdup_printf("%s: negative size '%s'", what, num);
		return -1;
	}
	errno = 0;
	v = strtoull(num, &end, 10);
	while (isspace((unsigned char)*end))
		end++;
	if (errno || end == num || *end) {
		*err = g_strdup_printf("%s: bad number '%s'", what, num);
		return -1;
	}
	if (v == 0) {
		*err = g_strdup_printf("%s: zero size", what);
		return -1;
	}
	if (v > UINT64_MAX / mul) {
		*err = g_strdup_printf("%s: size too large", what);
		return -1;
	}
	*out = v * mul;
	return 0;
}

static xmlNode *child(xmlNode *n, const char *name)
{
	for (xmlNode *c = n ? n->children : NULL; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE && !strcmp((const char *)c->name, name))
			return c;
	return NULL;
}

static char *attr(xmlNode *n, const char *name)
{
	xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
	char *r = v ? g_strdup((const char *)v) : NULL;

	xmlFree(v);
	return r;
}

/* Direct text and CDATA children only: entity references are never expanded. */
static char *text(xmlNode *n)
{
	GString *s = g_string_new(NULL);

	for (xmlNode *c = n->children; c; c = c->next)
		if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content)
			g_string_append(s, (const char *)c->content);
	return g_string_free(s, FALSE);
}

static int element_size(xmlNode *n, const char *what, uint64_t *out, char **err)
{
	g_autofree char *num = text(n);
	g_autofree char *unit = attr(n, "unit");

	return libvirt_scaled(what, num, unit, out, err);
}

static cap_shape *shape_from_doc(const cap_host *h, xmlDoc *doc, const char *origin, char **err)
{
	xmlNode *root = xmlDocGetRootElement(doc);
	xmlNode *n, *numa, *numatune;
	cap_shape *s = NULL;
	uint64_t global_mask;
	g_autofree char *name = NULL;

	if (!root || strcmp((const char *)root->name, "domain")) {
		*err = g_strdup_printf("%s: root element is not <domain>", origin);
		return NULL;
	}
	n = child(root, "name");
	name = n ? text(n) : NULL;
	s = cap_shape_new(name, origin);
	global_mask = all_mask(h);

	numatune = child(root, "numatune");
	if (numatune && (n = child(numatune, "memory"))) {
		g_autofree char *set = attr(n, "nodeset");
		g_autofree char *e = NULL;

		if (set && cap_parse_nodeset(h, set, &global_mask, &e) < 0) {
			*err = g_strdup_printf("%s: <numatune><memory>: %s", origin, e);
			goto fail;
		}
	}

	numa = child(child(root, "cpu"), "numa");
	if (numa) {
		for (n = numa->children; n; n = n->next) {
			g_autofree char *mem = NULL, *unit = NULL, *id = NULL;
			g_autofree char *e = NULL;
			cap_cell *c;

			if (n->type != XML_ELEMENT_NODE || strcmp((const char *)n->name, "cell"))
				continue;
			if (s->ncells >= CAP_MAX_CELLS) {
				*err = g_strdup_printf("%s: more than %d NUMA cells", origin,
						       CAP_MAX_CELLS);
				goto fail;
			}
			id = attr(n, "id");
			if (id && atoi(id) != s->ncells) {
				*err = g_strdup_printf("%s: NUMA cell ids must be 0..N-1 in order", origin);
				goto fail;
			}
			c = &s->cell[s->ncells++];
			mem = attr(n, "memory");
			unit = attr(n, "unit");
			if (libvirt_scaled("<cell memory>", mem, unit, &c->bytes, &e) < 0) {
				*err = g_strdup_printf("%s: %s", origin, e);
				goto fail;
			}
			c->mask = global_mask;
		}
	}
	if (!s->ncells) {
		g_autofree char *e = NULL;

		n = child(root, "memory");
		if (!n) {
			*err = g_strdup_printf("%s: no <memory> and no NUMA cells", origin);
			goto fail;
		}
		if (element_size(n, "<memory>", &s->cell[0].bytes, &e) < 0) {
			*err = g_strdup_printf("%s: %s", origin, e);
			goto fail;
		}
		s->cell[0].mask = global_mask;
		s->ncells = 1;
	}
	for (n = numatune ? numatune->children : NULL; n; n = n->next) {
		g_autofree char *cellid = NULL, *set = NULL, *e = NULL;
		int cid;

		if (n->type != XML_ELEMENT_NODE || strcmp((const char *)n->name, "memnode"))
			continue;
		cellid = attr(n, "cellid");
		set = attr(n, "nodeset");
		cid = cellid ? atoi(cellid) : -1;
		if (!numa || cid < 0 || cid >= s->ncells) {
			*err = g_strdup_printf("%s: <memnode cellid='%s'> names no NUMA cell", origin,
					       cellid ? cellid : "");
			goto fail;
		}
		if (set && cap_parse_nodeset(h, set, &s->cell[cid].mask, &e) < 0) {
			*err = g_strdup_printf("%s: <memnode cellid='%d'>: %s", origin, cid, e);
			goto fail;
		}
	}
	/* DIMMs present at start are served on their guest cell's node. */
	for (n = child(child(root, "devices"), "memory"); n; n = n->next) {
		xmlNode *target, *sz, *nd;
		uint64_t b;
		int cell = 0;
		g_autofree char *e = NULL;

		if (n->type != XML_ELEMENT_NODE || strcmp((const char *)n->name, "memory"))
			continue;
		target = child(n, "target");
		sz = child(target, "size");
		if (!sz)
			continue;
		if (element_size(sz, "<memory><target><size>", &b, &e) < 0) {
			*err = g_strdup_printf("%s: %s", origin, e);
			goto fail;
		}
		nd = child(target, "node");
		if (nd) {
			g_autofree char *t = text(nd);

			cell = t ? atoi(t) : 0;
		}
		if (cell < 0 || cell >= s->ncells)
			cell = 0;
		s->cell[cell].bytes += b;
	}
	/* libvirt 9.0 aligns guest memory and NUMA cells to 1 MiB on x86 */
	for (int c = 0; c < s->ncells; c++)
		s->cell[c].bytes = cap_round_up(s->cell[c].bytes, CAP_LIBVIRT_ALIGN);
	return s;
fail:
	cap_shape_free(s);
	return NULL;
}

static void silent(void *ctx, const char *msg, ...)
{
	(void)ctx;
	(void)msg;
}

/*
 * Parse without network access and without entity substitution
 * (no XML_PARSE_NOENT, no DTD loading): an external entity stays an
 * unexpanded reference, and libxml2's amplification limits apply.
 */
static xmlDoc *read_doc(const char *buf, int len, const char *path, char **err)
{
	int opts = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING;
	xmlDoc *doc;

	xmlSetGenericErrorFunc(NULL, silent);
	doc = buf ? xmlReadMemory(buf, len, "domain.xml", NULL, opts)
		  : xmlReadFile(path, NULL, opts);
	if (!doc) {
		const xmlError *e = xmlGetLastError();
		g_autofree char *m = g_strdup(e && e->message ? e->message : "parse error");

		g_strstrip(m);
		*err = g_strdup_printf("%s: not well-formed XML: %s", path, m);
		return NULL;
	}
	/* Domain XML never has a DOCTYPE; refusing it keeps entities out. */
	if (doc->intSubset || doc->extSubset) {
		*err = g_strdup_printf("%s: a DOCTYPE (DTD or entity declarations) is not accepted",
				       path);
		xmlFreeDoc(doc);
		return NULL;
	}
	return doc;
}

cap_shape *cap_shape_from_xml(const cap_host *h, const char *xml, int len, const char *origin,
			      char **err)
{
	xmlDoc *doc = read_doc(xml, len, origin, err);
	cap_shape *s;

	if (!doc)
		return NULL;
	s = shape_from_doc(h, doc, origin, err);
	xmlFreeDoc(doc);
	return s;
}

cap_shape *cap_shape_from_xml_file(const cap_host *h, const char *path, char **err)
{
	g_autofree char *buf = NULL;
	gsize len;
	GError *ge = NULL;

	if (!g_file_get_contents(path, &buf, &len, &ge)) {
		*err = g_strdup_printf("--xml: %s", ge->message);
		g_error_free(ge);
		return NULL;
	}
	if (len > 64 * CAP_MIB) {
		*err = g_strdup_printf("--xml %s: file too large", path);
		return NULL;
	}
	return cap_shape_from_xml(h, buf, (int)len, path, err);
}

char *cap_shape_describe(const cap_host *h, const cap_shape *s)
{
	GString *d = g_string_new(NULL);
	uint64_t all = all_mask(h);

	for (int c = 0; c < s->ncells; c++) {
		g_autofree char *sz = cap_format_size(s->cell[c].bytes);

		g_string_append_printf(d, "%s%s", c ? " + " : "", sz);
		if ((s->cell[c].mask & all) != all) {
			g_string_append(d, " on ");
			for (int i = 0, f = 0; i < h->nnodes; i++)
				if (s->cell[c].mask & (UINT64_C(1) << i))
					g_string_append_printf(d, "%snode%d", f++ ? "|" : "",
							       h->node[i].id);
		}
	}
	return g_string_free(d, FALSE);
}
