// SPDX-License-Identifier: GPL-2.0-or-later
/* libFuzzer: QEMU argv (one argument per line) -> rewritten argv. */
#include "rewrite.h"

#include <string.h>

static gboolean resolve(const char *uuid, const char *id, gpointer data, WrapTarget *out,
			GError **error)
{
	(void)data;
	if (uuid[0] == '0') {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "not prepared");
		return FALSE;
	}
	/* backends whose id starts with "h" sit in the 1G mount */
	out->pagesize = id[0] == 'h' ? 1 << 30 : 2 << 20;
	out->path = g_strdup_printf("/run/dmemfs/%s/%s/%s", dmem_pagesize_name(out->pagesize),
				    uuid, id);
	return TRUE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *s = g_strndup((const char *)data, size);
	g_auto(GStrv) args = g_strsplit(s, "\n", 4096);
	g_auto(WrapResult) r = { 0 };
	g_autoptr(GError) e = NULL;
	int n = (int)g_strv_length(args);

	if (wrap_rewrite("/usr/bin/qemu-system-x86_64", n, args, resolve, NULL, &r, &e)) {
		/* same length, NULL-terminated, and unchanged when not rewritten */
		if (r.argv->len != (guint)n + 2 || g_ptr_array_index(r.argv, n + 1))
			__builtin_trap();
		for (int i = 0; !r.rewritten && i < n; i++)
			if (strcmp(g_ptr_array_index(r.argv, i + 1), args[i]))
				__builtin_trap();
	}
	return 0;
}
