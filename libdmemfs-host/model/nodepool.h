/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libdmemfs-host, model layer: the dmem-node<N> storage pools.
 *
 * libvirt has no notion of dmem.  A host shows its pool to libvirt clients
 * (dmem-capacity --connect) as one dir storage pool per NUMA node, named
 * dmem-node<N>, whose target is a dmemfs instance mounted with nodes=N:
 * its statfs is node N's pool, and it holds no files.  dmemfs-host-setup
 * makes them; dmem-capacity reads them.  This header is that contract.
 * (A libvirt client with write access could create a volume there, and so
 * take dmem; such a client is root's equal anyway.)
 */
#ifndef DMEM_NODEPOOL_H
#define DMEM_NODEPOOL_H

#include "dmemfs-host.h"

#define DMEM_NODEPOOL_PREFIX "dmem-node"
/* where the nodes=N instances are mounted: DMEM_NODEPOOL_DIR/node<N> */
#define DMEM_NODEPOOL_DIR "/run/dmemfs-stats"
/* their dpage size: the unit of the figures libvirt reports */
#define DMEM_NODEPOOL_PAGESIZE "2M"

/* "dmem-node<N>" */
char *dmem_nodepool_name(guint node);
/* node of a pool name in canonical form ("dmem-node7", not "dmem-node07"); FALSE otherwise */
gboolean dmem_nodepool_parse(const char *name, guint *node);
/* the mount point of node's instance under dir (DMEM_NODEPOOL_DIR) */
char *dmem_nodepool_target(const char *dir, guint node);
/* the mount options of node's instance */
char *dmem_nodepool_mount_options(guint node);
/* the libvirt storage pool XML (type dir) of node, target under dir */
char *dmem_nodepool_xml(const char *dir, guint node);
/* whether pool XML (virStoragePoolGetXMLDesc) is a dir pool with node's target under dir */
gboolean dmem_nodepool_xml_matches(const char *xml, const char *dir, guint node);

#endif
