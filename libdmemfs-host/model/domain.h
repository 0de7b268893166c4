/* SPDX-License-Identifier: GPL-2.0-or-later */
/* prepare / release / reconnect, testable without libvirt or a kernel. */
#ifndef DMEMFS_DOMAIN_H
#define DMEMFS_DOMAIN_H

#include "carry.h"
#include "plan.h"

typedef struct {
	const DmemConfig *cfg;
	const DmemfsOps *ops;
	uid_t uid; /* owner of the files (the qemu user) */
	gid_t gid;
} DomainEnv;

/* admission control, then <mount>/libvirt-<uuid>/<id> for every backend; all or nothing */
gboolean domain_prepare(const DomainEnv *env, const DomainPlan *plan, GError **error);
/* dmem-liveupdate carries the domain over a kexec (DMEM_CARRIED_MARK) */
gboolean domain_carried(const DomainEnv *env, const char *uuid);
/* remove <mount>/libvirt-<uuid> from every configured mount; idempotent */
gboolean domain_release(const DomainEnv *env, const char *uuid, GError **error);
/*
 * Every 0.35 <mount>/<uuid> on every configured mount to libvirt-<uuid>
 * (dmemfs-hook --adopt, from the package's postinst before it recompiles
 * running guests' profiles); FALSE if one could not be moved.
 */
gboolean domain_adopt_all(const DomainEnv *env, GError **error);
/*
 * The rules libvirt's virt-aa-helper wrote for domain @uuid reach no
 * dmemfs mount (aaprofile.h): any domain, at start begin, where domains
 * are kept apart by AppArmor.  A domain with no such profile is refused:
 * its QEMU would be the unconfined qemu user.
 */
gboolean domain_profile_avoids_dmem(const DmemConfig *cfg, const char *uuid, GError **error);
/*
 * Hot-plug runs no hook: virt-aa-helper adds any path a device names to
 * the domain's .files, another guest's memory file included.  So the hook
 * writes the domain's main profile itself, where libvirt would create it
 * from TEMPLATE.qemu (libvirt then only reloads it, at start and at every
 * hot-plug), with deny rules for every dmemfs path but the domain's own
 * (aaprofile.h).  Any domain, at prepare and reconnect, where domains are
 * kept apart by AppArmor.  domain_profile_denies_others(): the file is
 * what prepare wrote, at start begin, before QEMU runs.
 */
gboolean domain_write_profile(const DmemConfig *cfg, const DomainPlan *plan, GError **error);
gboolean domain_profile_denies_others(const DmemConfig *cfg, const DomainPlan *plan,
				      GError **error);
/*
 * No path the domain's XML names is on a dmemfs mount, as the kernel
 * resolves it: before libvirt itself opens, creates or labels it as root
 * (a serial file is opened for QEMU) and before virt-aa-helper writes it
 * into the profile.  Any domain, at prepare; domain_profile_avoids_dmem()
 * then checks what virt-aa-helper made of every path.
 */
gboolean domain_paths_off_dmemfs(const DomainPlan *plan, GError **error);
/* every planned file is present and large enough */
gboolean domain_reconnect(const DomainEnv *env, const DomainPlan *plan, GError **error);


/*
 * One libvirt event each, with the carried decision inside: a domain
 * dmem-liveupdate carries keeps its files at release, and at prepare they
 * are checked and reused as they are (the guest's memory is in them).
 */
gboolean domain_on_prepare(const DomainEnv *env, const DomainPlan *plan, GError **error);
gboolean domain_on_release(const DomainEnv *env, const char *uuid, GError **error);

#endif
