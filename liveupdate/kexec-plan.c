// SPDX-License-Identifier: GPL-2.0-or-later
/* The kexec plan of a host kernel update, from text (kexec-plan.h). */
#include "kexec-plan.h"

#include <string.h>

void kexec_plan_clear(KexecPlan *p)
{
	g_clear_pointer(&p->cmdline, g_free);
}

/* "0x..." as the ABI has it (Documentation/ABI/testing/sysfs-kernel-mm-dmem): %#llx, so 0 is "0" */
static gboolean hex(const char *s, guint64 *v)
{
	if (!strcmp(s, "0")) {
		*v = 0;
		return TRUE;
	}
	return g_str_has_prefix(s, "0x") && g_ascii_isxdigit(s[2]) &&
	       g_ascii_string_to_unsigned(s + 2, 16, 0, G_MAXUINT64, v, NULL);
}

/* "dmem=SIZE@ADDR ..." for the ranges this boot reserved, and the lowest */
static char *fixed_ranges(const char *text, guint64 *lowest, GError **error)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	g_autoptr(GString) s = g_string_new(NULL);

	*lowest = G_MAXUINT64;
	for (guint i = 0; lines[i]; i++) {
		g_auto(GStrv) f = g_strsplit(g_strstrip(lines[i]), " ", -1);
		guint64 node, base, size;

		if (!*lines[i])
			continue;
		if (g_strv_length(f) != 3 ||
		    !g_ascii_string_to_unsigned(f[0], 10, 0, DMEM_MAX_NODES - 1, &node, NULL) ||
		    !hex(f[1], &base) || !hex(f[2], &size) || !size || base + size < base) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "dmem ranges: bad line '%s' (want NODE 0xBASE 0xSIZE)", lines[i]);
			return NULL;
		}
		g_string_append_printf(s, "%sdmem=%" G_GUINT64_FORMAT "@%" G_GUINT64_FORMAT,
				       s->len ? " " : "", size, base);
		*lowest = MIN(*lowest, base);
	}
	if (!s->len) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "dmem ranges: none reserved");
		return NULL;
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* the dmemfs_recover= word of the table at @addr: its ADDR:KEY line */
static char *table_token(const char *tables, const char *addr, GError **error)
{
	g_auto(GStrv) lines = g_strsplit(tables, "\n", -1);
	g_autofree char *want = g_strdup_printf("%s:", addr);

	for (guint i = 0; lines[i]; i++)
		if (g_str_has_prefix(g_strstrip(lines[i]), want) && !strchr(lines[i], ' '))
			return g_strdup(lines[i]);
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "no key for the table at %s", addr);
	return NULL;
}

gboolean kexec_ranges_check(const char *ranges, GError **error)
{
	g_autofree char *words = NULL;
	guint64 lowest;

	words = fixed_ranges(ranges, &lowest, error);
	return words != NULL;
}

gboolean kexec_plan(const KexecInput *in, KexecPlan *out, GError **error)
{
	static const char *const drop[] = { "dmem=", "dmemfs_recover=", "BOOT_IMAGE=", "initrd=" };
	g_autofree char *ranges = NULL;
	g_auto(GStrv) words = NULL;
	g_autoptr(GString) tables = g_string_new(NULL);
	g_autoptr(GString) s = g_string_new(NULL);
	guint64 lowest;

	*out = (KexecPlan){ 0 };
	ranges = fixed_ranges(in->ranges, &lowest, error);
	if (!ranges)
		return FALSE;
	if (lowest == 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "dmem ranges: one starts at 0, no room for the next kernel below");
		return FALSE;
	}
	for (guint i = 0; in->addrs && in->addrs[i]; i++) {
		g_autofree char *token = table_token(in->tables, in->addrs[i], error);

		if (!token)
			return FALSE;
		g_string_append_printf(tables, "%s%s", tables->len ? "," : "", token);
	}
	if (!tables->len) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "no dmemfs mount to persist (configured: see dmemfs-host.conf)");
		return FALSE;
	}
	/* this boot's words, without dmem=, dmemfs_recover= and the loader's */
	words = g_strsplit_set(in->cmdline, " \t\n", -1);
	for (guint i = 0; words[i]; i++) {
		gboolean keep = *words[i] != '\0';

		for (guint k = 0; keep && k < G_N_ELEMENTS(drop); k++)
			keep = !g_str_has_prefix(words[i], drop[k]);
		if (keep)
			g_string_append_printf(s, "%s ", words[i]);
	}
	g_string_append_printf(s, "%s dmemfs_recover=%s", ranges, tables->str);
	if (in->append && *in->append)
		g_string_append_printf(s, " %s", in->append);
	out->cmdline = g_string_free(g_steal_pointer(&s), FALSE);
	out->mem_max = lowest - 1;
	return TRUE;
}
