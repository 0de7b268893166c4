// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmemfs-host-setup: set a host up for dmem guests from its configuration
 * file, or take that setup away.
 *
 *   dmemfs-host-setup [--config FILE] [--connect URI] up
 *       mount dmemfs on every mount point of the configuration (its page
 *       size), mount a nodes=N instance per node with dmem under
 *       /run/dmemfs-stats/node<N>, and define, start and autostart the
 *       libvirt dir storage pool dmem-node<N> on it (nodepool.h), which
 *       dmem-capacity --connect reads.  What is already there and right is
 *       kept; anything else in the way is refused.  On a failure, what
 *       this run did is undone.
 *   dmemfs-host-setup [--config FILE] [--connect URI] down
 *       undefine the dmem-node<N> pools it defines and unmount their
 *       instances; unmount the configured mount points that hold no files
 *       (a running guest's files keep theirs).
 *
 * Runs as root, before libvirtd starts guests (the package's unit).  One
 * line on stderr and exit 1 on failure, 2 on bad usage.
 */
#include "dmemfs-host.h"
#include "nodepool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <mntent.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define SETUP_MOUNT_FLAGS (MS_NOSUID | MS_NODEV | MS_NOEXEC)

/* What a run did, to undo on a failure: newest last. */
typedef enum { UNDO_RMDIR, UNDO_UMOUNT, UNDO_UNDEFINE, UNDO_DESTROY } UndoKind;
typedef struct {
	UndoKind kind;
	char *what; /* a path or a pool name */
} Undo;

typedef struct {
	DmemConfig *cfg;
	const char *uri;
	virConnectPtr conn;
	GArray *undo; /* Undo */
	guint mounts, pools;
} Setup;

static void undo_clear(gpointer p)
{
	g_free(((Undo *)p)->what);
}

static void did(Setup *s, UndoKind kind, const char *what)
{
	Undo u = { kind, g_strdup(what) };

	g_array_append_val(s->undo, u);
}

static void quiet_libvirt(void *ud, virErrorPtr e)
{
	(void)ud;
	(void)e;
}

static gboolean libvirt_fail(GError **error, const char *what)
{
	const virError *e = virGetLastError();

	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: %s", what,
		    e && e->message ? e->message : "libvirt error");
	return FALSE;
}

static gboolean errno_fail(GError **error, int err, const char *fmt, const char *path)
{
	g_autofree char *what = g_strdup_printf(fmt, path);

	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: %s", what, g_strerror(err));
	return FALSE;
}

/* The mount table entry of @path (a mount point), or FALSE. */
static gboolean mounted_at(const char *path, char **type, char **opts)
{
	FILE *f = setmntent("/proc/self/mounts", "re");
	struct mntent *m;
	gboolean found = FALSE;

	if (!f)
		return FALSE;
	/* the last entry wins: a later mount hides an earlier one */
	while ((m = getmntent(f))) {
		if (strcmp(m->mnt_dir, path))
			continue;
		found = TRUE;
		g_free(*type);
		g_free(*opts);
		*type = g_strdup(m->mnt_type);
		*opts = g_strdup(m->mnt_opts);
	}
	endmntent(f);
	return found;
}

/* whether comma-separated @opts has @want exactly */
static gboolean has_option(const char *opts, const char *want)
{
	g_auto(GStrv) v = g_strsplit(opts, ",", -1);

	return g_strv_contains((const char *const *)v, want);
}

/* mkdir -p @path (0755), each directory it makes an undo entry */
static gboolean make_dirs(Setup *s, const char *path, GError **error)
{
	g_autofree char *parent = g_path_get_dirname(path);
	struct stat st;

	if (!lstat(path, &st)) {
		if (S_ISDIR(st.st_mode))
			return TRUE;
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "%s is not a directory%s", path,
			    S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
		return FALSE;
	}
	if (errno != ENOENT)
		return errno_fail(error, errno, "%s", path);
	if (strcmp(parent, path) && !make_dirs(s, parent, error))
		return FALSE;
	if (mkdir(path, 0755))
		return errno_fail(error, errno, "mkdir %s", path);
	did(s, UNDO_RMDIR, path);
	return TRUE;
}

static gboolean dir_is_empty(const char *path)
{
	g_autoptr(GDir) d = g_dir_open(path, 0, NULL);

	return d && !g_dir_read_name(d);
}

/*
 * dmemfs on @path with @opts (pagesize=..., and nodes=N for a node's pool):
 * kept when it is there with them, refused when something else is.
 */
static gboolean ensure_mount(Setup *s, const char *path, const char *opts, GError **error)
{
	g_autofree char *type = NULL, *have = NULL;
	g_auto(GStrv) want = g_strsplit(opts, ",", -1);

	if (!g_path_is_absolute(path)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "mount point '%s' is not an absolute path", path);
		return FALSE;
	}
	if (!make_dirs(s, path, error))
		return FALSE;
	if (mounted_at(path, &type, &have)) {
		if (strcmp(type, "dmemfs")) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "%s is a mount point of %s, not dmemfs", path, type);
			return FALSE;
		}
		for (char **w = want; *w; w++) {
			if (!has_option(have, *w)) {
				g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
					    "%s is dmemfs mounted with %s, not %s", path, have, opts);
				return FALSE;
			}
		}
		return TRUE;
	}
	if (!dir_is_empty(path)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "%s is not empty: not mounting dmemfs over it", path);
		return FALSE;
	}
	if (mount("none", path, "dmemfs", SETUP_MOUNT_FLAGS, opts)) {
		int err = errno;
		g_autofree char *what = g_strdup_printf("mount -t dmemfs -o %s none %s", opts, path);

		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: %s%s", what, g_strerror(err),
			    err == ENODEV ? " (a kernel without dmemfs)" : "");
		return FALSE;
	}
	did(s, UNDO_UMOUNT, path);
	s->mounts++;
	return TRUE;
}

/* The nodes with dmem, from the pool's sysfs directory. */
static GArray *dmem_nodes(const DmemConfig *cfg, GError **error)
{
	g_autoptr(GArray) stats = dmem_stats_read(cfg->sysfs_root, error);
	GArray *nodes;

	if (!stats)
		return NULL;
	nodes = g_array_new(FALSE, FALSE, sizeof(guint));
	for (guint i = 0; i < stats->len; i++) {
		const DmemNodeStat *st = &g_array_index(stats, DmemNodeStat, i);

		if (st->total_bytes)
			g_array_append_val(nodes, st->node);
	}
	if (!nodes->len) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "no node has dmem (%s): boot the host with dmem=", cfg->sysfs_root);
		g_array_free(nodes, TRUE);
		return NULL;
	}
	return nodes;
}

static gboolean connect_rw(Setup *s, GError **error)
{
	if (s->conn)
		return TRUE;
	s->conn = virConnectOpen(s->uri);
	if (!s->conn) {
		g_autofree char *what = g_strdup_printf("cannot connect to %s", s->uri);

		return libvirt_fail(error, what);
	}
	return TRUE;
}

/* dmem-node<N>: defined with our XML, started, autostarted */
static gboolean ensure_pool(Setup *s, guint node, GError **error)
{
	g_autofree char *name = dmem_nodepool_name(node);
	g_autofree char *xml = NULL;
	virStoragePoolPtr p = virStoragePoolLookupByName(s->conn, name);
	gboolean ok = FALSE;
	int active;

	if (p) {
		g_autofree char *have = virStoragePoolGetXMLDesc(p, 0);

		if (!dmem_nodepool_xml_matches(have, DMEM_NODEPOOL_DIR, node)) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "storage pool %s exists with another definition: not touching it",
				    name);
			goto out;
		}
	} else {
		xml = dmem_nodepool_xml(DMEM_NODEPOOL_DIR, node);
		p = virStoragePoolDefineXML(s->conn, xml, 0);
		if (!p) {
			g_autofree char *what = g_strdup_printf("cannot define storage pool %s", name);

			libvirt_fail(error, what);
			goto out;
		}
		did(s, UNDO_UNDEFINE, name);
	}
	active = virStoragePoolIsActive(p);
	if (active < 0 || (!active && virStoragePoolCreate(p, 0) < 0)) {
		g_autofree char *what = g_strdup_printf("cannot start storage pool %s", name);

		libvirt_fail(error, what);
		goto out;
	}
	if (!active)
		did(s, UNDO_DESTROY, name);
	if (virStoragePoolSetAutostart(p, 1) < 0) {
		g_autofree char *what = g_strdup_printf("cannot autostart storage pool %s", name);

		libvirt_fail(error, what);
		goto out;
	}
	s->pools++;
	ok = TRUE;
out:
	if (p)
		virStoragePoolFree(p);
	return ok;
}

/* Undo what this run did, newest first. */
static void undo_all(Setup *s)
{
	for (guint i = s->undo->len; i-- > 0;) {
		const Undo *u = &g_array_index(s->undo, Undo, i);
		virStoragePoolPtr p = NULL;

		switch (u->kind) {
		case UNDO_RMDIR:
			rmdir(u->what);
			break;
		case UNDO_UMOUNT:
			umount2(u->what, UMOUNT_NOFOLLOW);
			break;
		case UNDO_UNDEFINE:
		case UNDO_DESTROY:
			if (s->conn)
				p = virStoragePoolLookupByName(s->conn, u->what);
			if (p && u->kind == UNDO_DESTROY)
				virStoragePoolDestroy(p);
			else if (p)
				virStoragePoolUndefine(p);
			if (p)
				virStoragePoolFree(p);
			break;
		}
	}
	g_array_set_size(s->undo, 0);
}

static gboolean setup_up(Setup *s, GError **error)
{
	g_autoptr(GArray) nodes = dmem_nodes(s->cfg, error);
	DmemMountIter it = { 0 };

	if (!nodes)
		return FALSE;
	while (dmem_config_next_mount(s->cfg, &it)) {
		g_autofree char *opts = g_strdup_printf("pagesize=%s",
							dmem_pagesize_name(it.pagesize));

		if (!ensure_mount(s, it.path, opts, error))
			return FALSE;
	}
	for (guint i = 0; i < nodes->len; i++) {
		guint n = g_array_index(nodes, guint, i);
		g_autofree char *target = dmem_nodepool_target(DMEM_NODEPOOL_DIR, n);
		g_autofree char *opts = dmem_nodepool_mount_options(n);

		if (!ensure_mount(s, target, opts, error))
			return FALSE;
	}
	if (!connect_rw(s, error))
		return FALSE;
	for (guint i = 0; i < nodes->len; i++)
		if (!ensure_pool(s, g_array_index(nodes, guint, i), error))
			return FALSE;
	return TRUE;
}

/* umount @path if it is a dmemfs mount point; FALSE (and why) if it stays */
static gboolean unmount_dmemfs(const char *path, GError **error)
{
	g_autofree char *type = NULL, *opts = NULL;

	if (!mounted_at(path, &type, &opts) || strcmp(type, "dmemfs"))
		return TRUE;
	if (umount2(path, UMOUNT_NOFOLLOW))
		return errno_fail(error, errno, "umount %s", path);
	return TRUE;
}

static gboolean setup_down(Setup *s, GError **error)
{
	virStoragePoolPtr *pools = NULL;
	DmemMountIter it = { 0 };
	int n;

	if (!connect_rw(s, error))
		return FALSE;
	n = virConnectListAllStoragePools(s->conn, &pools, 0);
	if (n < 0)
		return libvirt_fail(error, "cannot list the storage pools");
	for (int i = 0; i < n; i++) {
		const char *name = virStoragePoolGetName(pools[i]);
		g_autofree char *xml = NULL;
		guint node;

		if (dmem_nodepool_parse(name, &node) &&
		    (xml = virStoragePoolGetXMLDesc(pools[i], 0)) &&
		    dmem_nodepool_xml_matches(xml, DMEM_NODEPOOL_DIR, node)) {
			if (virStoragePoolIsActive(pools[i]) == 1)
				virStoragePoolDestroy(pools[i]);
			if (virStoragePoolUndefine(pools[i]) < 0) {
				g_autofree char *what = g_strdup_printf("cannot undefine %s", name);

				libvirt_fail(error, what);
				goto out;
			}
			s->pools++;
		}
	}
	/* every node's instance, also of a node that lost its pool */
	for (guint node = 0; node < DMEM_MAX_NODES; node++) {
		g_autofree char *target = dmem_nodepool_target(DMEM_NODEPOOL_DIR, node);

		if (!g_file_test(target, G_FILE_TEST_IS_DIR))
			continue;
		if (!unmount_dmemfs(target, error))
			goto out;
		rmdir(target);
	}
	rmdir(DMEM_NODEPOOL_DIR);
	while (dmem_config_next_mount(s->cfg, &it)) {
		g_autoptr(GError) e = NULL;

		if (!g_file_test(it.path, G_FILE_TEST_IS_DIR))
			continue;
		if (!dir_is_empty(it.path)) {
			g_printerr("dmemfs-host-setup: %s holds files: left mounted\n", it.path);
			continue;
		}
		if (!unmount_dmemfs(it.path, &e))
			g_printerr("dmemfs-host-setup: %s\n", e->message);
	}
out:
	for (int i = 0; i < n; i++)
		virStoragePoolFree(pools[i]);
	g_free(pools);
	return !error || !*error;
}

int main(int argc, char **argv)
{
	g_autofree char *config = NULL, *uri = NULL;
	const GOptionEntry entries[] = {
		{ "config", 0, 0, G_OPTION_ARG_FILENAME, &config, "configuration file (default "
		  DMEM_DEFAULT_CONFIG ")", "FILE" },
		{ "connect", 0, 0, G_OPTION_ARG_STRING, &uri, "libvirt URI (default qemu:///system)",
		  "URI" },
		G_OPTION_ENTRY_NULL
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("up|down");
	g_autoptr(GError) e = NULL;
	g_autoptr(DmemConfig) cfg = NULL;
	Setup s = { 0 };
	gboolean ok;

	g_option_context_add_main_entries(ctx, entries, NULL);
	g_option_context_set_summary(ctx, "up: mount dmemfs at the configured mount points and a "
				     "nodes=N instance per node, and define the libvirt storage "
				     "pools dmem-node<N>.\ndown: take them away.");
	if (!g_option_context_parse(ctx, &argc, &argv, &e)) {
		g_printerr("dmemfs-host-setup: %s (see --help)\n", e->message);
		return 2;
	}
	if (argc != 2 || (strcmp(argv[1], "up") && strcmp(argv[1], "down"))) {
		g_printerr("dmemfs-host-setup: say up or down (see --help)\n");
		return 2;
	}
	cfg = config ? dmem_config_load_file(config, TRUE, &e) : dmem_config_load(&e);
	if (!cfg) {
		g_printerr("dmemfs-host-setup: %s\n", e->message);
		return 1;
	}
	virSetErrorFunc(NULL, quiet_libvirt);
	s.cfg = cfg;
	s.uri = uri ? uri : "qemu:///system";
	s.undo = g_array_new(FALSE, FALSE, sizeof(Undo));
	g_array_set_clear_func(s.undo, undo_clear);
	ok = !strcmp(argv[1], "up") ? setup_up(&s, &e) : setup_down(&s, &e);
	if (!ok)
		undo_all(&s);
	if (s.conn)
		virConnectClose(s.conn);
	g_array_free(s.undo, TRUE);
	if (!ok) {
		g_printerr("dmemfs-host-setup: %s%s\n", e->message,
			   !strcmp(argv[1], "up") ? " (nothing changed)" : "");
		return 1;
	}
	if (!strcmp(argv[1], "up"))
		printf("dmemfs-host-setup: up: %u mount(s) made, %u storage pool(s) dmem-node<N> "
		       "ready\n", s.mounts, s.pools);
	else
		printf("dmemfs-host-setup: down: %u storage pool(s) dmem-node<N> removed\n",
		       s.pools);
	return 0;
}
