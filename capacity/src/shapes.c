// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Guest shapes: from "--guest 4G", "--guest 2G+2G", "--guest 8G@node0+8G@node1",
 * and from libvirt domain XML through the hook's own plan (plan_from_xml):
 * the same sizes, the same host nodes, the same refusals.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "capacity.h"
#include "plan.h"

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

/* host node ids -> host node indexes; every node must be on this host */
static gboolean nodeset_mask(const cap_host *h, const DmemNodeset *set, uint64_t *mask,
			     GError **error)
{
	uint64_t m = 0;

	for (guint id = 0; id < DMEM_MAX_NODES; id++) {
		int i;

		if (!dmem_nodeset_has(set, id))
			continue;
		i = cap_host_index(h, (int)id);
		if (i < 0) {
			g_autofree char *list = cap_host_node_list(h);

			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "unknown node 'node%u' (host has %s)", id, list);
			return FALSE;
		}
		m |= UINT64_C(1) << i;
	}
	*mask = m;
	return TRUE;
}

/* "node1", or a libvirt nodeset: "0-3,^2" */
static gboolean guest_nodes(const cap_host *h, const char *s, uint64_t *mask, GError **error)
{
	DmemNodeset set;

	return dmem_nodeset_parse(g_str_has_prefix(s, "node") ? s + 4 : s, &set, error) &&
	       nodeset_mask(h, &set, mask, error);
}

cap_shape *cap_shape_from_spec(const cap_host *h, const char *spec, GError **error)
{
	g_auto(GStrv) cells = g_strsplit(spec, "+", -1);
	g_autoptr(cap_shape) s = cap_shape_new(spec, "--guest");
	uint64_t total = 0;

	for (int k = 0; cells[k]; k++) {
		char *at = strchr(cells[k], '@');
		cap_cell *c;

		if (s->ncells >= CAP_MAX_CELLS) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "--guest '%s': more than %d cells", spec, CAP_MAX_CELLS);
			return NULL;
		}
		c = &s->cell[s->ncells++];
		c->mask = all_mask(h);
		if (at)
			*at++ = '\0';
		if (!cap_parse_size(cells[k], &c->bytes, error) ||
		    (at && !guest_nodes(h, at, &c->mask, error))) {
			g_prefix_error(error, "--guest '%s': ", spec);
			return NULL;
		}
		if (c->bytes < CAP_MIN_CELL) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "--guest '%s': cell size %s is below the 1M minimum", spec, cells[k]);
			return NULL;
		}
		/* every cell is at most CAP_MAX_SIZE (cap_parse_size): no wrap */
		total += c->bytes;
		if (total > CAP_MAX_SIZE) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "--guest '%s': the cells add up to more than %" G_GUINT64_FORMAT "P",
				    spec, CAP_MAX_SIZE / CAP_PIB);
			return NULL;
		}
	}
	return g_steal_pointer(&s);
}

/*
 * A cell per guest NUMA cell (pc.ram without NUMA), bound where the hook
 * binds its file; a DIMM bound to the same host nodes as its guest cell is
 * served with that cell, any other DIMM is a cell of its own.  Sizes are the
 * ones libvirt passes to QEMU: cells aligned to 1 MiB, DIMMs to 2 MiB.
 */
cap_shape *cap_shape_from_xml(const cap_host *h, const char *xml, gsize len, const char *origin,
			      GError **error)
{
	PlanOptions opts = { .force = TRUE, .pagesize = h->dmem_pagesize, .shape_only = TRUE };
	g_autoptr(DomainPlan) plan = plan_from_xml(xml, len, &opts, error);
	g_autoptr(cap_shape) s = NULL;
	uint64_t total = 0;

	if (!plan) {
		g_prefix_error(error, "%s: ", origin);
		return NULL;
	}
	s = cap_shape_new(plan->name, origin);
	/* the plan lists the guest cells first, backend i for cell i, then the DIMMs */
	for (guint i = 0; i < plan->backends->len; i++) {
		const PlanBackend *b = g_ptr_array_index(plan->backends, i);
		uint64_t mask = all_mask(h);
		/* a virtio-mem device holds what it plugs, <requested> */
		guint64 bytes = b->virtio_mem ? b->admit : b->libvirt_size;

		if (b->has_nodes && !nodeset_mask(h, &b->policy.nodes, &mask, error)) {
			g_prefix_error(error, "%s: %s: ", origin, b->id);
			return NULL;
		}
		if (!bytes)
			continue;
		/* libvirt takes up to 2^63 - 1 a backend: check before adding */
		if (bytes > CAP_MAX_SIZE || bytes > CAP_MAX_SIZE - total) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "%s: the guest memory is too large (more than %" G_GUINT64_FORMAT "P)",
				    origin, CAP_MAX_SIZE / CAP_PIB);
			return NULL;
		}
		total += bytes;
		if (b->cell >= 0 && (guint)b->cell < i && s->cell[b->cell].mask == mask) {
			s->cell[b->cell].bytes += bytes;
			continue;
		}
		if (s->ncells >= CAP_MAX_CELLS) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "%s: more than %d NUMA cells and DIMMs", origin, CAP_MAX_CELLS);
			return NULL;
		}
		s->cell[s->ncells++] = (cap_cell){ .bytes = bytes, .mask = mask };
	}
	return g_steal_pointer(&s);
}

static void file_error(GError **error, const char *what, const char *path, int err)
{
	g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(err), "cannot %s '%s': %s", what,
		    path, g_strerror(err));
}

static void too_large(GError **error, const char *path)
{
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
		    "'%s' is larger than %" G_GUINT64_FORMAT " MiB: not a domain XML", path,
		    CAP_XML_MAX / CAP_MIB);
}

/*
 * At most CAP_XML_MAX bytes of @path, NUL-terminated.  Reads no more than
 * one byte past the limit, so that /dev/zero, a pipe or a growing file is
 * refused as surely as a big regular file (which is refused unread).
 */
static char *read_bounded(const char *path, gsize *len, GError **error)
{
	g_autofree char *buf = NULL;
	gsize n = 0, cap = 0;
	struct stat st;
	int fd = g_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY, 0);

	if (fd < 0) {
		file_error(error, "open", path, errno);
		return NULL;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > CAP_XML_MAX) {
		too_large(error, path);
		close(fd);
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			cap = MIN(MAX(cap * 2, 64 * CAP_KIB), CAP_XML_MAX + 1);
			buf = g_realloc(buf, cap + 1);
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			file_error(error, "read", path, errno);
			close(fd);
			return NULL;
		}
		if (r == 0)
			break;
		n += (gsize)r;
		if (n > CAP_XML_MAX) {
			too_large(error, path);
			close(fd);
			return NULL;
		}
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return g_steal_pointer(&buf);
}

cap_shape *cap_shape_from_xml_file(const cap_host *h, const char *path, GError **error)
{
	g_autofree char *buf = NULL;
	gsize len;

	buf = read_bounded(path, &len, error);
	if (!buf) {
		g_prefix_error(error, "--xml: ");
		return NULL;
	}
	return cap_shape_from_xml(h, buf, len, path, error);
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
