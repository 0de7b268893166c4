/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What libvirt's virt-aa-helper granted a domain's QEMU, read back from the
 * profile it wrote (/etc/apparmor.d/libvirt/libvirt-<uuid>.files), against
 * the dmemfs mounts: no rule of a domain may reach a guest's memory.
 */
#ifndef DMEMFS_AAPROFILE_H
#define DMEMFS_AAPROFILE_H

#include "dmemfs-host.h"

#define DMEM_AA_PROFILE_DIR "/etc/apparmor.d/libvirt"
/* where the usual layout mounts dmemfs, one directory per page size */
#define DMEM_AA_RUN_DIR "/run/dmemfs"

/*
 * Every path rule of @rules (the text of a .files include) against every
 * directory of @mounts: FALSE, naming the rule, when one could match the
 * mount or anything under it.  Globs (*, **, ?, [...], {a,b}) count for
 * all they could match; a rule with a variable (@{...}), a "." or ".."
 * component or a character libvirt never writes counts as matching.
 * Deny rules grant nothing and are skipped, and so is libvirt's own
 * directory for the domain under a memory_backing_dir on dmemfs
 * (<mount>/libvirt/qemu/<one literal component>/...).
 */
gboolean dmem_aa_rules_avoid(const char *rules, char *const *mounts, GError **error);
/*
 * The deny rules that keep a domain's QEMU out of every other guest's
 * memory, whatever its .files grants (libvirt adds there any path a
 * hot-plugged device names, another domain's memory file included, and a
 * deny rule beats an allow): under each of @mounts, everything but
 * <mount>/libvirt-<@uuid>/ and libvirt's own directory for the domain's
 * hot-added memory, <mount>/libvirt/qemu/<@shortname>/ (NULL: none).
 * Mounts directly under /run/dmemfs share one block, for every directory
 * there (a mount added later is covered too).
 * NULL, with @error set, for a mount path that is not plain ([A-Za-z0-9._/-]).
 */
char *dmem_aa_deny_rules(char *const *mounts, const char *uuid, const char *shortname,
			 GError **error);
/*
 * Domain @uuid's main profile, as virt-aa-helper -c makes it from
 * libvirt's TEMPLATE.qemu (@template), with @rules before its end.
 */
char *dmem_aa_main_profile(const char *template, const char *uuid, const char *rules,
			   GError **error);
/*
 * libvirt's short name of a domain (virDomainDefGetShortName: "<id>-" and
 * the first 20 characters of the name), which names its directory under a
 * memory_backing_dir; NULL when the name is not printable ASCII.
 */
char *dmem_aa_short_name(long long id, const char *name);

/* the dmemfs mounts of /proc/self/mounts and the configured mount points */
GPtrArray *dmem_aa_dmemfs_dirs(const DmemConfig *cfg);

#endif
