/* SPDX-License-Identifier: GPL-2.0-or-later */
/* QEMU argv rewrite: memory-backend-{ram,memfd,file} -> dmemfs files. */
#ifndef DMEMFS_REWRITE_H
#define DMEMFS_REWRITE_H

#include "carry.h"

typedef struct {
	char *path;       /* <mount>/libvirt-<uuid>/<id> */
	guint64 pagesize; /* the mount's */
} WrapTarget;

/* find the hook's file for backend @id of a domain UUID */
typedef gboolean (*WrapResolveFn)(const char *uuid, const char *id, gpointer data,
				  WrapTarget *out, GError **error);

typedef struct {
	GPtrArray *argv;    /* char *, NULL-terminated; [0] = the real QEMU */
	gboolean rewritten; /* FALSE: passed through unchanged (probes etc.) */
	GPtrArray *files;   /* mem-path of every rewritten backend */
} WrapResult;

/*
 * args: QEMU's arguments without argv[0].  Every other argument, including
 * thread-context objects, stays as it was and in order.  Legacy -mem-path and
 * -numa node,mem= are refused.
 */
gboolean wrap_rewrite(const char *qemu_binary, int nargs, char *const *args,
		      WrapResolveFn resolve, gpointer data, WrapResult *out, GError **error);
/*
 * A domain that dmem-liveupdate carried over a host kexec (the mark next
 * to its first file) and that libvirt restores (-incoming): QEMU must not
 * expect the shared RAM in the stream, it is in the files already.  QEMU
 * 7.2 has no command-line switch for that (x-ignore-shared is a migration
 * capability only), so the wrapper gives QEMU a second QMP monitor on one
 * end of a socket pair (wrap_add_monitor) and sets the capability through
 * the other before libvirt's monitor is even connected.
 */
#define WRAP_CARRY_MONITOR "dmemfs-carry"
gboolean wrap_carry_incoming(const WrapResult *r, int nargs, char *const *args);

/*
 * QEMU maps a domain's dmemfs files only from inside that domain's own
 * AppArmor profile, enforced (dmemfs-host.h, DmemConfinement).  @label: the
 * wrapper's /proc/self/attr/current, or NULL when it cannot be read.  TRUE
 * when @r rewrote nothing (probes, domains without dmem).
 */
gboolean wrap_check_confinement(const WrapResult *r, const char *label, GError **error);
void wrap_add_monitor(WrapResult *r, int fd);
void wrap_result_clear(WrapResult *r);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(WrapResult, wrap_result_clear)

/*
 * The configured mounts: the first <mount>/libvirt-<uuid>/<id> that exists.  A
 * domain's backends may sit in mounts of different page sizes.
 */
gboolean wrap_resolve_config(const char *uuid, const char *id, gpointer cfg, WrapTarget *out,
			     GError **error);

#endif
