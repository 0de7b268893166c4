// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Running another program: an argv, never a shell, and on a failure an
 * error that says which command it was, how it ended and what it wrote on
 * stderr, in one line.
 */
#include "dmemfs-host.h"

#include <string.h>
#include <sys/wait.h>

/* what an error shows of the command and of its stderr, in bytes */
#define RUN_ARGV_SHOWN 1024
#define RUN_STDERR_SHOWN 512

/* @s cut to at most @max bytes, at a character boundary, marked "..." */
static void cut(GString *s, gsize max)
{
	if (s->len <= max)
		return;
	while (max > 0 && (s->str[max] & 0xc0) == 0x80)
		max--;
	g_string_truncate(s, max);
	g_string_append(s, "...");
}

/* what a terminal or a log reader would act on rather than show */
static gboolean unshowable(gunichar c)
{
	switch (g_unichar_type(c)) {
	case G_UNICODE_CONTROL:			/* C0, DEL, C1 (CSI, NEL) */
	case G_UNICODE_FORMAT:			/* bidi overrides and isolates */
	case G_UNICODE_LINE_SEPARATOR:
	case G_UNICODE_PARAGRAPH_SEPARATOR:
		return TRUE;
	default:
		return FALSE;
	}
}

char *dmem_one_line(const char *text, const char *sep)
{
	g_autofree char *valid = g_utf8_make_valid(text ? text : "", -1);
	g_auto(GStrv) lines = g_strsplit(valid, "\n", -1);
	g_autoptr(GString) s = g_string_new(NULL);

	for (char **l = lines; *l; l++) {
		g_strstrip(*l);
		if (!**l)
			continue;
		if (s->len)
			g_string_append(s, sep);
		for (const char *p = *l; *p; p = g_utf8_next_char(p)) {
			/* a tab, a bare CR, an escape sequence, U+2028, U+202E: blanks */
			if (unshowable(g_utf8_get_char(p)))
				g_string_append_c(s, ' ');
			else
				g_string_append_len(s, p, g_utf8_next_char(p) - p);
		}
	}
	cut(s, DMEM_LINE_SHOWN);
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* a word no POSIX shell splits or expands */
static gboolean shell_plain(const char *arg)
{
	if (!*arg)
		return FALSE;
	for (const char *p = arg; *p; p++)
		if (!g_ascii_isalnum(*p) && !strchr("%+,-./:=@_", *p))
			return FALSE;
	return TRUE;
}

/*
 * @arg as it would be typed in a shell: bare when it can be, else quoted
 * by g_shell_quote(), or as $'...' when it holds control characters, so
 * that the command stays on one line.
 */
static void append_arg(GString *s, const char *arg)
{
	gboolean ctl = FALSE;

	if (shell_plain(arg)) {
		g_string_append(s, arg);
		return;
	}
	for (const char *p = arg; *p; p++)
		ctl |= g_ascii_iscntrl(*p);
	if (!ctl) {
		g_autofree char *q = g_shell_quote(arg);

		g_string_append(s, q);
		return;
	}
	g_string_append(s, "$'");
	for (const char *p = arg; *p; p++) {
		if (*p == '\'' || *p == '\\')
			g_string_append_printf(s, "\\%c", *p);
		else if (*p == '\n')
			g_string_append(s, "\\n");
		else if (g_ascii_iscntrl(*p))
			g_string_append_printf(s, "\\x%02x", (guchar)*p);
		else
			g_string_append_c(s, *p);
	}
	g_string_append_c(s, '\'');
}

/* the whole command, each argument quoted as needed, cut to RUN_ARGV_SHOWN */
static char *argv_shown(const char *const *argv)
{
	g_autoptr(GString) s = g_string_new(NULL);

	for (const char *const *a = argv; *a; a++) {
		if (s->len)
			g_string_append_c(s, ' ');
		append_arg(s, *a);
	}
	cut(s, RUN_ARGV_SHOWN);
	return g_string_free(g_steal_pointer(&s), FALSE);
}

static char *status_shown(int status)
{
	if (WIFEXITED(status))
		return g_strdup_printf("exit status %d", WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return g_strdup_printf("killed by signal %d (%s)", WTERMSIG(status),
				       g_strsignal(WTERMSIG(status)));
	return g_strdup_printf("wait status %d", status);
}

/*
 * Children run as root with this PATH, whatever the caller's (unset under
 * env -i or cron, where GLib would fall back to searching ".")
 */
static const char *const run_envp_path = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

gboolean dmem_run(const char *const *argv, char **out, GError **error)
{
	GSpawnFlags flags = G_SPAWN_SEARCH_PATH_FROM_ENVP | G_SPAWN_STDIN_FROM_DEV_NULL |
			    G_SPAWN_CLOEXEC_PIPES;
	g_auto(GStrv) envp = g_environ_setenv(g_get_environ(), "PATH", run_envp_path + 5, TRUE);
	g_autofree char *o = NULL, *err = NULL, *cmd = NULL, *how = NULL, *line = NULL;
	g_autoptr(GString) said = NULL;
	g_autoptr(GError) e = NULL;
	int status;

	g_return_val_if_fail(argv && argv[0], FALSE);
	if (!out)
		flags |= G_SPAWN_STDOUT_TO_DEV_NULL;
	if (!g_spawn_sync(NULL, (char **)argv, envp, flags, NULL, NULL, out ? &o : NULL, &err,
			  &status, &e)) {
		cmd = argv_shown(argv);
		return dmem_fail(error, "%s: %s", cmd, e->message);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		if (out)
			*out = g_steal_pointer(&o);
		return TRUE;
	}
	cmd = argv_shown(argv);
	how = status_shown(status);
	line = dmem_one_line(err, "; ");
	said = g_string_new(line);
	cut(said, RUN_STDERR_SHOWN);
	return dmem_fail(error, "%s: %s%s%s", cmd, how, said->len ? ": " : "", said->str);
}
