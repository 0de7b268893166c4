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

/* the ranges alone, checked before anything is touched */
gboolean kexec_ranges_check(const char *ranges, GError **error);
gboolean kexec_plan(const KexecInput *in, KexecPlan *out, GError **error);
void kexec_plan_clear(KexecPlan *p);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(KexecPlan, kexec_plan_clear)

#endif
