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
	g_autoptr(GArray) seen = g_array_new(FALSE, FALSE, sizeof(guint64) * 2);

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
		for (guint k = 0; k < seen->len; k++) {
			const guint64 *r = &g_array_index(seen, guint64, 2 * k);

			if (base < r[0] + r[1] && r[0] < base + size) {
				g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
					    "dmem ranges: '%s' overlaps another range", lines[i]);
				return NULL;
			}
		}
		g_array_append_vals(seen, (guint64[]){ base, size }, 1);
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

/* the dmemfs_recover= word of the table at @addr: its ADDR:KEY line, KEY in hex */
static char *table_token(const char *tables, const char *addr, GError **error)
{
	g_auto(GStrv) lines = g_strsplit(tables, "\n", -1);
	g_autofree char *want = g_strdup_printf("%s:", addr);

	for (guint i = 0; lines[i]; i++) {
		const char *key;

		if (!g_str_has_prefix(g_strstrip(lines[i]), want))
			continue;
		key = lines[i] + strlen(want);
		if (!*key || strspn(key, "0123456789abcdef") != strlen(key)) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "the key of the table at %s is not hex", addr);
			return NULL;
		}
		return g_strdup(lines[i]);
	}
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "no key for the table at %s", addr);
	return NULL;
}

/*
 * The kernel's words: split at blanks outside double quotes, as the
 * kernel's own parser (next_arg()) does, so that foo="a b" stays one word.
 */
static GPtrArray *cmdline_words(const char *cmdline)
{
	GPtrArray *w = g_ptr_array_new_with_free_func(g_free);
	gboolean quoted = FALSE;
	const char *start = NULL;

	for (const char *p = cmdline;; p++) {
		gboolean blank = !*p || (!quoted && g_ascii_isspace(*p));

		if (!blank && !start)
			start = p;
		if (*p == '"')
			quoted = !quoted;
		if (blank && start) {
			g_ptr_array_add(w, g_strndup(start, p - start));
			start = NULL;
		}
		if (!*p)
			break;
	}
	return w;
}

gboolean kexec_plan(const KexecInput *in, KexecPlan *out, GError **error)
{
	static const char *const drop[] = { "dmem=", "dmemfs_recover=", "BOOT_IMAGE=", "initrd=" };
	g_autofree char *ranges = NULL;
	g_autoptr(GPtrArray) words = NULL;
	g_autoptr(GString) tables = g_string_new(NULL);
	g_autoptr(GString) s = g_string_new(NULL);
	guint64 lowest;
	guint init = G_MAXUINT;

	*out = (KexecPlan){ 0 };
	ranges = fixed_ranges(in->ranges, &lowest, error);
	if (!ranges)
		return FALSE;
	if (lowest < KEXEC_ROOM_MIN) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "dmem ranges: one starts at 0x%" G_GINT64_MODIFIER "x, below %u MiB: no "
			    "room for the next kernel and its initrd below every range",
			    lowest, KEXEC_ROOM_MIN >> 20);
		return FALSE;
	}
	for (guint i = 0; in->addrs && in->addrs[i]; i++) {
		g_autofree char *token = table_token(in->tables, in->addrs[i], error);

		if (!token)
			return FALSE;
		g_string_append_printf(tables, "%s%s", tables->len ? "," : "", token);
	}
	if (!tables->len) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "no dmemfs mount to persist (configured: see dmemfs-host.conf)");
		return FALSE;
	}
	/*
	 * This boot's words, without dmem=, dmemfs_recover= and the loader's;
	 * ours go before a "--", after which everything is init's.
	 */
	words = cmdline_words(in->cmdline);
	for (guint i = 0; i < words->len; i++) {
		const char *w = g_ptr_array_index(words, i);
		gboolean keep = TRUE;

		if (!strcmp(w, "--")) {
			init = i;
			break;
		}
		for (guint k = 0; keep && k < G_N_ELEMENTS(drop); k++)
			keep = !g_str_has_prefix(w, drop[k]);
		if (keep)
			g_string_append_printf(s, "%s ", w);
	}
	g_string_append_printf(s, "%s dmemfs_recover=%s", ranges, tables->str);
	if (in->append && *in->append)
		g_string_append_printf(s, " %s", in->append);
	for (guint i = init; i < words->len; i++)
		g_string_append_printf(s, " %s", (char *)g_ptr_array_index(words, i));
	if (s->len >= KEXEC_CMDLINE_MAX) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "the next command line would have %" G_GSIZE_FORMAT " bytes, more than "
			    "the %u x86 takes", s->len, KEXEC_CMDLINE_MAX - 1);
		return FALSE;
	}
	out->cmdline = g_string_free(g_steal_pointer(&s), FALSE);
	out->mem_max = lowest - 1;
	return TRUE;
}

gboolean kexec_plan_check(const KexecInput *in, guint mounts, GError **error)
{
	g_autoptr(GPtrArray) addrs = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GString) tables = g_string_new(NULL);
	g_auto(KexecPlan) plan = { 0 };
	KexecInput probe = *in;

	/* the longest table words the kernel writes: a 64-bit address, a 256-bit key */
	for (guint i = 0; i < mounts; i++) {
		char *addr = g_strdup_printf("0x%016x", 0xfffffff0u + i);

		g_string_append_printf(tables, "%s:%064x\n", addr, 0);
		g_ptr_array_add(addrs, addr);
	}
	g_ptr_array_add(addrs, NULL);
	probe.tables = tables->str;
	probe.addrs = (const char *const *)addrs->pdata;
	return kexec_plan(&probe, &plan, error);
}
