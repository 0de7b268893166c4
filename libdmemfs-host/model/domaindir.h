/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A domain's directory on a dmemfs mount: <mount>/<uuid> holds one file per
 * memory backend, <mount>/<uuid>/<id>, and the carried mark.  The one place
 * that builds, parses, opens and removes that layout.
 */
#ifndef DMEMFS_DOMAINDIR_H
#define DMEMFS_DOMAINDIR_H

#include "dmemfs-host.h"

/* <mount>/<uuid>/<id>, or <mount>/<uuid> when @id is NULL */
char *dmem_domain_path(const char *mount, const char *uuid, const char *id);
/* a backend file's path back to its mount and domain; FALSE if it is not one */
gboolean dmem_domain_path_split(const char *path, char **mount, char **uuid);
/*
 * The domain's directory under @mountfd, never through a symlink, or -1.
 * @flags: O_RDONLY to list it, O_PATH to look a name up in it, which the
 * wrapper (the qemu user, who may only search the directory) can.
 */
int dmem_domain_dir_open(int mountfd, const char *uuid, int flags);
/* a configured mount point, to look domains up in; -1 when it is not there */
int dmem_mount_open(const char *mount);
/* Remove mountfd/uuid and the regular files in it; TRUE if absent. */
gboolean dmem_remove_domain_dir(int mountfd, const char *uuid, GError **error);

/*
 * dmem-liveupdate marks a domain it carries over a host kexec with this
 * empty file in the domain's directory of each mount: the hook then keeps
 * the files at release and reuses them at prepare, and the wrapper has
 * QEMU skip the shared RAM on the incoming side.  A backend id never
 * starts with a dot, so no backend file has this name.
 */
#define DMEM_CARRIED_MARK ".carried"
/* the mark is in mountfd/uuid (what the wrapper, as the qemu user, can see) */
gboolean dmem_domain_marked(int mountfd, const char *uuid);
/*
 * For the hook, as root: the mark is there and the carry state lists the
 * domain.  A mark the state does not list is stale and removed; a state
 * that cannot be read keeps a marked domain carried (its files stay, the
 * guest's memory is not thrown away over a broken state file).
 */
gboolean dmem_domain_carried(const DmemConfig *cfg, int mountfd, const char *uuid);

/* put the mark in the domain's directory of every configured mount (@on), or take it */
gboolean dmem_domain_set_mark(const DmemConfig *cfg, const char *uuid, gboolean on,
			      GError **error);

#endif
