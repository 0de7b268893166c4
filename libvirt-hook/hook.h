/* SPDX-License-Identifier: GPL-2.0-or-later */
/* prepare / release / reconnect, testable without libvirt or a kernel. */
#ifndef DMEMFS_HOOK_H
#define DMEMFS_HOOK_H

#include "plan.h"

typedef struct {
	const DmemConfig *cfg;
	const DmemfsOps *ops;
	uid_t uid; /* owner of the files (the qemu user) */
	gid_t gid;
} HookEnv;

/* admission control, then <mount>/<uuid>/<id> for every backend; all or nothing */
gboolean hook_prepare(const HookEnv *env, const DomainPlan *plan, GError **error);
/* dmem-liveupdate carries the domain over a kexec (DMEM_CARRIED_MARK) */
gboolean hook_carried(const HookEnv *env, const char *uuid);
/* remove <mount>/<uuid> from every configured mount; idempotent */
gboolean hook_release(const HookEnv *env, const char *uuid, GError **error);
/* every planned file is present and large enough */
gboolean hook_reconnect(const HookEnv *env, const DomainPlan *plan, GError **error);

#endif
