// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-node dmem pool statistics: <root>/node<N>/{total,free,used}_bytes,
 * and {requested,pinned,poisoned,zeroed}_bytes where the kernel has them.
 */
#include "dmemfs-host.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* 20 digits, a newline, and room to notice more */
#define SYSFS_U64_MAX_LEN 32

DmemSysfsRead dmem_sysfs_u64(const char *path, guint64 *value, GError **error)
{
	char buf[SYSFS_U64_MAX_LEN + 2];
	gsize len = 0, digits;
	guint64 v = 0;
	/* O_NONBLOCK: a FIFO planted under a configured root does not block */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0 && errno == ENOENT)
		return DMEM_SYSFS_ABSENT;
	if (fd < 0) {
		dmem_fail(error, "%s: %s", path, g_strerror(errno));
		return DMEM_SYSFS_ERROR;
	}
	/* one byte more than a count takes: a longer file is no count */
	while (len <= SYSFS_U64_MAX_LEN) {
		ssize_t n = read(fd, buf + len, SYSFS_U64_MAX_LEN + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			close(fd);
			dmem_fail(error, "%s: %s", path, g_strerror(err));
			return DMEM_SYSFS_ERROR;
		}
		if (n == 0)
			break;
		len += (gsize)n;
	}
	close(fd);
	buf[len] = 0;
	digits = len && buf[len - 1] == '\n' ? len - 1 : len;
	if (len > SYSFS_U64_MAX_LEN)
		digits = 0;
	for (gsize i = 0; i < digits; i++) {
		guint d = (guint)(buf[i] - '0');

		if (!g_ascii_isdigit(buf[i]) || v > (G_MAXUINT64 - d) / 10) {
			digits = 0;
			break;
		}
		v = v * 10 + d;
	}
	if (!digits) {
		g_autofree char *shown = NULL;

		buf[MIN(len, SYSFS_U64_MAX_LEN)] = 0;
		shown = g_strescape(buf, NULL);

		dmem_fail(error, "%s: not a decimal count: '%s'%s", path, shown,
			  len > SYSFS_U64_MAX_LEN ? "..." : "");
		return DMEM_SYSFS_ERROR;
	}
	*value = v;
	return DMEM_SYSFS_OK;
}

static gint cmp_node(gconstpointer a, gconstpointer b)
{
	const DmemNodeStat *x = a, *y = b;

	return (x->node > y->node) - (x->node < y->node);
}

/* node<N>'s counters from @dir into @st; FALSE with @error set */
static gboolean read_node(const char *dir, DmemNodeStat *st, GError **error)
{
	static const struct {
		const char *name;
		glong offset;
		DmemStatField optional; /* 0: the kernel always has it */
	} files[] = {
		{ "total_bytes", G_STRUCT_OFFSET(DmemNodeStat, total_bytes), 0 },
		{ "free_bytes", G_STRUCT_OFFSET(DmemNodeStat, free_bytes), 0 },
		{ "used_bytes", G_STRUCT_OFFSET(DmemNodeStat, used_bytes), 0 },
		{ "requested_bytes", G_STRUCT_OFFSET(DmemNodeStat, requested_bytes),
		  DMEM_STAT_REQUESTED },
		{ "pinned_bytes", G_STRUCT_OFFSET(DmemNodeStat, pinned_bytes), DMEM_STAT_PINNED },
		{ "poisoned_bytes", G_STRUCT_OFFSET(DmemNodeStat, poisoned_bytes),
		  DMEM_STAT_POISONED },
		{ "zeroed_bytes", G_STRUCT_OFFSET(DmemNodeStat, zeroed_bytes), DMEM_STAT_ZEROED },
	};

	for (guint k = 0; k < G_N_ELEMENTS(files); k++) {
		g_autofree char *p = g_build_filename(dir, files[k].name, NULL);

		switch (dmem_sysfs_u64(p, G_STRUCT_MEMBER_P(st, files[k].offset), error)) {
		case DMEM_SYSFS_OK:
			st->present |= files[k].optional;
			break;
		case DMEM_SYSFS_ABSENT:
			if (!files[k].optional)
				return dmem_fail(error, "%s: %s", p, g_strerror(ENOENT));
			break;
		case DMEM_SYSFS_ERROR:
			return FALSE;
		}
	}
	return TRUE;
}

GArray *dmem_stats_read(const char *root, GError **error)
{
	g_autoptr(GArray) stats = g_array_new(FALSE, TRUE, sizeof(DmemNodeStat));
	g_autoptr(GDir) dir = NULL;
	g_autoptr(GError) e = NULL;
	const char *name;

	dir = g_dir_open(root, 0, &e);
	if (!dir) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "cannot read dmem pool statistics: %s", e->message);
		return NULL;
	}
	while ((name = g_dir_read_name(dir))) {
		DmemNodeStat st = { 0 };
		g_autofree char *sub = NULL;
		guint64 node;

		if (!g_str_has_prefix(name, "node") ||
		    !g_ascii_string_to_unsigned(name + 4, 10, 0, DMEM_MAX_NODES - 1, &node, NULL))
			continue;
		sub = g_build_filename(root, name, NULL);
		if (!g_file_test(sub, G_FILE_TEST_IS_DIR))
			continue;
		st.node = (guint)node;
		if (!read_node(sub, &st, error))
			return NULL;
		g_array_append_val(stats, st);
	}
	g_array_sort(stats, cmp_node);
	return g_steal_pointer(&stats);
}

guint64 dmem_stats_free(const GArray *stats, guint node)
{
	for (guint i = 0; stats && i < stats->len; i++)
		if (g_array_index(stats, DmemNodeStat, i).node == node)
			return g_array_index(stats, DmemNodeStat, i).free_bytes;
	return 0;
}
