/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A QMP client for the one thing the wrapper says to QEMU: commands written
 * on a connected socket, their replies read back with json-glib.  The
 * greeting and events are skipped; each command must get its "return".
 */
#ifndef WRAP_QMP_H
#define WRAP_QMP_H

#include <glib.h>

#define QMP_ERROR (qmp_error_quark())
GQuark qmp_error_quark(void);
typedef enum {
	QMP_ERROR_REFUSED,  /* QEMU answered an "error" */
	QMP_ERROR_PROTOCOL, /* what came is not QMP */
	QMP_ERROR_CLOSED,   /* QEMU closed the socket: it is gone */
	QMP_ERROR_TIMEOUT,  /* no answer by the deadline */
	QMP_ERROR_IO,       /* a write or read failed */
} QmpError;

/*
 * Write @cmds (JSON objects, NULL-ended) to @fd, then read a reply for each
 * by @deadline (g_get_monotonic_time() microseconds).  FALSE with one line
 * in a QMP_ERROR when QEMU answers an "error" (its class and desc), sends
 * what is not QMP, closes the socket or is too late.
 */
gboolean qmp_execute(int fd, const char *const *cmds, gint64 deadline, GError **error);

#endif
