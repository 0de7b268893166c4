/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A QMP client for the one thing the wrapper says to QEMU: commands written
 * on a connected socket, their replies read back with json-glib.  The
 * greeting and events are skipped; each command must get its "return".
 */
#ifndef WRAP_QMP_H
#define WRAP_QMP_H

#include <glib.h>

/*
 * Write @cmds (JSON objects, NULL-ended) to @fd, then read a reply for each
 * by @deadline (g_get_monotonic_time() microseconds).  FALSE with one line
 * when QEMU answers an "error" (its class and desc), sends what is not QMP,
 * closes the socket or is too late.
 */
gboolean qmp_execute(int fd, const char *const *cmds, gint64 deadline, GError **error);

#endif
