/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dmemfs-hook's work, one function per libvirt event it handles, found
 * by (operation, sub-operation) in one table.  libvirt runs the hook as
 *
 *	dmemfs-hook DOMAIN OPERATION SUB-OPERATION EXTRA < domain.xml
 *
 * main.c parses that (or --plan, --adopt), reads the XML and dispatches.
 */
#ifndef DMEMFS_HOOK_H
#define DMEMFS_HOOK_H

#include "domain.h"

#define HOOK_PROG "dmemfs-hook"

/* what an event function works on */
typedef struct {
	const char *domain;   /* libvirt's first word, the domain's name */
	const char *sub;      /* the sub-operation */
	DomainPlan *plan;     /* of the domain XML on stdin */
	DmemConfig *cfg;      /* hook_ctx_load(): NULL until then */
	DomainEnv env;        /* on cfg, the files' owner: the qemu user */
} HookCtx;

/*
 * TRUE: exit 0 (nothing to do counts); FALSE: exit 1 with @error's
 * message as the one line, prefixed with the domain's UUID (hook_fail()).
 */
typedef gboolean (*HookFn)(HookCtx *ctx, GError **error);

typedef struct {
	const char *op, *sub;
	gboolean uuid_only;   /* libvirt's XML has no id then: keyed by UUID */
	HookFn fn;
} HookEvent;

/* The event (@op, @sub) is, or NULL: not one of ours, exit 0, stdin unread. */
const HookEvent *hook_event_find(const char *op, const char *sub);
/* the configuration and the qemu user, once; FALSE with @error set */
gboolean hook_ctx_load(HookCtx *ctx, GError **error);
/* frees its plan and configuration */
void hook_ctx_clear(HookCtx *ctx);

/*
 * The one line of a failure: "dmemfs-hook: domain <uuid>: msg" (no second
 * "domain <uuid>" where @msg has one), or without it for a NULL @uuid;
 * returns 1, the exit status.
 */
int hook_fail(const char *uuid, const char *msg);

/* --plan: @plan as JSON on stdout; with @check admitted against the free dmem now first */
gboolean hook_plan(const DomainPlan *plan, gboolean check, GError **error);
/* --adopt: every 0.35 domain directory to its libvirt-<uuid> name */
gboolean hook_adopt(GError **error);

#endif
