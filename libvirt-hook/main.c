// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmemfs-hook: libvirt qemu hook (/etc/libvirt/hooks/qemu.d/dmemfs).
 *
 *   dmemfs-hook <domain> <op> <subop> <extra>     domain XML on stdin
 *   dmemfs-hook --plan [--pagesize 4K|2M|1G] [--check]
 *
 * Exit 0 on success and for everything we do not handle; 1 with one stderr
 * line on failure.  Never writes to stdout in hook mode (migrate/restore
 * treat hook output as a replacement XML).
 */
#include "dmem-xml.h"
#include "domain.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "dmemfs-hook"

static int die(const char *uuid, const char *msg)
{
	/* a message that already starts with "domain <uuid>" gets no second prefix */
	if (uuid && !(g_str_has_prefix(msg, "domain ") && !strncmp(msg + 7, uuid, strlen(uuid))))
		return dmem_cli_fail(PROG, 1, "domain %s: %s", uuid, msg);
	return dmem_cli_fail(PROG, 1, "%s", msg);
}

static DomainPlan *read_plan(const PlanOptions *opts, GError **error)
{
	g_autofree char *xml = NULL;
	gsize len;

	if (!dmem_read_all(STDIN_FILENO, DMEM_XML_MAX, &xml, &len, error))
		return NULL;
	return plan_from_xml(xml, len, opts, error);
}

static int cmd_plan(int argc, char **argv)
{
	PlanOptions opts = { .force = TRUE };
	gboolean check = FALSE, plan_mode = FALSE;
	g_autofree char *pagesize = NULL;
	const GOptionEntry entries[] = {
		{ "plan", 0, 0, G_OPTION_ARG_NONE, &plan_mode, "print the plan of the domain XML "
		  "on stdin as JSON", NULL },
		{ "pagesize", 0, 0, G_OPTION_ARG_STRING, &pagesize, "dpage size, when the metadata "
		  "has none", "4K|2M|1G" },
		{ "check", 0, 0, G_OPTION_ARG_NONE, &check, "and whether it fits in the free dmem now",
		  NULL },
		G_OPTION_ENTRY_NULL
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("< domain.xml");
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) plan = NULL;
	g_autofree char *json = NULL;

	g_option_context_add_main_entries(ctx, entries, NULL);
	g_option_context_set_summary(ctx, "As a libvirt hook: dmemfs-hook DOMAIN OP SUBOP EXTRA "
				     "< domain.xml");
	if (!g_option_context_parse(ctx, &argc, &argv, &e) || argc > 1) {
		return dmem_cli_fail(PROG, 2, "%s (usage: dmemfs-hook --plan [--pagesize 4K|2M|1G] "
				     "[--check] < domain.xml)", e ? e->message : "unexpected argument");
	}
	if (pagesize && !dmem_pagesize_parse(pagesize, &opts.pagesize))
		return dmem_cli_fail(PROG, 2, "--pagesize must be 4K, 2M or 1G");
	plan = read_plan(&opts, &e);
	if (!plan)
		return die(NULL, e->message);
	if (check) {
		g_autoptr(DmemConfig) cfg = dmem_config_load(&e);
		g_autoptr(GArray) stats = cfg ? dmem_stats_read(cfg->sysfs_root, &e) : NULL;

		g_autofree char *summary = NULL;

		if (!stats || !plan_admit(plan, stats, &e))
			return die(NULL, e->message);
		summary = plan_pool_summary(plan, stats);
		fprintf(stderr, "dmemfs-hook: %s\n", summary);
	}
	json = plan_to_json(plan);
	printf("%s\n", json);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int hook_env(DomainEnv *env, DmemConfig **cfg, GError **error)
{
	*cfg = dmem_config_load(error);
	if (!*cfg)
		return FALSE;
	env->cfg = *cfg;
	env->ops = &dmemfs_real_ops;
	return dmem_config_qemu_ids(*cfg, &env->uid, &env->gid, error);
}

int main(int argc, char **argv)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) plan = NULL;
	g_autoptr(DmemConfig) cfg = NULL;
	PlanOptions opts = { 0 };
	DomainEnv env = { 0 };
	const char *op, *sub;
	gboolean prepare, release, reconnect, start;

	/*
	 * libvirt calls with four words, the second an operation: a domain
	 * named "--plan" is still hooked; --plan's own words are options.
	 */
	if (argc >= 2 && !strcmp(argv[1], "--plan") && (argc != 5 || g_str_has_prefix(argv[2], "--")))
		return cmd_plan(argc, argv);
	if (argc == 2 && !strcmp(argv[1], "--adopt")) {
		/* the upgrade from 0.35's <mount>/<uuid> (domain.h) */
		if (!hook_env(&env, &cfg, &e) || !domain_adopt_all(&env, &e))
			return die(NULL, e->message);
		return 0;
	}
	if (argc != 5) {
		fprintf(stderr, "usage: dmemfs-hook DOMAIN OP SUBOP EXTRA < domain.xml, "
				"dmemfs-hook --plan [--pagesize 4K|2M|1G] [--check] < domain.xml, "
				"or dmemfs-hook --adopt\n");
		return 2;
	}
	umask(077);
	op = argv[2];
	sub = argv[3];
	prepare = !strcmp(op, "prepare") && !strcmp(sub, "begin");
	release = !strcmp(op, "release") && !strcmp(sub, "end");
	reconnect = !strcmp(op, "reconnect") && !strcmp(sub, "begin");
	start = !strcmp(op, "start") && !strcmp(sub, "begin");
	if (!prepare && !release && !reconnect && !start)
		return 0;

	opts.uuid_only = release;
	plan = read_plan(&opts, &e);
	if (!plan)
		return die(NULL, e->message);
	if (release) {
		/* runs after a failed prepare too, XML without id: key by UUID only */
		if (!hook_env(&env, &cfg, &e))
			return plan->opted_in ? die(plan->uuid, e->message) : 0;
		if (!domain_on_release(&env, plan->uuid, &e))
			return die(plan->uuid, e->message);
		return 0;
	}
	/*
	 * Any domain's QEMU is the qemu user, which owns the dmem guests'
	 * memory files: one without its own AppArmor profile (none, or a
	 * static label: "unconfined", another domain's) could open them all.
	 */
	if (prepare && plan->unconfined) {
		if (!hook_env(&env, &cfg, &e))
			return plan->opted_in ? die(plan->uuid, e->message) : 0;
		if (cfg->confinement == DMEM_CONFINE_APPARMOR)
			return die(plan->uuid,
				   "its <seclabel> is type 'none' or a static AppArmor label: its QEMU "
				   "would run outside the profile libvirt makes for it, as the qemu "
				   "user that owns every dmem guest's memory; let libvirt label it "
				   "(dynamic), or set [qemu] confinement=none in dmemfs-host.conf");
	}
	/*
	 * Then what virt-aa-helper granted it, from every path of its XML and
	 * its disks' backing chains: nothing on dmemfs (start begin comes after
	 * the profile is written, before QEMU runs).
	 */
	if (start) {
		if (!hook_env(&env, &cfg, &e))
			return plan->opted_in ? die(plan->uuid, e->message) : 0;
		if (cfg->confinement == DMEM_CONFINE_APPARMOR &&
		    (!domain_profile_avoids_dmem(cfg, plan->uuid, &e) ||
		     !domain_profile_denies_others(cfg, plan, &e)))
			return die(plan->uuid, e->message);
		return 0;
	}
	/*
	 * Hot-plug runs no hook, and libvirt puts any path a device names into
	 * .files: the main profile, written here, denies every dmemfs path but
	 * the domain's own, before libvirt loads it (any domain).
	 */
	if (prepare || reconnect) {
		if (!cfg && !hook_env(&env, &cfg, &e))
			return plan->opted_in ? die(plan->uuid, e->message) : 0;
		if (cfg->confinement == DMEM_CONFINE_APPARMOR && !domain_write_profile(cfg, plan, &e)) {
			/* a non-zero exit at reconnect would kill the running QEMU */
			if (prepare)
				return die(plan->uuid, e->message);
			die(plan->uuid, e->message);
			g_clear_error(&e);
		}
	}
	/* and a disk or serial file on a dmemfs mount would name another
	 * guest's memory in this domain's profile */
	if (prepare && !domain_paths_off_dmemfs(plan, &e))
		return die(plan->uuid, e->message);
	if (!plan->opted_in)
		return 0;
	if (!cfg && !hook_env(&env, &cfg, &e))
		return die(plan->uuid, e->message);
	if (reconnect) {
		/* a non-zero exit would kill the running QEMU: report only */
		if (!domain_reconnect(&env, plan, &e))
			die(plan->uuid, e->message);
		return 0;
	}
	if (!domain_on_prepare(&env, plan, &e))
		return die(plan->uuid, e->message);
	return 0;
}
