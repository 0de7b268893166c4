/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Domain XML (libvirt 9.0) -> the dmemfs files a domain needs. */
#ifndef DMEMFS_PLAN_H
#define DMEMFS_PLAN_H

#include "dmemfs-host.h"

typedef struct {
	char *id;              /* QEMU backend id: ram-nodeN, pc.ram, memdimmN */
	int cell;              /* guest NUMA cell, -1 for none */
	guint64 libvirt_size;  /* bytes libvirt 9.0 passes as size= */
	guint64 pagesize;      /* dpage size: the domain's, or its own <hugepages> or
				* <source><pagesize> */
	guint64 size;          /* file size: libvirt_size rounded up to the page size */
	gboolean has_nodes;    /* a numatune nodeset applies to this backend */
	DmemPolicy policy;     /* where the hook binds the file (restrictive -> bind) */
	gboolean libvirt_passes_policy; /* libvirt emits host-nodes/policy (not restrictive) */
	gboolean virtio_mem;   /* a virtio-mem device: its file stays sparse, QEMU plugs blocks */
	guint64 block;         /* virtio-mem block size, bytes */
	guint64 admit;         /* bytes admission counts: size, or a virtio-mem's <requested>
				* rounded up to the page size */
} PlanBackend;

typedef struct {
	char *uuid;            /* canonical, lowercase */
	char *name;
	gint64 domid;          /* <domain id=>, -1 when the XML has none */
	gboolean opted_in;     /* has our <metadata> element */
	gboolean unconfined;   /* <seclabel type='none'/> or a static AppArmor label: its
				* QEMU does not get the profile libvirt makes for it */
	guint64 pagesize;      /* 0 until known; backends may have their own */
	char *mount;           /* metadata mount=, or NULL */
	guint hostdevs;        /* <hostdev>s and <interface type='hostdev'>s: VFIO, whose DMA
				* maps pin the memory */
	GPtrArray *backends;   /* PlanBackend */
	GPtrArray *paths;      /* every absolute path the XML names outside <metadata>
				* (disks, serial files, kernel...): what virt-aa-helper may
				* put in the domain's AppArmor profile */
} DomainPlan;

typedef struct {
	gboolean force;        /* --plan: treat as opted in */
	guint64 pagesize;      /* --pagesize, 0 = from the metadata */
	gboolean uuid_only;    /* release: uuid and opt-in only */
	gboolean shape_only;   /* dmem-capacity: the guest's shape only, whatever backs it:
				* no <uuid> needed, hugepages sized as any memory */
} PlanOptions;


DomainPlan *plan_from_xml(const char *xml, gsize len, const PlanOptions *opts,
			  GError **error);
void plan_free(DomainPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DomainPlan, plan_free)

/* {"uuid": ..., "pagesize": ..., "backends": [...]} */
char *plan_to_json(const DomainPlan *plan);

/* Admission control: does every backend fit in the free dmem of its nodes? */
gboolean plan_admit(const DomainPlan *plan, const GArray *stats, GError **error);
/* "domain U fits in the dmem pool; free: node0=N (Z zeroed) ..." */
char *plan_pool_summary(const DomainPlan *plan, const GArray *stats);

/* libvirt-style size: value + unit -> KiB as virDomainParseMemory() does */
gboolean plan_parse_kib(const char *value, const char *unit, guint64 *kib, GError **error);

#endif
