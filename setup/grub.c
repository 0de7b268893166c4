// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmemfs-host-setup grub: the dmem= a host boots with, in the grub snippet
 * the package puts in /etc/default/grub.d (DMEM="..."), given or seeded
 * from dmem-capacity --recommend.  update-grub and the reboot stay the
 * operator's.
 */
#include "grub.h"

#include "dmemfs-host.h"

#include <errno.h>
#include <fcntl.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GRUB_MAX_BYTES (64 * 1024)
/* x86_64's memory section: the kernel's smallest dmem= alignment */
#define DMEM_SECTION (G_GUINT64_CONSTANT(1) << 27)


/*
 * One number of a dmem= value: decimal digits, no leading zero (the
 * kernel's memparse() would read "010G" as octal), and an optional unit,
 * K to E in either case as the kernel takes them.  @s moves past it.
 */
static gboolean dmem_number(const char **s, guint64 *val)
{
	static const char units[] = "KMGTPE";
	const char *p = *s, *u;
	guint64 v = 0;

	if (!g_ascii_isdigit(*p) || (*p == '0' && g_ascii_isdigit(p[1])))
		return FALSE;
	for (; g_ascii_isdigit(*p); p++) {
		if (v > (G_MAXUINT64 - (guint64)(*p - '0')) / 10)
			return FALSE;
		v = v * 10 + (guint64)(*p - '0');
	}
	u = *p ? strchr(units, g_ascii_toupper(*p)) : NULL;
	if (u) {
		int shift = 10 * (int)(u - units + 1);

		if (v > G_MAXUINT64 >> shift)
			return FALSE;
		v <<= shift;
		p++;
	}
	*s = p;
	*val = v;
	return TRUE;
}

/*
 * The rules of the kernel's dmem_parse_param() (kernel/patches/0001): a
 * value the kernel would ignore at boot (a warning, nothing reserved) is
 * refused here, where the operator still sees it.  The empty value
 * reserves nothing.  Nothing but these characters reaches the snippet (a
 * shell script) or the kernel command line.
 */
gboolean setup_grub_value_ok(const char *value, GError **error)
{
	g_autofree char *shown = g_strescape(value, NULL);
	guint64 size, addr = 0, align = DMEM_SECTION;
	gboolean keeps = FALSE, has_addr = FALSE, has_align = FALSE;
	const char *p = value, *why = NULL;

	if (!*value)
		return TRUE;
	if (*p == '!') {
		keeps = TRUE;
		p++;
	}
	if (!dmem_number(&p, &size))
		why = "the size is not a decimal number with K, M, G, T, P or E";
	while (!why && *p) {
		char sep = *p++;

		if (sep == '@' && !has_addr && dmem_number(&p, &addr))
			has_addr = TRUE;
		else if (sep == ':' && !has_align && dmem_number(&p, &align))
			has_align = TRUE;
		else
			why = "expected one @ADDR and one :ALIGN at most, each a decimal number";
	}
	if (!why && !size)
		why = "the size is zero";
	else if (!why && ((align & (align - 1)) || align < DMEM_SECTION))
		why = "the alignment is not a power of two of at least 128M";
	else if (!why && size % align)
		why = "the size is not a multiple of the alignment";
	else if (!why && has_addr && keeps)
		why = "'!' cannot go with '@ADDR'";
	else if (!why && has_addr && (!addr || addr % align || addr + size < addr))
		why = "the address is 0, not aligned, or the range wraps";
	if (why)
		return dmem_fail(error, "'%s' is not a dmem= value the kernel takes: %s "
			         "([!]SIZE[:ALIGN] or SIZE@ADDR[:ALIGN])", shown, why);
	return TRUE;
}

/* dmem-capacity next to this program (a build tree) or in ../bin of it */
static char *capacity_path(GError **error)
{
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
	g_autofree char *dir = self ? g_path_get_dirname(self) : NULL;
	char *p;

	if (!dir) {
		dmem_fail(error, "cannot find this program's directory (/proc/self/exe)");
		return NULL;
	}
	p = g_build_filename(dir, "dmem-capacity", NULL);
	if (g_file_test(p, G_FILE_TEST_IS_EXECUTABLE))
		return p;
	g_free(p);
	p = g_build_filename(dir, "..", "bin", "dmem-capacity", NULL);
	if (g_file_test(p, G_FILE_TEST_IS_EXECUTABLE))
		return p;
	dmem_fail(error, "dmem-capacity is not installed next to this program (%s)", p);
	g_free(p);
	return NULL;
}

/* member @name of @o when it is of @type (JSON_NODE_OBJECT or a string) */
static JsonNode *member(JsonObject *o, const char *name, JsonNodeType type)
{
	JsonNode *n = o ? json_object_get_member(o, name) : NULL;

	if (!n || json_node_get_node_type(n) != type)
		return NULL;
	if (type == JSON_NODE_VALUE && json_node_get_value_type(n) != G_TYPE_STRING)
		return NULL;
	return n;
}

char *setup_grub_recommend(char *const *guests, const char *reserve, GError **error)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *prog = NULL, *out = NULL;
	g_autoptr(JsonParser) parser = json_parser_new();
	JsonNode *root, *rec, *dmem;
	const char *value;

	if (!(prog = capacity_path(error)))
		return NULL;
	g_ptr_array_add(argv, g_strdup(prog));
	g_ptr_array_add(argv, g_strdup("--recommend"));
	g_ptr_array_add(argv, g_strdup("--json"));
	for (char *const *g = guests; g && *g; g++)
		g_ptr_array_add(argv, g_strdup_printf("--guest=%s", *g));
	if (reserve)
		g_ptr_array_add(argv, g_strdup_printf("--reserve=%s", reserve));
	g_ptr_array_add(argv, NULL);
	/* an argv, no shell; on a failure the command and dmem-capacity's own line */
	if (!dmem_run((const char *const *)argv->pdata, &out, error))
		return NULL;
	if (!json_parser_load_from_data(parser, out, -1, NULL) ||
	    !(root = json_parser_get_root(parser)) || !JSON_NODE_HOLDS_OBJECT(root)) {
		dmem_fail(error, "dmem-capacity --json printed no JSON object");
		return NULL;
	}
	rec = member(json_node_get_object(root), "recommend", JSON_NODE_OBJECT);
	dmem = rec ? member(json_node_get_object(rec), "dmem", JSON_NODE_VALUE) : NULL;
	value = dmem ? json_node_get_string(dmem) : NULL;
	if (!value || !*value) {
		dmem_fail(error, "dmem-capacity --json printed no recommend.dmem string");
		return NULL;
	}
	if (!setup_grub_value_ok(value, error))
		return NULL;
	return g_strdup(value);
}

/* the file, read through a descriptor that did not follow a symlink */
static char *read_snippet(const char *file, struct stat *st, GError **error)
{
	g_autofree char *text = NULL;
	ssize_t n;
	size_t len = 0;
	int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		dmem_fail(error, "%s: %s", file, errno == ELOOP ? "a symbolic link: not writing it" :
		          g_strerror(errno));
		return NULL;
	}
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_size > GRUB_MAX_BYTES) {
		dmem_fail(error, "%s is not a regular file of at most %d bytes: not writing it", file,
		          GRUB_MAX_BYTES);
		close(fd);
		return NULL;
	}
	text = g_malloc((size_t)st->st_size + 1);
	while ((n = read(fd, text + len, (size_t)st->st_size - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (n < 0 || len != (size_t)st->st_size || memchr(text, 0, len)) {
		dmem_fail(error, "%s changed while it was read, or holds a NUL byte: not writing it",
		          file);
		return NULL;
	}
	text[len] = 0;
	return g_steal_pointer(&text);
}

gboolean setup_grub_write(const char *file, const char *value, GError **error)
{
	g_autoptr(GRegex) any = g_regex_new("^\\s*(export\\s+)?DMEM=", 0, 0, NULL);
	g_autoptr(GRegex) ours = g_regex_new("^DMEM=\"[-!@:0-9A-Za-z]*\"$",
					     G_REGEX_DOLLAR_ENDONLY, 0, NULL);
	g_autoptr(GString) out = g_string_new(NULL);
	g_autoptr(GError) e = NULL;
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	struct stat st;
	guint hits = 0, plain = 0;
	gboolean ok;
	mode_t mask;

	if (!setup_grub_value_ok(value, error))
		return FALSE;
	if (!(text = read_snippet(file, &st, error)))
		return FALSE;
	if (st.st_uid != geteuid())
		return dmem_fail(error, "%s is not owned by the user running this: not writing it",
			         file);
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		if (g_regex_match(any, lines[i], 0, NULL)) {
			hits++;
			if (g_regex_match(ours, lines[i], 0, NULL)) {
				plain++;
				g_string_append_printf(out, "DMEM=\"%s\"", value);
			}
		} else {
			g_string_append(out, lines[i]);
		}
		if (lines[i + 1])
			g_string_append_c(out, '\n');
	}
	/* an edited snippet is the operator's: DMEM set twice, exported, with
	 * more on its line... */
	if (hits != 1 || plain != 1)
		return dmem_fail(error, "%s does not have exactly one line DMEM=\"...\" and no other "
			         "that sets DMEM: edit it by hand", file);
	/* a new file renamed over the old, never half written, with its mode */
	mask = umask(0);
	ok = g_file_set_contents_full(file, out->str, (gssize)out->len,
				      G_FILE_SET_CONTENTS_CONSISTENT, (int)(st.st_mode & 07777), &e);
	umask(mask);
	if (!ok)
		return dmem_fail(error, "%s", e->message);
	return TRUE;
}
