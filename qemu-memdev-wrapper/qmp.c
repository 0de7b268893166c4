// SPDX-License-Identifier: GPL-2.0-or-later
/* QMP commands over a connected socket, replies parsed with json-glib (qmp.h). */
#include "qmp.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK(qmp-error-quark, qmp_error)

/* a whole QMP message is far below this; more without a newline is not QMP */
#define QMP_MAX_LINE (1u << 20)

static gboolean write_all(int fd, const char *s, gsize len, GError **error)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			g_set_error(error, QMP_ERROR, QMP_ERROR_IO, "QMP: write: %s",
				    g_strerror(n < 0 ? errno : EPIPE));
			return FALSE;
		}
		s += n;
		len -= (gsize)n;
	}
	return TRUE;
}

/* One message: 1 a "return", 0 the greeting or an event, -1 an error (@error) */
static int message(const char *line, GError **error)
{
	g_autoptr(JsonParser) p = json_parser_new();
	JsonObject *o, *err = NULL;
	JsonNode *e;

	if (!json_parser_load_from_data(p, line, -1, NULL) || !json_parser_get_root(p) ||
	    !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p))) {
		g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL, "QMP: not a JSON object: %.80s",
			    line);
		return -1;
	}
	o = json_node_get_object(json_parser_get_root(p));
	if (json_object_has_member(o, "return"))
		return 1;
	if (json_object_has_member(o, "QMP") || json_object_has_member(o, "event"))
		return 0;
	e = json_object_get_member(o, "error");
	if (e && JSON_NODE_HOLDS_OBJECT(e))
		err = json_node_get_object(e);
	if (err) {
		g_set_error(error, QMP_ERROR, QMP_ERROR_REFUSED, "QMP: %s: %s",
			    json_object_get_string_member_with_default(err, "class", "error"),
			    json_object_get_string_member_with_default(err, "desc", "(no desc)"));
		return -1;
	}
	g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL, "QMP: neither return nor error: %.80s",
		    line);
	return -1;
}

gboolean qmp_execute(int fd, const char *const *cmds, gint64 deadline, GError **error)
{
	g_autoptr(GString) buf = g_string_new(NULL);
	guint want = 0;

	for (; cmds[want]; want++) {
		g_autofree char *line = g_strconcat(cmds[want], "\n", NULL);

		if (!write_all(fd, line, strlen(line), error))
			return FALSE;
	}
	while (want) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		gint64 left = deadline - g_get_monotonic_time();
		char chunk[4096];
		ssize_t n;
		char *nl;

		int ready = left > 0 ? poll(&pfd, 1, (int)MIN(left / 1000 + 1, G_MAXINT)) : 0;

		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0) {
			g_set_error(error, QMP_ERROR, QMP_ERROR_IO, "QMP: poll: %s", g_strerror(errno));
			return FALSE;
		}
		if (ready == 0) {
			g_set_error(error, QMP_ERROR, QMP_ERROR_TIMEOUT,
				    "QMP: no reply from QEMU in time (%u outstanding)", want);
			return FALSE;
		}
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			g_set_error(error, QMP_ERROR, n ? QMP_ERROR_IO : QMP_ERROR_CLOSED, "QMP: %s",
				    n ? g_strerror(errno) : "QEMU closed the monitor");
			return FALSE;
		}
		g_string_append_len(buf, chunk, n);
		while (want && (nl = memchr(buf->str, '\n', buf->len))) {
			g_autofree char *line = g_strndup(buf->str, nl - buf->str);
			int r;

			g_string_erase(buf, 0, nl - buf->str + 1);
			if (!*g_strstrip(line))
				continue;
			r = message(line, error);
			if (r < 0)
				return FALSE;
			want -= (guint)r;
		}
		if (buf->len > QMP_MAX_LINE) {
			g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
				    "QMP: a message longer than %u bytes", QMP_MAX_LINE);
			return FALSE;
		}
	}
	return TRUE;
}
