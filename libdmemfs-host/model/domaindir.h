/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A domain's directory on a dmemfs mount: <mount>/libvirt-<uuid> holds one
 * file per memory backend, <mount>/libvirt-<uuid>/<id>, and the carried mark.
 * The one place that builds, parses, opens and removes that layout.
 *
 * The directory carries the name of libvirt's AppArmor profile for the
 * domain, libvirt-<uuid>.  Every QEMU runs as the same user, so file modes
 * cannot keep one tenant's QEMU out of another's memory; the profile does.
 * The AppArmor snippet (qemu-memdev-wrapper/apparmor-dmemfs-host) grants a
 * QEMU only the files in <mount>/@{profile_name}, its own directory.
 */
#ifndef DMEMFS_DOMAINDIR_H
#define DMEMFS_DOMAINDIR_H

#include "dmemfs-host.h"

#define DMEM_DOMAIN_DIR_PREFIX "libvirt-"
/* the directory's name on a mount, libvirt-<uuid> */
char *dmem_domain_dirname(const char *uuid);
/* <mount>/libvirt-<uuid>/<id>, or <mount>/libvirt-<uuid> when @id is NULL */
char *dmem_domain_path(const char *mount, const char *uuid, const char *id);
/* a backend file's path back to its mount and domain; FALSE if it is not one */
gboolean dmem_domain_path_split(const char *path, char **mount, char **uuid);
/*
 * The domain's directory under @mountfd, never through a symlink, or -1.
 * @flags: O_RDONLY to list it, O_PATH to look a name up in it, which the
 * wrapper (the qemu user, who may only search the directory) can.
 */
int dmem_domain_dir_open(int mountfd, const char *uuid, int flags);
/* a configured mount point (O_PATH), to look domains up in; -1 when it is not there */
int dmem_mount_open(const char *mount);
/* the domain's directory under @mountfd, 0710 root and the qemu group @gid: open, or -1 */
int dmem_domain_dir_create(int mountfd, const char *uuid, gid_t gid, GError **error);
/*
 * Up to 0.35 the directory was <mount>/<uuid>.  Rename such a directory of
 * this domain (root's, not a symlink) to its new name, where that is free:
 * the same file system, so a running QEMU keeps its open files and maps.
 * Without it, release would leak its dpages and reconnect miss its files.
 */
gboolean dmem_domain_dir_adopt(int mountfd, const char *uuid, GError **error);
/* Remove the domain's directory and the regular files in it; TRUE if absent. */
gboolean dmem_remove_domain_dir(int mountfd, const char *uuid, GError **error);

/*
 * dmem-liveupdate marks a domain it carries over a host kexec with this
 * empty file in the domain's directory of each mount: the hook then keeps
 * the files at release and reuses them at prepare, and the wrapper has
 * QEMU skip the shared RAM on the incoming side.  A backend id never
 * starts with a dot, so no backend file has this name.
 */
#define DMEM_CARRIED_MARK ".carried"
/* the mark is in the domain's directory under @mountfd (what the wrapper, as the qemu user, can see) */
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
