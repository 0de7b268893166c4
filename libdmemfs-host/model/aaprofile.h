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
/* the dmemfs mounts of /proc/self/mounts and the configured mount points */
GPtrArray *dmem_aa_dmemfs_dirs(const DmemConfig *cfg);

#endif
