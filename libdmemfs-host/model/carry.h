/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The state of a host kernel update (carry.c): which domains
 * dmem-liveupdate carries over the kexec and what they need to come back.
 * It owns the carried marks of domaindir.h.
 */
#ifndef DMEMFS_CARRY_H
#define DMEMFS_CARRY_H

#include "domaindir.h"

#define DMEM_CARRY_VERSION 1
#define DMEM_CARRY_FILE "liveupdate.state"
typedef struct DmemCarry DmemCarry;
/* cfg->state_dir/DMEM_CARRY_FILE; none is an empty state; a bad one, an error */
DmemCarry *dmem_carry_load(const DmemConfig *cfg, GError **error);
void dmem_carry_free(DmemCarry *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DmemCarry, dmem_carry_free)
const char *dmem_carry_path(const DmemCarry *c);
const char *dmem_carry_dir(const DmemCarry *c);
/* the only place a domain's save image may be: <state dir>/<uuid>.save */
char *dmem_carry_image(const DmemCarry *c, const char *uuid);
/* the UUIDs it lists, char * */
GPtrArray *dmem_carry_domains(const DmemCarry *c);
gboolean dmem_carry_has(const DmemCarry *c, const char *uuid);
/* a key of the domain @uuid, or of the update itself when @uuid is NULL */
void dmem_carry_set(DmemCarry *c, const char *uuid, const char *key, const char *value);
char *dmem_carry_get(const DmemCarry *c, const char *uuid, const char *key);
void dmem_carry_remove(DmemCarry *c, const char *uuid);
/* a persisted mount: its table address and source */
void dmem_carry_set_mount(DmemCarry *c, const char *mount, const char *addr, const char *source);
gboolean dmem_carry_mount(const DmemCarry *c, const char *mount, char **source);
/* write it (0600, atomically); a state that lists no domain is removed */
gboolean dmem_carry_save(const DmemCarry *c, GError **error);
/* whether the state on disk lists @uuid: 1, 0, or -1 when it cannot be read */
int dmem_carry_lists(const DmemConfig *cfg, const char *uuid);
/* the QMP command that turns QEMU's x-ignore-shared capability on or off */
char *dmem_qmp_ignore_shared(gboolean on);

#endif
