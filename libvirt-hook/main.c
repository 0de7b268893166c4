// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmemfs-hook: libvirt qemu hook (/etc/libvirt/hooks/qemu.d/dmemfs).
 *
 *   dmemfs-hook <domain> <op> <subop> <extra>     domain XML on stdin
 *   dmemfs-hook --plan [--pagesize 4K|2M|1G] [--check]
 *   dmemfs-hook --adopt
 *
 * Exit 0 on success and for everything we do not handle; 1 with one stderr
 * line on failure, 2 for bad usage.  Never writes to stdout in hook mode
 * (migrate/restore treat hook output as a replacement XML).
 *
 * This file parses the command line, reads the XML and dispatches: the
 * work of each libvirt event is in hook.c.
 */
#include "dmem-xml.h"
#include "hook.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define USAGE "usage: dmemfs-hook DOMAIN OP SUBOP EXTRA < domain.xml, dmemfs-hook --plan " \
	      "[--pagesize 4K|2M|1G] [--check] < domain.xml, or dmemfs-hook --adopt"

static DomainPlan *read_plan(const PlanOptions *opts, GError **error)
{
	g_autofree char *xml = NULL;
	gsize len;

	if (!dmem_read_all(STDIN_FILENO, DMEM_XML_MAX, &xml, &len, error))
		return NULL;
	return plan_from_xml(xml, len, opts, error);
}

/* libvirt's call: the event's function, or exit 0 with stdin unread */
static int run_event(const char *domain, const char *op, const char *sub)
{
	const HookEvent *ev = hook_event_find(op, sub);
	const PlanOptions opts = { .uuid_only = ev && ev->uuid_only };
	HookCtx ctx = { .domain = domain, .sub = sub };
	g_autoptr(GError) e = NULL;
	int rc = 0;

	if (!ev)
		return 0;
	ctx.plan = read_plan(&opts, &e);
	if (!ctx.plan)
		return hook_fail(NULL, e->message);
	if (!ev->fn(&ctx, &e))
		rc = hook_fail(ctx.plan->uuid, e->message);
	hook_ctx_clear(&ctx);
	return rc;
}

/* --plan [--pagesize P] [--check] < domain.xml, or --adopt */
static int run_cli(int argc, char **argv)
{
	PlanOptions opts = { .force = TRUE };
	gboolean plan_mode = FALSE, check = FALSE, adopt = FALSE;
	g_autofree char *pagesize = NULL;
	const GOptionEntry entries[] = {
		{ "plan", 0, 0, G_OPTION_ARG_NONE, &plan_mode, "print the plan of the domain XML "
		  "on stdin as JSON", NULL },
		{ "pagesize", 0, 0, G_OPTION_ARG_STRING, &pagesize, "dpage size, when the metadata "
		  "has none", "4K|2M|1G" },
		{ "check", 0, 0, G_OPTION_ARG_NONE, &check, "and whether it fits in the free dmem now",
		  NULL },
		{ "adopt", 0, 0, G_OPTION_ARG_NONE, &adopt, "rename every domain directory of 0.35 "
		  "to libvirt-<uuid>", NULL },
		G_OPTION_ENTRY_NULL
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("< domain.xml");
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) plan = NULL;

	g_option_context_add_main_entries(ctx, entries, NULL);
	g_option_context_set_summary(ctx, "As a libvirt hook: dmemfs-hook DOMAIN OP SUBOP EXTRA "
				     "< domain.xml");
	if (!g_option_context_parse(ctx, &argc, &argv, &e))
		return dmem_cli_fail(HOOK_PROG, 2, "%s (%s)", e->message, USAGE);
	if (argc > 1)
		return dmem_cli_fail(HOOK_PROG, 2, "unexpected argument '%s' (%s)", argv[1], USAGE);
	if (adopt && (plan_mode || pagesize || check))
		return dmem_cli_fail(HOOK_PROG, 2, "--adopt takes no other option (%s)", USAGE);
	if (adopt)
		return hook_adopt(&e) ? 0 : hook_fail(NULL, e->message);
	if (!plan_mode)
		return dmem_cli_fail(HOOK_PROG, 2, "%s", USAGE);
	if (pagesize && !dmem_pagesize_parse(pagesize, &opts.pagesize))
		return dmem_cli_fail(HOOK_PROG, 2, "--pagesize must be 4K, 2M or 1G");
	plan = read_plan(&opts, &e);
	if (!plan || !hook_plan(plan, check, &e))
		return hook_fail(NULL, e->message);
	return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	/*
	 * libvirt calls with four words, the second an operation: a domain
	 * named "--plan" is still hooked; --plan's own words are options.
	 */
	if (argc == 5 && !(!strcmp(argv[1], "--plan") && g_str_has_prefix(argv[2], "--"))) {
		umask(077);
		return run_event(argv[1], argv[2], argv[3]);
	}
	return run_cli(argc, argv);
}
