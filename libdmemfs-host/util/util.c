// SPDX-License-Identifier: GPL-2.0-or-later
/* Page sizes, libvirt nodesets, UUIDs and small helpers. */
#include "dmemfs-host.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK(dmem-error-quark, dmem_error)

gboolean dmem_fail(GError **error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (error && !*error)
		*error = g_error_new_valist(DMEM_ERROR, DMEM_ERROR_FAILED, fmt, ap);
	va_end(ap);
	return FALSE;
}

int dmem_cli_failv(const char *prefix, int code, const char *fmt, va_list ap)
{
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	g_autofree char *one = dmem_one_line(msg, "; ");
	g_autofree char *line = g_strdup_printf("%s: %s\n", prefix, one);

	/* one write: the line is not split among another process's (a QEMU log) */
	fputs(line, stderr);
	return code;
}

int dmem_cli_fail(const char *prefix, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dmem_cli_failv(prefix, code, fmt, ap);
	va_end(ap);
	return code;
}

int dmem_cli_error(const char *prefix, const GError *error)
{
	return dmem_cli_fail(prefix, 1, "%s", error ? error->message : "failed");
}

const guint64 dmem_pagesizes[DMEM_N_PAGESIZES] = { 4096ULL, 2ULL << 20, 1ULL << 30 };
static const char *const pagesize_names[DMEM_N_PAGESIZES] = { "4K", "2M", "1G" };

gboolean dmem_pagesize_parse(const char *s, guint64 *bytes)
{
	for (int i = 0; s && i < DMEM_N_PAGESIZES; i++) {
		if (strcmp(s, pagesize_names[i]) == 0) {
			*bytes = dmem_pagesizes[i];
			return TRUE;
		}
	}
	return FALSE;
}

int dmem_pagesize_index(guint64 bytes)
{
	for (int i = 0; i < DMEM_N_PAGESIZES; i++)
		if (dmem_pagesizes[i] == bytes)
			return i;
	return -1;
}

const char *dmem_pagesize_name(guint64 bytes)
{
	int i = dmem_pagesize_index(bytes);

	return i < 0 ? NULL : pagesize_names[i];
}

const char *dmem_policy_name(DmemPolicyMode mode)
{
	switch (mode) {
	case DMEM_POLICY_BIND:
		return "bind";
	case DMEM_POLICY_PREFERRED:
		return "preferred";
	case DMEM_POLICY_INTERLEAVE:
		return "interleave";
	case DMEM_POLICY_NONE:
		break;
	}
	return "default";
}

void dmem_nodeset_set(DmemNodeset *set, guint node)
{
	if (node < DMEM_MAX_NODES)
		set->bits[node / 64] |= 1ULL << (node % 64);
}

static void nodeset_clear(DmemNodeset *set, guint node)
{
	if (node < DMEM_MAX_NODES)
		set->bits[node / 64] &= ~(1ULL << (node % 64));
}

gboolean dmem_nodeset_has(const DmemNodeset *set, guint node)
{
	return node < DMEM_MAX_NODES && (set->bits[node / 64] >> (node % 64)) & 1;
}

guint dmem_nodeset_count(const DmemNodeset *set)
{
	guint n = 0;

	for (size_t i = 0; i < G_N_ELEMENTS(set->bits); i++)
		n += (guint)__builtin_popcountll(set->bits[i]);
	return n;
}

int dmem_nodeset_first(const DmemNodeset *set)
{
	for (guint i = 0; i < DMEM_MAX_NODES; i++)
		if (dmem_nodeset_has(set, i))
			return (int)i;
	return -1;
}

int dmem_nodeset_last(const DmemNodeset *set)
{
	for (int i = DMEM_MAX_NODES - 1; i >= 0; i--)
		if (dmem_nodeset_has(set, (guint)i))
			return i;
	return -1;
}

char *dmem_nodeset_format(const DmemNodeset *set)
{
	g_autoptr(GString) s = g_string_new(NULL);

	for (guint i = 0; i < DMEM_MAX_NODES; i++) {
		guint j = i;

		if (!dmem_nodeset_has(set, i))
			continue;
		while (j + 1 < DMEM_MAX_NODES && dmem_nodeset_has(set, j + 1))
			j++;
		if (s->len)
			g_string_append_c(s, ',');
		if (j == i)
			g_string_append_printf(s, "%u", i);
		else
			g_string_append_printf(s, "%u-%u", i, j);
		i = j;
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

static void skip_spaces(const char **p)
{
	while (g_ascii_isspace(**p))
		(*p)++;
}

/* a decimal int as virStrToLong_i reads it after an isdigit() check */
static gboolean parse_int(const char **p, guint *out)
{
	guint64 v = 0;

	if (!g_ascii_isdigit(**p))
		return FALSE;
	while (g_ascii_isdigit(**p)) {
		v = v * 10 + (guint64)(**p - '0');
		if (v > G_MAXINT)
			return FALSE;
		(*p)++;
	}
	*out = (guint)v;
	return TRUE;
}

/*
 * Same grammar and semantics as libvirt 9.0 virBitmapParseInternal():
 * comma separated "N", "N-M" or "^N" items applied left to right, spaces
 * allowed around items and '-', bits limited to VIR_DOMAIN_CPUMASK_LEN (1024),
 * "^N-M" is an error.  numad-style "all"/"!" (libnuma's numa_parse_nodestring)
 * is not libvirt syntax, and libnuma also rejects nodes absent on this host,
 * so it cannot be used here.  libvirt also refuses an empty result.
 */
gboolean dmem_nodeset_parse(const char *s, DmemNodeset *set, GError **error)
{
	const char *cur = s;

	memset(set, 0, sizeof(*set));
	if (!s)
		goto bad;
	skip_spaces(&cur);
	if (!*cur)
		goto bad;
	while (*cur) {
		gboolean neg = FALSE;
		guint start, last;

		if (*cur == '^') {
			cur++;
			neg = TRUE;
		}
		if (!parse_int(&cur, &start))
			goto bad;
		skip_spaces(&cur);
		if (*cur == ',' || *cur == 0) {
			if (neg)
				nodeset_clear(set, start);
			else if (start >= DMEM_MAX_NODES)
				goto bad;
			else
				dmem_nodeset_set(set, start);
		} else if (*cur == '-') {
			if (neg)
				goto bad;
			cur++;
			skip_spaces(&cur);
			if (!parse_int(&cur, &last) || last < start || last >= DMEM_MAX_NODES)
				goto bad;
			for (guint i = start; i <= last; i++)
				dmem_nodeset_set(set, i);
			skip_spaces(&cur);
		}
		if (*cur == ',') {
			cur++;
			skip_spaces(&cur);
		} else if (*cur != 0) {
			goto bad;
		}
	}
	if (dmem_nodeset_count(set) == 0)
		goto bad;
	return TRUE;
bad:
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "invalid nodeset '%s'",
		    s ? s : "");
	return FALSE;
}

char *dmem_uuid_normalize(const char *s)
{
	if (!s || !g_uuid_string_is_valid(s))
		return NULL;
	return g_ascii_strdown(s, -1);
}

gboolean dmem_backend_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > 128 || id[0] == '.' || id[0] == '-')
		return FALSE;
	for (size_t i = 0; i < n; i++)
		if (!g_ascii_isalnum(id[i]) && !strchr("._-", id[i]))
			return FALSE;
	return TRUE;
}

gboolean dmem_read_all(int fd, gsize max, char **buf, gsize *len, GError **error)
{
	g_autoptr(GByteArray) a = g_byte_array_new();
	guint8 chunk[65536];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "read: %s",
				    g_strerror(errno));
			return FALSE;
		}
		if (n == 0)
			break;
		if (a->len + (gsize)n > max) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "input larger than %" G_GSIZE_FORMAT " bytes", max);
			return FALSE;
		}
		g_byte_array_append(a, chunk, (guint)n);
	}
	*len = a->len;
	g_byte_array_append(a, (const guint8 *)"", 1);
	*buf = (char *)g_byte_array_free(g_steal_pointer(&a), FALSE);
	return TRUE;
}

gboolean dmem_round_up(guint64 v, guint64 align, guint64 *out)
{
	guint64 r = (v + align - 1) & ~(align - 1);

	if (r < v)
		return FALSE;
	*out = r;
	return TRUE;
}
