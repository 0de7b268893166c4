/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dmem-liveupdate's planning core: text in, the kexec plan out, with no
 * file, mount or libvirt access, so that golden files can test it
 * (liveupdate/tests/golden/).
 */
#ifndef DMEM_KEXEC_PLAN_H
#define DMEM_KEXEC_PLAN_H

#include "dmemfs-host.h"

typedef struct {
	const char *ranges;       /* /sys/kernel/mm/dmem/ranges: "NODE BASE SIZE" in hex */
	const char *cmdline;      /* /proc/cmdline of this boot */
	const char *tables;       /* /sys/fs/dmemfs/tables: "ADDR:KEY" lines (root's) */
	const char *const *addrs; /* the persisted= address of each mount, NULL-ended */
	const char *append;       /* --append, or NULL */
} KexecInput;

typedef struct {
	char *cmdline;   /* the next kernel's: this one's, with fixed dmem= and dmemfs_recover= */
	guint64 mem_max; /* kexec --mem-max: the next kernel lands below every dmem range */
} KexecPlan;

/* x86's COMMAND_LINE_SIZE, the NUL included */
#define KEXEC_CMDLINE_MAX 2048u
/* the lowest dmem range must leave this much below it for kexec's segments */
#define KEXEC_ROOM_MIN (256u << 20)

/*
 * Everything kexec_plan() refuses, checked before anything is touched:
 * @in without tables (its tables and addrs are ignored), with @mounts
 * persisted mounts whose table words are as long as the kernel writes them.
 */
gboolean kexec_plan_check(const KexecInput *in, guint mounts, GError **error);
gboolean kexec_plan(const KexecInput *in, KexecPlan *out, GError **error);
void kexec_plan_clear(KexecPlan *p);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(KexecPlan, kexec_plan_clear)

#endif
