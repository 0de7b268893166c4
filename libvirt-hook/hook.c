// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmemfs-hook's libvirt events (hook.h): what each one checks and does,
 * on the domain XML's plan and the host's configuration.
 */
#include "hook.h"

#include <stdio.h>
#include <string.h>

gboolean hook_ctx_load(HookCtx *ctx, GError **error)
{
	if (ctx->cfg)
		return TRUE;
	ctx->cfg = dmem_config_load(error);
	if (!ctx->cfg)
		return FALSE;
	ctx->env.cfg = ctx->cfg;
	ctx->env.ops = &dmemfs_real_ops;
	if (dmem_config_qemu_ids(ctx->cfg, &ctx->env.uid, &ctx->env.gid, error))
		return TRUE;
	/* not half loaded */
	g_clear_pointer(&ctx->cfg, dmem_config_free);
	ctx->env.cfg = NULL;
	return FALSE;
}

void hook_ctx_clear(HookCtx *ctx)
{
	g_clear_pointer(&ctx->cfg, dmem_config_free);
	ctx->env.cfg = NULL;
	g_clear_pointer(&ctx->plan, plan_free);
}

int hook_fail(const char *uuid, const char *msg)
{
	/* a message that already starts with "domain <uuid>" gets no second prefix */
	if (uuid && !(g_str_has_prefix(msg, "domain ") && !strncmp(msg + 7, uuid, strlen(uuid))))
		return dmem_cli_fail(HOOK_PROG, 1, "domain %s: %s", uuid, msg);
	return dmem_cli_fail(HOOK_PROG, 1, "%s", msg);
}

/*
 * What the hook cannot do for want of its configuration fails a domain
 * of ours; any other domain passes (TRUE, @error cleared).
 */
static gboolean ours_failed(const HookCtx *ctx, GError **error)
{
	if (ctx->plan->opted_in)
		return FALSE;
	g_clear_error(error);
	return TRUE;
}

static gboolean apparmor(const HookCtx *ctx)
{
	return ctx->cfg->confinement == DMEM_CONFINE_APPARMOR;
}

/*
 * prepare begin, any domain: its confinement, its main profile and the
 * paths its XML names; then a dmem domain's files are made (or a carried
 * domain's reused).
 */
static gboolean on_prepare(HookCtx *ctx, GError **error)
{
	const DomainPlan *plan = ctx->plan;

	if (!hook_ctx_load(ctx, error))
		return ours_failed(ctx, error);
	/*
	 * Any domain's QEMU is the qemu user, which owns the dmem guests'
	 * memory files: one without its own AppArmor profile (none, or a
	 * static label: "unconfined", another domain's) could open them all.
	 */
	if (plan->unconfined && apparmor(ctx))
		return dmem_fail(error, "its <seclabel> is type 'none' or a static AppArmor label: "
				 "its QEMU would run outside the profile libvirt makes for it, as "
				 "the qemu user that owns every dmem guest's memory; let libvirt "
				 "label it (dynamic), or set [qemu] confinement=none in "
				 "dmemfs-host.conf");
	/*
	 * Hot-plug runs no hook, and libvirt puts any path a device names into
	 * .files: the main profile, written here, denies every dmemfs path but
	 * the domain's own, before libvirt loads it (any domain).
	 */
	if (apparmor(ctx) && !domain_write_profile(ctx->cfg, plan, error))
		return FALSE;
	/* and a disk or serial file on a dmemfs mount would name another
	 * guest's memory in this domain's profile */
	if (!domain_paths_off_dmemfs(plan, error))
		return FALSE;
	if (!plan->opted_in)
		return TRUE;
	return domain_on_prepare(&ctx->env, plan, error);
}

/*
 * start begin, any domain: what virt-aa-helper granted it, from every
 * path of its XML and its disks' backing chains, reaches nothing on
 * dmemfs, and its main profile is the one prepare wrote (start begin
 * comes after the profile is written, before QEMU runs).
 */
static gboolean on_start(HookCtx *ctx, GError **error)
{
	if (!hook_ctx_load(ctx, error))
		return ours_failed(ctx, error);
	if (!apparmor(ctx))
		return TRUE;
	return domain_profile_avoids_dmem(ctx->cfg, ctx->plan->uuid, error) &&
	       domain_profile_denies_others(ctx->cfg, ctx->plan, error);
}

/*
 * reconnect begin (libvirtd restarted under a running domain): its main
 * profile again, and a dmem domain's files checked.  A non-zero exit
 * would kill the running QEMU: what fails is reported, and the hook
 * exits 0 (but for a configuration it cannot load).
 */
static gboolean on_reconnect(HookCtx *ctx, GError **error)
{
	g_autoptr(GError) e = NULL;

	if (!hook_ctx_load(ctx, error))
		return ours_failed(ctx, error);
	if (apparmor(ctx) && !domain_write_profile(ctx->cfg, ctx->plan, &e)) {
		hook_fail(ctx->plan->uuid, e->message);
		g_clear_error(&e);
	}
	if (!ctx->plan->opted_in)
		return TRUE;
	if (!domain_reconnect(&ctx->env, ctx->plan, &e))
		hook_fail(ctx->plan->uuid, e->message);
	return TRUE;
}

/*
 * release end: the domain's directory goes from every mount, unless a
 * host kernel update carries it.  It runs after a failed prepare too,
 * with an XML without id: keyed by the UUID only.
 */
static gboolean on_release(HookCtx *ctx, GError **error)
{
	if (!hook_ctx_load(ctx, error))
		return ours_failed(ctx, error);
	return domain_on_release(&ctx->env, ctx->plan->uuid, error);
}

/* every other event of libvirt's is no business of ours (dmemfs-hook(8)) */
static const HookEvent events[] = {
	{ "prepare", "begin", FALSE, on_prepare },
	{ "start", "begin", FALSE, on_start },
	{ "reconnect", "begin", FALSE, on_reconnect },
	{ "release", "end", TRUE, on_release },
};

const HookEvent *hook_event_find(const char *op, const char *sub)
{
	for (guint i = 0; i < G_N_ELEMENTS(events); i++)
		if (!strcmp(op, events[i].op) && !strcmp(sub, events[i].sub))
			return &events[i];
	return NULL;
}

gboolean hook_plan(const DomainPlan *plan, gboolean check, GError **error)
{
	g_autofree char *json = NULL;

	if (check) {
		g_autoptr(DmemConfig) cfg = dmem_config_load(error);
		g_autoptr(GArray) stats = cfg ? dmem_stats_read(cfg->sysfs_root, error) : NULL;
		g_autofree char *summary = NULL;

		if (!stats || !plan_admit(plan, stats, error))
			return FALSE;
		summary = plan_pool_summary(plan, stats);
		fprintf(stderr, HOOK_PROG ": %s\n", summary);
	}
	json = plan_to_json(plan);
	printf("%s\n", json);
	return TRUE;
}

gboolean hook_adopt(GError **error)
{
	HookCtx ctx = { 0 };
	gboolean ok = hook_ctx_load(&ctx, error) && domain_adopt_all(&ctx.env, error);

	hook_ctx_clear(&ctx);
	return ok;
}
