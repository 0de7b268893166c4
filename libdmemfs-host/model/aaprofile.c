// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The rules libvirt's virt-aa-helper wrote for a domain, checked against
 * the dmemfs mounts.  virt-aa-helper turns the paths of the domain XML
 * (disks and their backing chains, serial files, kernel, shared
 * directories...) into rules, resolving what exists and keeping the rest
 * as written, globs included: only its output says what the QEMU may open.
 */
#include "aaprofile.h"
#include "domaindir.h"

#include <fnmatch.h>
#include <mntent.h>
#include <stdio.h>
#include <string.h>

#define AA_MAX_EXPANSIONS 64

/* {a,b} alternatives expanded, at most AA_MAX_EXPANSIONS; FALSE beyond */
static gboolean expand_braces(const char *glob, GPtrArray *out)
{
	const char *open = strchr(glob, '{'), *p, *close = NULL, *alt;
	int depth = 0;

	if (!open) {
		if (out->len >= AA_MAX_EXPANSIONS)
			return FALSE;
		g_ptr_array_add(out, g_strdup(glob));
		return TRUE;
	}
	for (p = open; *p; p++) {
		depth += *p == '{';
		depth -= *p == '}';
		if (!depth) {
			close = p;
			break;
		}
	}
	if (!close)
		return FALSE;
	/* each top-level alternative between the braces */
	alt = open + 1;
	depth = 0;
	for (p = open + 1; p <= close; p++) {
		if (p == close || (*p == ',' && !depth)) {
			g_autofree char *one = g_strdup_printf("%.*s%.*s%s", (int)(open - glob), glob,
							       (int)(p - alt), alt, close + 1);

			if (!expand_braces(one, out))
				return FALSE;
			alt = p + 1;
			continue;
		}
		depth += *p == '{';
		depth -= *p == '}';
	}
	return TRUE;
}

/*
 * Could @glob (no braces) match @dir or a path under it?  Component by
 * component: a "**" anywhere from there on matches any depth; otherwise
 * each of @dir's components must fnmatch the glob's, and the glob must not
 * end above @dir.
 */
static gboolean glob_reaches(const char *glob, const char *dir)
{
	g_auto(GStrv) g = g_strsplit(glob, "/", -1), d = g_strsplit(dir, "/", -1);
	guint i;

	for (i = 0; d[i]; i++) {
		if (!*d[i])
			continue;	/* the root's empty first component */
		if (!g[i])
			return FALSE;	/* the glob ends above the mount */
		if (strstr(g[i], "**"))
			return TRUE;
		if (fnmatch(g[i], d[i], 0))
			return FALSE;
	}
	return TRUE;	/* the mount itself, or under it */
}

/*
 * libvirt's own subtree for this domain under a memory_backing_dir on
 * dmemfs (hot-added memory, README): <mount>/libvirt/qemu/<id>-<name>/,
 * named by one literal component.  Paths of the XML cannot be there (the
 * prepare check refuses them), so such a rule is libvirt's, for this
 * domain's own directory; a glob in that component (a domain name with a
 * '*') could reach another domain's.
 */
static gboolean libvirt_memory_dir(const char *glob, const char *mount)
{
	g_autofree char *base = g_strconcat(mount, "/libvirt/qemu/", NULL);
	const char *c, *end;

	if (!g_str_has_prefix(glob, base))
		return FALSE;
	c = glob + strlen(base);
	end = strchrnul(c, '/');
	if (end == c || strcspn(c, "*?[]{}") < (size_t)(end - c))
		return FALSE;
	return !((end - c == 1 && c[0] == '.') || (end - c == 2 && c[0] == '.' && c[1] == '.'));
}

/* one rule's path: a quoted string or the first word; NULL when not a path rule */
static char *rule_path(const char *line, gboolean *deny)
{
	const char *p = line + strspn(line, " \t");
	const char *end;

	*deny = FALSE;
	for (;;) {
		if (g_str_has_prefix(p, "deny ")) {
			*deny = TRUE;
			p += 5;
		} else if (g_str_has_prefix(p, "allow ")) {
			p += 6;
		} else if (g_str_has_prefix(p, "audit ")) {
			p += 6;
		} else if (g_str_has_prefix(p, "owner ")) {
			p += 6;
		} else if (g_str_has_prefix(p, "file ")) {
			p += 5;
		} else {
			break;
		}
		p += strspn(p, " \t");
	}
	if (*p == '"') {
		end = strchr(p + 1, '"');
		return end ? g_strndup(p + 1, (gsize)(end - p - 1)) : g_strdup(p);
	}
	if (*p != '/' && *p != '@')
		return NULL;	/* a network, signal, ptrace... rule, a comment */
	end = p + strcspn(p, " \t,");
	return g_strndup(p, (gsize)(end - p));
}

static gboolean path_is_plain(const char *path)
{
	g_auto(GStrv) parts = g_strsplit(path, "/", -1);

	/* a blank is a file name's (a quoted rule); an escape or a control is not ours */
	if (path[0] != '/' || strstr(path, "@{") || strpbrk(path, "\\\"\n\r\t\v\f"))
		return FALSE;
	for (guint i = 0; parts[i]; i++)
		if (!strcmp(parts[i], ".") || !strcmp(parts[i], ".."))
			return FALSE;
	return TRUE;
}

gboolean dmem_aa_rules_avoid(const char *rules, char *const *mounts, GError **error)
{
	g_auto(GStrv) lines = g_strsplit(rules, "\n", -1);

	for (guint i = 0; lines[i]; i++) {
		g_autoptr(GPtrArray) globs = g_ptr_array_new_with_free_func(g_free);
		g_autofree char *path = NULL, *shown = NULL;
		gboolean deny, reaches = FALSE;

		path = rule_path(lines[i], &deny);
		if (!path || deny)
			continue;
		if (!path_is_plain(path) || !expand_braces(path, globs)) {
			shown = g_strescape(path, NULL);
			return dmem_fail(error, "its AppArmor profile has the rule '%s', which this "
					 "hook cannot tell from one that reaches a guest's memory",
					 shown);
		}
		for (guint j = 0; j < globs->len && !reaches; j++)
			for (char *const *m = mounts; *m && !reaches; m++)
				reaches = !libvirt_memory_dir(g_ptr_array_index(globs, j), *m) &&
					  glob_reaches(g_ptr_array_index(globs, j), *m);
		if (reaches) {
			shown = g_strescape(path, NULL);
			return dmem_fail(error, "its AppArmor profile would let its QEMU reach a "
					 "guest's memory on dmemfs ('%s', from a path of its XML or a "
					 "disk's backing chain): a guest's memory is only ever its "
					 "memory backing", shown);
		}
	}
	return TRUE;
}

/*
 * @n bytes of @s in a quoted AppArmor path, its glob characters escaped
 * (@special: those outside or inside a [...] class)
 */
static void aa_escaped(GString *out, const char *s, gsize n, const char *special)
{
	for (gsize i = 0; i < n; i++) {
		if (s[i] && strchr(special, s[i]))
			g_string_append_c(out, '\\');
		g_string_append_c(out, s[i]);
	}
}

static void aa_literal(GString *out, const char *s, gsize n)
{
	/* ',' too: each name is an alternative of a {...} */
	aa_escaped(out, s, n, "\\\"*?[]{}@,");
}

/* one alternative of a deny rule: @n bytes of @name, then @tail */
static void deny_item(GString *items, const char *name, gsize n, const char *tail)
{
	if (items->len)
		g_string_append_c(items, ',');
	aa_literal(items, name, n);
	g_string_append(items, tail);
}

/*
 * Deny everything under @dir but the names of @keep (and what is under
 * them), one character at a time: for each prefix p of a kept name, a name
 * that goes on from p with a character no kept name has there, and p
 * itself (with all under it) when p is no kept name.  One rule with an
 * alternative each: apparmor_parser compiles that faster than a rule each,
 * and libvirt loads the profile several times per start.  @dir: a plain
 * path (plain_mount()) or one with a deliberate glob, as it is.
 */
static void deny_all_but(GString *out, const char *dir, const char *const *keep)
{
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GString) items = g_string_new(NULL);

	g_string_append_printf(out, "  audit deny \"%s/\" mrwlkx,\n", dir);
	for (const char *const *k = keep; *k; k++) {
		for (gsize len = 0; len <= strlen(*k); len++) {
			g_autoptr(GString) next = g_string_new(NULL);
			char *p = g_strndup(*k, len);
			gboolean kept = FALSE;

			if (!g_hash_table_add(seen, p))
				continue;
			for (const char *const *k2 = keep; *k2; k2++) {
				if (strncmp(*k2, p, len))
					continue;
				if (strlen(*k2) == len)
					kept = TRUE;
				else if (!memchr(next->str, (*k2)[len], next->len))
					g_string_append_c(next, (*k2)[len]);
			}
			if (!kept && len)
				deny_item(items, p, len, "{,/**}");
			if (!next->len) {
				deny_item(items, p, len, "?**");
				continue;
			}
			g_string_append(next, "/");
			{
				g_autoptr(GString) cls = g_string_new("[^");

				/* apparmor_parser expands * and ? in a class too */
				aa_escaped(cls, next->str, next->len, "\\\"[]^-*?{},@");
				g_string_append(cls, "]**");
				deny_item(items, p, len, cls->str);
			}
		}
	}
	g_string_append_printf(out, "  audit deny \"%s/{%s}\" mrwlkx,\n", dir, items->str);
}

static gboolean plain_mount(const char *m)
{
	return m[0] == '/' && m[strspn(m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "0123456789._/-")] == '\0' && !strstr(m, "/.") && strlen(m) > 1;
}

char *dmem_aa_deny_rules(char *const *mounts, const char *uuid, const char *shortname,
			 GError **error)
{
	g_autoptr(GString) out = g_string_new("  # dmemfs-host: no other guest's memory, whatever "
					      "libvirt-<uuid>.files grants (dmemfs-hook(8))\n");
	/* the domain's directory is named after its profile: libvirt-<uuid> */
	g_autofree char *mine = dmem_domain_dirname(uuid);
	const char *top[] = { mine, "libvirt", NULL };
	const char *qemu[] = { "qemu", NULL };
	const char *own[] = { shortname, NULL };
	g_autoptr(GHashTable) done = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

	for (char *const *m = mounts; *m; m++) {
		g_autofree char *parent = NULL, *lv = NULL, *lvq = NULL;
		char *dir;

		if (!plain_mount(*m))
			return dmem_fail(error, "dmemfs mount '%s': only letters, digits and ._/- "
					 "can go into an AppArmor rule as they are", *m), NULL;
		/*
		 * The mounts of the usual layout, /run/dmemfs/<size>, share one
		 * block of rules for every directory there, mounted later
		 * included: each block costs apparmor_parser time at every load
		 * (each start and hot-plug), about 10 s under TCG for three.
		 */
		parent = g_path_get_dirname(*m);
		dir = g_strdup(!strcmp(parent, DMEM_AA_RUN_DIR) ? DMEM_AA_RUN_DIR "/*" : *m);
		if (!g_hash_table_add(done, dir))
			continue;
		lv = g_strconcat(dir, "/libvirt", NULL);
		lvq = g_strconcat(dir, "/libvirt/qemu", NULL);
		deny_all_but(out, dir, top);
		deny_all_but(out, lv, qemu);
		if (shortname)
			deny_all_but(out, lvq, own);
		else
			g_string_append_printf(out, "  audit deny \"%s/**\" mrwlkx,\n", lvq);
	}
	return g_string_free(g_steal_pointer(&out), FALSE);
}

char *dmem_aa_main_profile(const char *template, const char *uuid, const char *rules,
			   GError **error)
{
	static const char marker[] = "\nprofile LIBVIRT_TEMPLATE";
	g_autofree char *name = dmem_domain_dirname(uuid);
	const char *p = strstr(template, marker);
	const char *body = p ? p + strlen(marker) : NULL;
	const char *end = body ? strstr(body, "\n}") : NULL;

	if (!end || strstr(end + 2, "\n}"))
		return dmem_fail(error, "libvirt's AppArmor template has no 'profile "
				 "LIBVIRT_TEMPLATE' with one closing brace"), NULL;
	/* as virt-aa-helper -c: the name, and the .files include at the end */
	return g_strdup_printf("%.*s\nprofile %s%.*s\n%s  #include <libvirt/%s.files>\n}%s",
			       (int)(p - template), template, name, (int)(end - body), body,
			       rules, name, end + 2);
}

char *dmem_aa_short_name(long long id, const char *name)
{
	for (const char *c = name; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			return NULL;
	return g_strdup_printf("%lld-%.20s", id, name);
}

GPtrArray *dmem_aa_dmemfs_dirs(const DmemConfig *cfg)
{
	GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
	DmemMountIter it = { 0 };
	struct mntent *me;
	FILE *f = setmntent("/proc/self/mounts", "r");

	while (f && (me = getmntent(f)))
		if (!strcmp(me->mnt_type, "dmemfs"))
			g_ptr_array_add(dirs, g_strdup(me->mnt_dir));
	if (f)
		endmntent(f);
	/* and where the configuration mounts one, mounted or not yet */
	while (cfg && dmem_config_next_mount(cfg, &it))
		g_ptr_array_add(dirs, g_canonicalize_filename(it.path, "/"));
	g_ptr_array_add(dirs, NULL);
	return dirs;
}
