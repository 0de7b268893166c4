// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmem-liveupdate: update the host kernel under running dmem guests.
 *
 *   dmem-liveupdate [-c URI] [--kernel FILE] [--initrd FILE]
 *                   [--append ARGS] [--no-exec]
 *       every running domain is checked first; one that cannot be carried
 *       (no dmem memory, a host device) stops everything, with a line each.
 *       Then each domain is listed in the carry state (libdmemfs-host's
 *       carry.c, in [liveupdate] state_dir) and saved, all at once, without its RAM
 *       (QEMU's x-ignore-shared: the RAM stays in its dmemfs files, marked
 *       carried so that the hook keeps them), the mounts are persisted
 *       (mount -o remount,persist), and the kernel is loaded with this
 *       boot's command line, fixed dmem= ranges and dmemfs_recover=, below
 *       the lowest dmem range, and executed (kexec -e; --no-exec stops
 *       before).
 *   dmem-liveupdate --restore [-c URI]
 *       after that boot: mount the configured dmemfs mounts with recover,
 *       restore every domain the state lists (virsh restore: the hook
 *       reuses its files, the wrapper has QEMU skip the shared RAM), each
 *       leaving the state as it comes back; a rerun restores the rest.
 *   dmem-liveupdate --abort [-c URI]
 *       give up: release every domain the state lists (files, mark,
 *       image) unless it runs, discard the tables kept at boot.
 *
 * Exit status: 0, 1 when something failed or was refused (one line each on
 * stderr), 2 for bad arguments.
 */
#include "domain.h"
#include "kexec-plan.h"

#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <mntent.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define RANGES "/sys/kernel/mm/dmem/ranges"
#define TABLES "/sys/fs/dmemfs/tables"
#define KEPT "/sys/fs/dmemfs/kept"
/* the one QMP command for it: dmem_qmp_ignore_shared() */
static int ignore_shared(virDomainPtr dom, gboolean on)
{
	g_autofree char *cmd = dmem_qmp_ignore_shared(on);
	g_autofree char *reply = NULL;

	return virDomainQemuMonitorCommand(dom, cmd, &reply, 0);
}

static char *opt_uri, *opt_kernel, *opt_initrd, *opt_append;
static gboolean opt_restore, opt_abort, opt_no_exec;

static void say_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* one line each, whatever libvirt or a command said */
static void say_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dmem_cli_failv("dmem-liveupdate", 1, fmt, ap);
	va_end(ap);
}

/* libvirt prints every error on stderr by default: ours are one line each */
static void quiet(void *data, virErrorPtr err)
{
	(void)data;
	(void)err;
}

static const char *virt_error(void)
{
	const virError *e = virGetLastError();

	return e && e->message ? e->message : "libvirt error";
}

/*
 * One dmem-liveupdate at a time on a host: two updates, or a restore and
 * an abort, would each rewrite the state under the other.  The lock is
 * held until exit (a kexec ends it too).  It lives in /run, where only
 * root may create files (not /run/lock, 1777, where any user could take
 * the name first and block every host update), so nothing in the state
 * directory is touched before the checks pass.
 */
#define LOCK_PATH "/run/dmem-liveupdate.lock"
static gboolean lock_state(GError **error)
{
	int fd = open(LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != 0 || !S_ISREG(st.st_mode)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: %s", LOCK_PATH,
			    fd < 0 ? g_strerror(errno) : "not root's regular file");
		if (fd >= 0)
			close(fd);
		return FALSE;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "%s: another dmem-liveupdate is running", LOCK_PATH);
		close(fd);
		return FALSE;
	}
	return TRUE; /* fd stays open: the lock lives as long as we do */
}

static gint64 now_ms(void)
{
	return g_get_real_time() / 1000;
}

/* The carry state, or NULL after one line saying why it cannot be used. */
static DmemCarry *load_state(const DmemConfig *cfg)
{
	g_autoptr(GError) e = NULL;
	DmemCarry *state = dmem_carry_load(cfg, &e);

	if (!state)
		say_error("%s", e->message);
	return state;
}

/* Why @xml's domain cannot be carried over a kexec, or NULL. */
static char *refusal(const char *xml, DomainPlan **planp)
{
	g_autoptr(GError) e = NULL;
	PlanOptions o = { 0 };
	DomainPlan *plan = plan_from_xml(xml, strlen(xml), &o, &e);

	if (!plan)
		return g_strdup_printf("its XML: %s", e->message);
	*planp = plan;
	if (!plan->opted_in || !plan->backends->len)
		return g_strdup("no dmem memory (not a dmemfs-host domain): migrate or stop it first");
	if (plan->hostdevs)
		return g_strdup_printf("%u host device(s) (<hostdev>, <interface type='hostdev'>): "
				       "their IOMMU mappings do not "
				       "survive a kexec",
				       plan->hostdevs);
	return NULL;
}

typedef struct {
	virDomainPtr dom;
	DomainPlan *plan;
	char *name, *uuid, *save;
	gboolean saved;
	gint64 stopped, saved_at; /* ms: its save began, it ended */
	char *error;              /* why its save failed */
} Carried;

static void carried_free(gpointer p)
{
	Carried *c = p;

	virDomainFree(c->dom);
	plan_free(c->plan);
	g_free(c->name);
	g_free(c->uuid);
	g_free(c->save);
	g_free(c->error);
	g_free(c);
}

/*
 * @fn on every item at once, a thread each (in turn here when no thread
 * is to be had), back when all are done: saves, restores and roll backs,
 * so that each guest's pause is its own, not the sum of all.
 */
static void all_at_once(GPtrArray *items, GThreadFunc fn)
{
	g_autofree GThread **threads = g_new0(GThread *, items->len + 1);

	for (guint i = 0; i < items->len; i++) {
		threads[i] = g_thread_try_new("dmem-liveupdate", fn, items->pdata[i], NULL);
		if (!threads[i])
			fn(items->pdata[i]);
	}
	for (guint i = 0; i < items->len; i++)
		if (threads[i])
			g_thread_join(threads[i]);
}

/*
 * One guest's device state out, its RAM left in dmem: a thread each, on a
 * connection of its own (libvirtd serves only a few calls of one client
 * at a time, and a queued save would pause its guest later than the rest).
 */
static gpointer save_one(gpointer data)
{
	Carried *c = data;
	virConnectPtr conn = virConnectOpen(opt_uri);
	virDomainPtr dom = conn ? virDomainLookupByUUIDString(conn, c->uuid) : NULL;

	c->stopped = now_ms();
	if (!dom)
		c->error = g_strdup(virt_error());
	else if (virDomainSave(dom, c->save) == 0)
		c->saved = TRUE;
	/*
	 * An error that came after libvirtd saved and stopped it anyway (a
	 * dropped connection): the image is its state, restore it as saved.
	 */
	else if (virDomainIsActive(c->dom) == 0 && g_file_test(c->save, G_FILE_TEST_IS_REGULAR))
		c->saved = TRUE;
	else
		c->error = g_strdup(virt_error());
	c->saved_at = now_ms();
	if (dom)
		virDomainFree(dom);
	if (conn)
		virConnectClose(conn);
	return NULL;
}

static gboolean is_dmemfs(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && (unsigned long)sf.f_type == DMEMFS_MAGIC;
}

/*
 * The /proc/mounts entry of the mount at @path: its source into @source,
 * what names it to the next kernel with its dpage size and nodes into
 * @name ("SOURCE pagesize=.. nodes=.."), and its persisted= address as the
 * return value, NULL when it has no table.
 */
static char *mount_entry(const char *path, char **source, char **name)
{
	FILE *f = setmntent("/proc/mounts", "r");
	struct mntent *m;
	char *addr = NULL;

	while (f && (m = getmntent(f))) {
		char *v = hasmntopt(m, "persisted");
		char *ps = hasmntopt(m, "pagesize"), *nodes = hasmntopt(m, "nodes");

		if (strcmp(m->mnt_dir, path) || strcmp(m->mnt_type, "dmemfs"))
			continue;
		g_free(addr);
		addr = v && v[9] == '=' ? g_strndup(v + 10, strcspn(v + 10, ",")) : NULL;
		if (source) {
			g_free(*source);
			*source = g_strdup(m->mnt_fsname);
		}
		if (name) {
			g_free(*name);
			*name = g_strdup_printf("%s %.*s %.*s", m->mnt_fsname,
						ps ? (int)strcspn(ps, ",") : 0, ps ? ps : "",
						nodes ? (int)strcspn(nodes, ",") : 0, nodes ? nodes : "");
		}
	}
	if (f)
		endmntent(f);
	return addr;
}

/*
 * Each persisted mount still shows the table that the plan named (@addrs,
 * in the order of the configured dmemfs mounts): anything that changed its
 * files since the persist dropped the table, and the next kernel would
 * give those guests nothing back.  Checked right before kexec -e.
 */
static gboolean tables_still_live(const DmemConfig *cfg, const GPtrArray *addrs, GError **error)
{
	DmemMountIter it = { 0 };
	guint i = 0;

	while (dmem_config_next_mount(cfg, &it)) {
		g_autofree char *now = NULL;

		if (!is_dmemfs(it.path))
			continue;
		now = mount_entry(it.path, NULL, NULL);
		if (i >= addrs->len || !g_ptr_array_index(addrs, i) ||
		    g_strcmp0(now, g_ptr_array_index(addrs, i))) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "%s: its table is gone since the persist (its files changed)",
				    it.path);
			return FALSE;
		}
		i++;
	}
	/* every table of the plan was seen (addrs ends in its NULL) */
	if (i + 1 != addrs->len)
		return dmem_fail(error, "%u of the %u persisted mounts are left", i, addrs->len - 1);
	return TRUE;
}

/*
 * The next kernel gives a table back only to a mount of the same source,
 * dpage size and nodes: two configured mounts that share them could not
 * be told apart.  Checked before anything is touched.
 */
static gboolean mounts_distinct(const DmemConfig *cfg, GError **error)
{
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	DmemMountIter it = { 0 };

	while (dmem_config_next_mount(cfg, &it)) {
		const char *m = it.path;
		g_autofree char *name = NULL;
		const char *other;

		if (is_dmemfs(m))
			g_free(mount_entry(m, NULL, &name));
		if (!name)
			continue;
		other = g_hash_table_lookup(seen, name);
		if (other) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "dmemfs mounts %s and %s have the same source, page size "
				    "and nodes (%s): mount each with a source of its own "
				    "(mount -t dmemfs -o ... NAME DIR)",
				    other, m, name);
			return FALSE;
		}
		g_hash_table_insert(seen, g_steal_pointer(&name), g_strdup(m));
	}
	return TRUE;
}

/* a saved guest back after a failure: a thread each, on a connection of its own */
static gpointer restore_back(gpointer data)
{
	Carried *c = data;
	virConnectPtr conn = virConnectOpen(opt_uri);

	g_clear_pointer(&c->error, g_free);
	if (!conn || virDomainRestore(conn, c->save) < 0)
		c->error = g_strdup(virt_error());
	if (conn)
		virConnectClose(conn);
	return NULL;
}

/*
 * Undo: the saved domains come back as they were, marks gone, and the
 * state lists none of them.  One that does not come back stays in the
 * state with its mark and image: --restore or --abort deal with it.
 */
static void roll_back(const DmemConfig *cfg, GPtrArray *doms, DmemCarry *state)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(GPtrArray) saved = g_ptr_array_new();

	/* the saved ones come back all at once, as they went */
	for (guint i = 0; i < doms->len; i++)
		if (((Carried *)g_ptr_array_index(doms, i))->saved)
			g_ptr_array_add(saved, g_ptr_array_index(doms, i));
	all_at_once(saved, restore_back);
	for (guint i = 0; i < doms->len; i++) {
		Carried *c = g_ptr_array_index(doms, i);

		if (c->saved && c->error) {
			say_error("domain %s: restore after the failure: %s; its image stays in %s",
				  c->name, c->error, c->save);
			continue;
		}
		if (c->saved)
			unlink(c->save);
		/*
		 * Saved or not, QEMU has x-ignore-shared on (a restore of a
		 * marked domain starts with it): off, or a later save or
		 * migration would leave the guest's RAM out.
		 */
		if (c->uuid && ignore_shared(c->dom, FALSE) < 0)
			say_error("domain %s: x-ignore-shared stays on (%s): do not virsh save it",
				  c->name, virt_error());
		if (c->uuid) {
			dmem_domain_set_mark(cfg, c->uuid, FALSE, NULL);
			dmem_carry_remove(state, c->uuid);
		}
	}
	if (!dmem_carry_save(state, &e))
		say_error("%s", e->message);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(virDomainGetName(*(virDomainPtr const *)a),
		      virDomainGetName(*(virDomainPtr const *)b));
}

static int cmd_update(const DmemConfig *cfg, virConnectPtr conn)
{
	g_autoptr(GPtrArray) doms = g_ptr_array_new_with_free_func(carried_free);
	g_autoptr(GPtrArray) addrs = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) e = NULL;
	g_autoptr(DmemCarry) state = NULL;
	g_autoptr(GPtrArray) pending = NULL;
	g_autofree char *ranges = NULL, *cur_cmdline = NULL, *tables = NULL;
	g_autofree char *mem_max = NULL, *cmd_opt = NULL, *initrd_opt = NULL;
	g_auto(KexecPlan) plan = { 0 };
	virDomainPtr *list = NULL;
	DomainEnv env = { .cfg = cfg };
	DmemMountIter it = { 0 };
	int n, refused = 0, failed = 0;
	guint mounts = 0;

	/* ---- 1. everything is checked before anything is touched */
	state = load_state(cfg);
	if (!state)
		return 1;
	pending = dmem_carry_domains(state);
	if (pending->len) {
		say_error("%s: a previous update still carries %u domain(s): --restore or --abort "
			  "it first",
			  dmem_carry_path(state), pending->len);
		return 1;
	}
	n = virConnectListAllDomains(conn, &list, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0) {
		say_error("list domains: %s", virt_error());
		return 1;
	}
	qsort(list, n, sizeof(*list), by_name); /* the same order every time */
	for (int i = 0; i < n; i++) {
		Carried *c = g_new0(Carried, 1);
		g_autofree char *xml = virDomainGetXMLDesc(list[i], 0);
		g_autofree char *why = NULL;

		c->dom = list[i];
		c->name = g_strdup(virDomainGetName(list[i]));
		g_ptr_array_add(doms, c);
		why = xml ? refusal(xml, &c->plan) : g_strdup(virt_error());
		if (!why && !domain_reconnect(&env, c->plan, &e))
			why = g_strdup(e->message);
		g_clear_error(&e);
		if (why) {
			say_error("domain %s cannot be carried: %s", c->name, why);
			refused++;
			continue;
		}
		c->uuid = g_strdup(c->plan->uuid);
		c->save = dmem_carry_image(state, c->uuid);
	}
	free(list);
	if (refused)
		return 1;
	if (!g_file_test(opt_kernel, G_FILE_TEST_IS_REGULAR)) {
		say_error("kernel %s: not a file", opt_kernel);
		return 1;
	}
	for (DmemMountIter m = { 0 }; dmem_config_next_mount(cfg, &m);)
		mounts += is_dmemfs(m.path);
	if (!g_file_get_contents(RANGES, &ranges, NULL, &e) ||
	    !g_file_get_contents("/proc/cmdline", &cur_cmdline, NULL, &e) ||
	    !mounts_distinct(cfg, &e)) {
		say_error("%s", e->message);
		return 1;
	}
	{
		/* what the plan would refuse, refused before any guest stops */
		KexecInput in = { .ranges = ranges, .cmdline = cur_cmdline, .append = opt_append };

		if (!kexec_plan_check(&in, mounts, &e)) {
			say_error("%s", e->message);
			return 1;
		}
	}
	if (g_mkdir_with_parents(dmem_carry_dir(state), 0700) < 0) {
		say_error("%s: %s", dmem_carry_dir(state), g_strerror(errno));
		return 1;
	}

	/*
	 * ---- 2. the guests stop, all at once (each one's pause is its own
	 * save, not the sum): device state out, RAM stays in dmem.  The state
	 * first: a mark counts only for a domain it lists.
	 */
	for (guint i = 0; i < doms->len; i++) {
		Carried *c = g_ptr_array_index(doms, i);

		dmem_carry_set(state, c->uuid, "name", c->name);
		dmem_carry_set(state, c->uuid, "image", c->save);
	}
	if (!dmem_carry_save(state, &e)) {
		say_error("%s", e->message);
		roll_back(cfg, doms, state);
		return 1;
	}
	for (guint i = 0; i < doms->len; i++) {
		Carried *c = g_ptr_array_index(doms, i);

		if (!dmem_domain_set_mark(cfg, c->uuid, TRUE, &e) ||
		    ignore_shared(c->dom, TRUE) < 0) {
			say_error("domain %s: save: %s", c->name, e ? e->message : virt_error());
			roll_back(cfg, doms, state);
			return 1;
		}
	}
	all_at_once(doms, save_one);
	for (guint i = 0; i < doms->len; i++) {
		Carried *c = g_ptr_array_index(doms, i);
		g_autofree char *at = NULL, *ms = NULL;

		if (c->error) {
			say_error("domain %s: save: %s", c->name, c->error);
			failed++;
			continue;
		}
		at = g_strdup_printf("%" G_GINT64_FORMAT, c->stopped);
		ms = g_strdup_printf("%" G_GINT64_FORMAT, c->saved_at - c->stopped);
		dmem_carry_set(state, c->uuid, "stopped_at_ms", at);
		dmem_carry_set(state, c->uuid, "save_ms", ms);
		printf("domain %s: saved without its RAM in %.2f s\n", c->name,
		       (c->saved_at - c->stopped) / 1000.0);
	}
	if (failed) {
		roll_back(cfg, doms, state);
		return 1;
	}

	/* ---- 3. the map of files to dpages, for the next kernel */
	while (dmem_config_next_mount(cfg, &it)) {
		const char *m = it.path;
		g_autofree char *addr = NULL, *source = NULL;

		if (!is_dmemfs(m))
			continue;
		if (mount("none", m, NULL, MS_REMOUNT, "persist") < 0 ||
		    !(addr = mount_entry(m, &source, NULL))) {
			say_error("%s: persist: %s (see the kernel log)", m, g_strerror(errno));
			roll_back(cfg, doms, state);
			return 1;
		}
		dmem_carry_set_mount(state, m, addr, source);
		g_ptr_array_add(addrs, g_steal_pointer(&addr));
	}
	g_ptr_array_add(addrs, NULL);

	/* ---- 4. the next kernel, where it cannot touch dmem */
	if (g_file_get_contents(TABLES, &tables, NULL, &e)) {
		KexecInput in = { .ranges = ranges, .cmdline = cur_cmdline, .tables = tables,
				  .addrs = (const char *const *)addrs->pdata,
				  .append = opt_append };

		if (kexec_plan(&in, &plan, &e)) {
			g_autofree char *ms = g_strdup_printf("%" G_GINT64_FORMAT, now_ms());

			/* the keys are spent at the next boot; the state keeps none */
			dmem_carry_set(state, NULL, "loaded_at_ms", ms);
		}
	}
	if (!plan.cmdline || !dmem_carry_save(state, &e)) {
		say_error("%s", e->message);
		roll_back(cfg, doms, state);
		return 1;
	}
	mem_max = g_strdup_printf("--mem-max=%" G_GUINT64_FORMAT, plan.mem_max);
	cmd_opt = g_strdup_printf("--command-line=%s", plan.cmdline);
	initrd_opt = opt_initrd ? g_strdup_printf("--initrd=%s", opt_initrd) : NULL;
	{
		const char *argv[] = { "kexec", "-l", opt_kernel, mem_max, cmd_opt, initrd_opt, NULL };

		/* the error names the command, its exit status and what it said */
		if (!dmem_run(argv, NULL, &e)) {
			say_error("%s", e->message);
			roll_back(cfg, doms, state);
			return 1;
		}
	}
	printf("loaded %s: %s\n", opt_kernel, plan.cmdline);
	fflush(stdout);
	if (opt_no_exec)
		return 0;
	sync();
	{
		const char *argv[] = { "kexec", "-e", NULL };
		const char *unload[] = { "kexec", "-u", NULL };

		if (tables_still_live(cfg, addrs, &e))
			dmem_run(argv, NULL, &e);
		/* still here: nothing happened, the guests come back */
		say_error("%s; the guests are restored", e ? e->message : "kexec -e: returned");
		g_clear_error(&e);
		dmem_run(unload, NULL, &e);
		roll_back(cfg, doms, state);
	}
	return 1;
}

typedef struct {
	const DmemConfig *cfg;
	virConnectPtr conn;
	DmemCarry *state;	/* shared: under state_lock */
	GMutex *state_lock;
	char *uuid, *name, *image;
	gint64 stopped, start, done;
	gboolean ok;
	char *error;
} Restore;

static void restore_free(gpointer p)
{
	Restore *r = p;

	g_free(r->uuid);
	g_free(r->name);
	g_free(r->image);
	g_free(r->error);
	g_free(r);
}

/* One guest back; it leaves the state as it comes back. */
static gpointer restore_one(gpointer data)
{
	Restore *r = data;
	g_autoptr(GError) e = NULL;
	virDomainPtr dom;

	r->start = now_ms();
	if (virDomainRestoreFlags(r->conn, r->image, NULL, VIR_DOMAIN_SAVE_RUNNING) < 0) {
		r->error = g_strdup_printf("restore: %s; its files, mark and %s stay for another "
					   "--restore or --abort",
					   virt_error(), r->image);
		return NULL;
	}
	r->done = now_ms();
	r->ok = TRUE;
	/*
	 * Its QEMU started with x-ignore-shared (the wrapper saw the mark):
	 * off again, or a later plain virsh save would leave the RAM out of
	 * the image.
	 */
	dom = virDomainLookupByUUIDString(r->conn, r->uuid);
	if (!dom || ignore_shared(dom, FALSE) < 0)
		r->error = g_strdup_printf("restored, but x-ignore-shared stays on (%s): do not "
					   "virsh save it",
					   virt_error());
	if (dom)
		virDomainFree(dom);
	dmem_domain_set_mark(r->cfg, r->uuid, FALSE, NULL);
	unlink(r->image);
	g_mutex_lock(r->state_lock);
	dmem_carry_remove(r->state, r->uuid);
	if (!dmem_carry_save(r->state, &e) && !r->error)
		r->error = g_strdup(e->message);
	g_mutex_unlock(r->state_lock);
	return NULL;
}

/*
 * After the new kernel booted: the mounts with recover, then every guest
 * the state still lists, in parallel.  A rerun after a partial failure
 * restores the rest: mounted mounts and restored guests are done.
 */
static int cmd_restore(const DmemConfig *cfg, virConnectPtr conn)
{
	g_autoptr(GPtrArray) jobs = NULL, uuids = NULL;
	g_autoptr(DmemCarry) state = NULL;
	DmemMountIter it = { 0 };
	GMutex lock;
	int failed = 0;

	state = load_state(cfg);
	if (!state)
		return 1;
	uuids = dmem_carry_domains(state);
	if (!uuids->len) {
		printf("nothing to restore (%s lists no domain)\n", dmem_carry_path(state));
		return 0;
	}
	/* ---- 1. the files, with the guests' memory in them */
	while (dmem_config_next_mount(cfg, &it)) {
		const char *m = it.path;
		g_autofree char *source = NULL;
		/* only the mounts that were persisted have a table */
		gboolean carried = dmem_carry_mount(state, m, &source);
		g_autofree char *opts = g_strdup_printf("pagesize=%s%s",
							dmem_pagesize_name(it.pagesize),
							carried ? ",recover" : "");

		if (is_dmemfs(m))
			continue;
		/* the next kernel gives a table back to a mount of its source */
		if (g_mkdir_with_parents(m, 0755) < 0 ||
		    mount(source ? source : "none", m, "dmemfs", 0, opts) < 0) {
			say_error("%s: mount -o %s: %s (see the kernel log)", m, opts,
				  g_strerror(errno));
			failed++;
		}
	}
	/* ---- 2. the guests, all at once: each one's downtime is its own restore */
	g_mutex_init(&lock);
	jobs = g_ptr_array_new_with_free_func(restore_free);
	for (guint i = 0; i < uuids->len; i++) {
		const char *uuid = g_ptr_array_index(uuids, i);
		g_autofree char *ms = dmem_carry_get(state, uuid, "stopped_at_ms");
		Restore *r = g_new0(Restore, 1);

		r->cfg = cfg;
		r->conn = conn;
		r->state = state;
		r->state_lock = &lock;
		r->uuid = g_strdup(uuid);
		r->name = dmem_carry_get(state, uuid, "name");
		r->image = dmem_carry_image(state, uuid);
		r->stopped = ms ? g_ascii_strtoll(ms, NULL, 10) : 0;
		if (!r->name)
			r->name = g_strdup(uuid);
		g_ptr_array_add(jobs, r);
	}
	all_at_once(jobs, restore_one);
	for (guint i = 0; i < jobs->len; i++) {
		Restore *r = g_ptr_array_index(jobs, i);

		if (r->error)
			say_error("domain %s: %s", r->name, r->error);
		if (r->ok)
			printf("domain %s: restored in %.2f s, downtime %.2f s\n", r->name,
			       (r->done - r->start) / 1000.0,
			       r->stopped ? (r->done - r->stopped) / 1000.0 : 0.0);
		failed += !r->ok || r->error;
	}
	g_mutex_clear(&lock);
	return failed ? 1 : 0;
}

/* Whether the domain @uuid runs: 1, 0 (stopped or not defined), -1 unknown. */
static int running(virConnectPtr conn, const char *uuid)
{
	virDomainPtr dom = virDomainLookupByUUIDString(conn, uuid);
	const virError *err;
	int on;

	if (!dom) {
		err = virGetLastError();
		return err && err->code == VIR_ERR_NO_DOMAIN ? 0 : -1;
	}
	on = virDomainIsActive(dom);
	virDomainFree(dom);
	return on < 0 ? -1 : on;
}

/*
 * Give up on an update: every domain the state lists is released, as a
 * stop would release it (its files go, its dpages back to the pool),
 * unless it runs again already, and so are the tables this boot kept for
 * mounts nobody recovered.  Then there is no state.
 */
static int cmd_abort(const DmemConfig *cfg, virConnectPtr conn)
{
	g_autoptr(DmemCarry) state = NULL;
	g_autoptr(GPtrArray) uuids = NULL;
	g_autoptr(GError) e = NULL;
	g_autofree char *kept = NULL;
	DomainEnv env = { .cfg = cfg };
	int failed = 0;

	state = load_state(cfg);
	if (!state)
		return 1;
	uuids = dmem_carry_domains(state);
	for (guint i = 0; i < uuids->len; i++) {
		const char *uuid = g_ptr_array_index(uuids, i);
		g_autofree char *name = dmem_carry_get(state, uuid, "name");
		g_autofree char *image = dmem_carry_image(state, uuid);
		int on = running(conn, uuid);

		if (on < 0) {
			say_error("domain %s: is it running? %s; left as it is", name ? name : uuid,
				  virt_error());
			failed++;
			continue;
		}
		if (!on && !domain_release(&env, uuid, &e)) {
			say_error("domain %s: %s", name ? name : uuid, e->message);
			g_clear_error(&e);
			failed++;
			continue;
		}
		dmem_domain_set_mark(cfg, uuid, FALSE, NULL);
		unlink(image);
		dmem_carry_remove(state, uuid);
		printf("domain %s: %s\n", name ? name : uuid,
		       on ? "running: left as it is" : "released, its dmem is back in the pool");
	}
	if (!dmem_carry_save(state, &e)) {
		say_error("%s", e->message);
		failed++;
	}
	/* tables of this boot that no mount recovered: their dpages back */
	if (g_file_get_contents(KEPT, &kept, NULL, NULL) && *kept) {
		if (!g_file_set_contents(KEPT, "discard", -1, &e)) {
			say_error("%s: %s", KEPT, e->message);
			failed++;
		} else {
			printf("tables kept at boot: discarded, their dmem is back in the pool\n");
		}
	}
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	g_autoptr(GOptionContext) oc = g_option_context_new("- update the host kernel under dmem guests");
	g_autoptr(DmemConfig) cfg = NULL;
	g_autoptr(GError) e = NULL;
	g_autofree char *kernel = NULL, *initrd = NULL;
	virConnectPtr conn;
	struct utsname u;
	int rc;
	GOptionEntry entries[] = {
		{ "connect", 'c', 0, G_OPTION_ARG_STRING, &opt_uri, "libvirt URI", "URI" },
		{ "kernel", 0, 0, G_OPTION_ARG_FILENAME, &opt_kernel,
		  "kernel to load (default /boot/vmlinuz-`uname -r`)", "FILE" },
		{ "initrd", 0, 0, G_OPTION_ARG_FILENAME, &opt_initrd, "its initrd", "FILE" },
		{ "append", 0, 0, G_OPTION_ARG_STRING, &opt_append, "more kernel arguments", "ARGS" },
		{ "no-exec", 0, 0, G_OPTION_ARG_NONE, &opt_no_exec,
		  "load the kernel but do not execute it", NULL },
		{ "restore", 0, 0, G_OPTION_ARG_NONE, &opt_restore,
		  "after the new kernel booted: recover the mounts, restore the guests", NULL },
		{ "abort", 0, 0, G_OPTION_ARG_NONE, &opt_abort,
		  "give up: release every carried domain and kept table", NULL },
		G_OPTION_ENTRY_NULL,
	};

	g_option_context_add_main_entries(oc, entries, NULL);
	if (!g_option_context_parse(oc, &argc, &argv, &e) || argc != 1) {
		say_error("%s", e ? e->message : "unexpected arguments");
		return 2;
	}
	if (opt_restore && opt_abort) {
		say_error("--restore and --abort: one or the other");
		return 2;
	}
	if (!opt_kernel && uname(&u) == 0)
		opt_kernel = kernel = g_strdup_printf("/boot/vmlinuz-%s", u.release);
	if (!opt_initrd && uname(&u) == 0) {
		initrd = g_strdup_printf("/boot/initrd.img-%s", u.release);
		if (g_file_test(initrd, G_FILE_TEST_IS_REGULAR))
			opt_initrd = initrd;
	}
	cfg = dmem_config_load(&e);
	if (!cfg) {
		say_error("%s", e->message);
		return 1;
	}
	if (!g_getenv("LIBVIRT_LOG_OUTPUTS"))
		g_setenv("LIBVIRT_LOG_OUTPUTS", "1:file:/dev/null", TRUE);
	if (!lock_state(&e)) {
		say_error("%s", e->message);
		return 1;
	}
	virSetErrorFunc(NULL, quiet);
	if (!opt_uri)
		opt_uri = g_strdup("qemu:///system"); /* the save and restore threads connect too */
	conn = virConnectOpen(opt_uri);
	if (!conn) {
		say_error("connect %s: %s", opt_uri, virt_error());
		return 1;
	}
	rc = opt_restore ? cmd_restore(cfg, conn) :
	     opt_abort	 ? cmd_abort(cfg, conn) :
			   cmd_update(cfg, conn);
	virConnectClose(conn);
	return rc;
}
