// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-node dmem pool statistics: <root>/node<N>/{total,free,used}_bytes,
 * and {requested,pinned,poisoned}_bytes where the kernel has them.
 */
#include "dmemfs-host.h"

#include <errno.h>
#include <string.h>

static gboolean read_u64(const char *dir, const char *name, guint64 *out, GError **error)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autofree char *text = NULL;
	g_autoptr(GError) e = NULL;

	if (!g_file_get_contents(path, &text, NULL, &e)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s", e->message);
		return FALSE;
	}
	g_strstrip(text);
	if (!g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT64, out, NULL)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: not a byte count: '%s'",
			    path, text);
		return FALSE;
	}
	return TRUE;
}

static gint cmp_node(gconstpointer a, gconstpointer b)
{
	const DmemNodeStat *x = a, *y = b;

	return (x->node > y->node) - (x->node < y->node);
}

GArray *dmem_stats_read(const char *root, GError **error)
{
	static const struct {
		const char *name;
		glong offset;
	} optional[] = {
		{ "requested_bytes", G_STRUCT_OFFSET(DmemNodeStat, requested_bytes) },
		{ "pinned_bytes", G_STRUCT_OFFSET(DmemNodeStat, pinned_bytes) },
		{ "poisoned_bytes", G_STRUCT_OFFSET(DmemNodeStat, poisoned_bytes) },
		{ "zeroed_bytes", G_STRUCT_OFFSET(DmemNodeStat, zeroed_bytes) },
	};
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
		g_autofree char *sub = NULL, *zeroed = NULL;
		guint64 node;

		if (!g_str_has_prefix(name, "node") ||
		    !g_ascii_string_to_unsigned(name + 4, 10, 0, DMEM_MAX_NODES - 1, &node, NULL))
			continue;
		sub = g_build_filename(root, name, NULL);
		if (!g_file_test(sub, G_FILE_TEST_IS_DIR))
			continue;
		st.node = (guint)node;
		zeroed = g_build_filename(sub, "zeroed_bytes", NULL);
		if (!read_u64(sub, "total_bytes", &st.total_bytes, error) ||
		    !read_u64(sub, "free_bytes", &st.free_bytes, error) ||
		    !read_u64(sub, "used_bytes", &st.used_bytes, error))
			return NULL;
		for (guint k = 0; k < G_N_ELEMENTS(optional); k++) {
			g_autofree char *p = g_build_filename(sub, optional[k].name, NULL);

			if (g_file_test(p, G_FILE_TEST_EXISTS) &&
			    !read_u64(sub, optional[k].name,
				      G_STRUCT_MEMBER_P(&st, optional[k].offset), error))
				return NULL;
		}
		st.has_zeroed = st.zeroed_bytes || g_file_test(zeroed, G_FILE_TEST_EXISTS);
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
