// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmemfs-host-setup: set a host up for dmem guests from its configuration
 * file, or take that setup away.
 *
 *   dmemfs-host-setup [--config FILE] mount
 *       mount dmemfs on every mount point of the configuration (its page
 *       size), and a nodes=N instance per node with dmem under
 *       /run/dmemfs-stats/node<N>.  Needs no libvirt: a host runs it
 *       before libvirtd starts, which starts autostarted guests and pools.
 *   dmemfs-host-setup [--config FILE] [--connect URI] up
 *       the same, then define, start and autostart the libvirt dir storage
 *       pool dmem-node<N> on each instance (nodepool.h), which
 *       dmem-capacity --connect reads.  What is already there and right is
 *       kept.  A mount point that a host kernel update carries
 *       (dmem-liveupdate's state) is left for dmem-liveupdate --restore.
 *       On a failure, what this run did is undone.
 *   dmemfs-host-setup [--config FILE] [--connect URI] down
 *       undefine the dmem-node<N> pools defined as up defines them and
 *       unmount their instances.  The configured mount points stay: they
 *       hold the guests' memory.
 *   dmemfs-host-setup grub DMEM
 *   dmemfs-host-setup grub --recommend --guest SHAPE... [--reserve SIZE]
 *       set DMEM="..." in /etc/default/grub.d/dmemfs-host.cfg (grub.c): the
 *       dmem= given, or the one dmem-capacity --recommend prints for this
 *       host and these guests.  update-grub and the reboot stay the
 *       operator's.
 *
 * Runs as root at boot: mount before libvirtd, up after it.  Mount
 * points are opened component by component: no symbolic link anywhere on
 * the path, and every directory on it root's and writable by root only (or
 * sticky), so that no user can redirect a mount.  One line on stderr and
 * exit 1 on failure, 2 on bad usage.
 */
#include "carry.h"
#include "dmemfs-host.h"
#include "grub.h"
#include "nodepool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <mntent.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

#define PROG "dmemfs-host-setup"
#define SETUP_MOUNT_FLAGS (MS_NOSUID | MS_NODEV | MS_NOEXEC)
#define SETUP_LOCK DMEM_NODEPOOL_DIR ".lock"

/* What a run did, to undo on a failure: newest last. */
typedef enum { UNDO_RMDIR, UNDO_UMOUNT, UNDO_UNDEFINE, UNDO_DESTROY, UNDO_NO_AUTOSTART } UndoKind;
typedef struct {
	UndoKind kind;
	char *what; /* a path or a pool name */
} Undo;

typedef struct {
	DmemConfig *cfg;
	const char *uri;
	virConnectPtr conn;
	GArray *undo; /* Undo */
	guint mounts, pools, left;
	int lock; /* taken before the first change */
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

static gboolean libvirt_fail(GError **error, const char *what, const char *name)
{
	const virError *e = virGetLastError();

	return dmem_fail(error, "%s%s%s: %s", what, name ? " " : "", name ? name : "",
		         e && e->message ? e->message : "libvirt error");
}

/* ---- mount points ------------------------------------------------------ */

/* a directory we mount under: root's, and writable only by root unless sticky */
static gboolean safe_parent(int fd, const char *path, GError **error)
{
	struct stat st;

	if (fstat(fd, &st))
		return dmem_fail(error, "%s: %s", path, g_strerror(errno));
	if (st.st_uid != 0 || ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)))
		return dmem_fail(error, "%s is not root's, or others may write to it: not mounting "
			         "under it", path);
	return TRUE;
}

/*
 * Open @path (O_PATH) component by component, never through a symbolic
 * link, checking each directory on the way; with @create, make what is
 * missing (0755, undo entries).  @path is absolute and plain: no "." or
 * "..", no empty components, so that the mount table shows it as it is
 * written.  -1 with @error set on failure; with !@create, -1 and no error
 * when the path does not exist.
 */
static int open_mount_point(Setup *s, const char *path, gboolean create, GError **error)
{
	g_auto(GStrv) parts = NULL;
	g_autoptr(GString) sofar = g_string_new("");
	int fd;

	if (!g_path_is_absolute(path) || !path[1]) {
		dmem_fail(error, "mount point '%s' is not an absolute path below /", path);
		return -1;
	}
	parts = g_strsplit(path + 1, "/", -1);
	for (char **p = parts; *p; p++) {
		if (!**p || !strcmp(*p, ".") || !strcmp(*p, "..")) {
			dmem_fail(error, "mount point '%s' is not a plain path (no '.', '..' or '//', "
			          "no trailing '/')", path);
			return -1;
		}
	}
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		dmem_fail(error, "/: %s", g_strerror(errno));
		return -1;
	}
	for (char **p = parts; *p; p++) {
		const char *parent = sofar->len ? sofar->str : "/";
		struct stat st;
		int next;

		if (!safe_parent(fd, parent, error))
			goto err;
		g_string_append_printf(sofar, "/%s", *p);
		next = openat(fd, *p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (!create)
				goto err;
			if (mkdirat(fd, *p, 0755) == 0) {
				did(s, UNDO_RMDIR, sofar->str);
			} else if (errno != EEXIST) {
				dmem_fail(error, "mkdir %s: %s", sofar->str, g_strerror(errno));
				goto err;
			}
			next = openat(fd, *p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			int err = errno;

			if (!fstatat(fd, *p, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
				dmem_fail(error, "%s is a symbolic link: not mounting through it", sofar->str);
			else
				dmem_fail(error, "%s: %s", sofar->str, g_strerror(err));
			goto err;
		}
		close(fd);
		fd = next;
	}
	return fd;
err:
	close(fd);
	return -1;
}

/* whether @fd is the root of a mount, and of which file system type */
static gboolean mount_root(int fd, gboolean *dmemfs)
{
	struct statx stx;
	struct statfs sf;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) ||
	    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) || fstatfs(fd, &sf))
		return FALSE;
	*dmemfs = sf.f_type == DMEMFS_MAGIC;
	return stx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
}

/* the options of the mount at @path, the topmost when several are stacked */
static char *mount_options(const char *path)
{
	FILE *f = setmntent("/proc/self/mounts", "re");
	struct mntent *m;
	char *opts = NULL;

	if (!f)
		return NULL;
	while ((m = getmntent(f))) {
		if (!strcmp(m->mnt_dir, path)) {
			g_free(opts);
			opts = g_strdup(m->mnt_opts);
		}
	}
	endmntent(f);
	return opts;
}

static gboolean has_option(const char *opts, const char *want)
{
	g_auto(GStrv) v = g_strsplit(opts ? opts : "", ",", -1);

	return g_strv_contains((const char *const *)v, want);
}

static gboolean has_option_key(const char *opts, const char *key)
{
	g_auto(GStrv) v = g_strsplit(opts ? opts : "", ",", -1);

	for (char **o = v; *o; o++)
		if (g_str_has_prefix(*o, key))
			return TRUE;
	return FALSE;
}

static gboolean dir_is_empty(int fd)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	struct dirent *de;
	gboolean empty = d != NULL;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return FALSE;
	}
	while (empty && (de = readdir(d)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(d);
	return empty;
}

/*
 * dmemfs on @path with @opts (pagesize=..., and nodes=N for a node's
 * instance, which must be exactly that): kept when it is there with them,
 * refused when something else is.
 */
static gboolean ensure_mount(Setup *s, const char *path, const char *opts, gboolean ours,
			     GError **error)
{
	g_auto(GStrv) want = g_strsplit(opts, ",", -1);
	g_autofree char *have = NULL, *proc = NULL;
	gboolean dmemfs = FALSE, ok = FALSE;
	int fd = open_mount_point(s, path, TRUE, error);

	if (fd < 0)
		return FALSE;
	if (mount_root(fd, &dmemfs)) {
		struct statvfs sv;

		if (!dmemfs) {
			dmem_fail(error, "%s is a mount point of another file system, not dmemfs", path);
			goto out;
		}
		have = mount_options(path);
		for (char **w = want; *w; w++) {
			if (!has_option(have, *w)) {
				dmem_fail(error, "%s is dmemfs mounted with %s, not %s", path, have, opts);
				goto out;
			}
		}
		/* nodes=N is among @want; a size= limit would falsify the node's statfs */
		if (ours && has_option_key(have, "size=")) {
			dmem_fail(error, "%s is dmemfs mounted with %s: the statistics of a node want "
			          "%s and nothing else", path, have, opts);
			goto out;
		}
		if (!fstatvfs(fd, &sv) &&
		    (sv.f_flag & (ST_NOSUID | ST_NODEV | ST_NOEXEC)) !=
		    (ST_NOSUID | ST_NODEV | ST_NOEXEC)) {
			if (ours) {
				dmem_fail(error, "%s is mounted without nosuid,nodev,noexec", path);
				goto out;
			}
			g_printerr("dmemfs-host-setup: %s is mounted without nosuid,nodev,noexec: "
				   "kept\n", path);
		}
		ok = TRUE;
		goto out;
	}
	if (dmemfs) {
		dmem_fail(error, "%s is inside a dmemfs mount", path);
		goto out;
	}
	if (!dir_is_empty(fd)) {
		dmem_fail(error, "%s is not empty: not mounting dmemfs over it", path);
		goto out;
	}
	/* through the directory we checked, not the path again */
	proc = g_strdup_printf("/proc/self/fd/%d", fd);
	if (mount("none", proc, "dmemfs", SETUP_MOUNT_FLAGS, opts)) {
		int err = errno;

		dmem_fail(error, "mount -t dmemfs -o %s none %s: %s%s", opts, path, g_strerror(err),
		          err == ENODEV ? " (a kernel without dmemfs)" : "");
		goto out;
	}
	did(s, UNDO_UMOUNT, path);
	s->mounts++;
	ok = TRUE;
out:
	close(fd);
	return ok;
}

/* umount every dmemfs stacked on @path, then remove the directory */
static gboolean remove_instance(Setup *s, const char *path, GError **error)
{
	for (;;) {
		gboolean dmemfs = FALSE;
		int fd = open_mount_point(s, path, FALSE, error);
		gboolean root;

		if (fd < 0)
			return !*error;
		root = mount_root(fd, &dmemfs);
		close(fd);
		if (!root || !dmemfs)
			break;
		if (umount2(path, UMOUNT_NOFOLLOW))
			return dmem_fail(error, "umount %s: %s", path, g_strerror(errno));
	}
	if (rmdir(path) && errno != ENOENT)
		return dmem_fail(error, "rmdir %s: %s", path, g_strerror(errno));
	return TRUE;
}

/* ---- what is there: the pool, a live update ----------------------------- */

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
		dmem_fail(error, "no node has dmem (%s): boot the host with dmem=", cfg->sysfs_root);
		g_array_free(nodes, TRUE);
		return NULL;
	}
	return nodes;
}

static gboolean connect_rw(Setup *s, GError **error)
{
	if (!s->conn)
		s->conn = virConnectOpen(s->uri);
	return s->conn ? TRUE : libvirt_fail(error, "cannot connect to", s->uri);
}

/* dmem-node<N>: defined with our XML, started, autostarted */
static gboolean ensure_pool(Setup *s, guint node, GError **error)
{
	g_autofree char *name = dmem_nodepool_name(node);
	g_autofree char *xml = NULL;
	virStoragePoolPtr p = virStoragePoolLookupByName(s->conn, name);
	gboolean ok = FALSE;
	int active, autostart = 0;

	if (p) {
		g_autofree char *have = virStoragePoolGetXMLDesc(p, 0);

		if (!dmem_nodepool_xml_matches(have, DMEM_NODEPOOL_DIR, node)) {
			dmem_fail(error, "storage pool %s exists with another definition: not touching it",
			          name);
			goto out;
		}
		if (virStoragePoolGetAutostart(p, &autostart) < 0) {
			libvirt_fail(error, "cannot read the autostart flag of", name);
			goto out;
		}
	} else {
		xml = dmem_nodepool_xml(DMEM_NODEPOOL_DIR, node);
		p = virStoragePoolDefineXML(s->conn, xml, 0);
		if (!p) {
			libvirt_fail(error, "cannot define storage pool", name);
			goto out;
		}
		did(s, UNDO_UNDEFINE, name);
	}
	active = virStoragePoolIsActive(p);
	if (active < 0 || (!active && virStoragePoolCreate(p, 0) < 0)) {
		libvirt_fail(error, "cannot start storage pool", name);
		goto out;
	}
	if (!active)
		did(s, UNDO_DESTROY, name);
	if (!autostart) {
		if (virStoragePoolSetAutostart(p, 1) < 0) {
			libvirt_fail(error, "cannot autostart storage pool", name);
			goto out;
		}
		did(s, UNDO_NO_AUTOSTART, name);
	}
	s->pools++;
	ok = TRUE;
out:
	if (p)
		virStoragePoolFree(p);
	return ok;
}

/* Undo what this run did, newest first; FALSE when a step failed. */
static gboolean undo_all(Setup *s)
{
	gboolean ok = TRUE;

	for (guint i = s->undo->len; i-- > 0;) {
		const Undo *u = &g_array_index(s->undo, Undo, i);
		virStoragePoolPtr p = NULL;

		switch (u->kind) {
		case UNDO_RMDIR:
			ok &= !rmdir(u->what);
			break;
		case UNDO_UMOUNT:
			ok &= !umount2(u->what, UMOUNT_NOFOLLOW);
			break;
		case UNDO_UNDEFINE:
		case UNDO_DESTROY:
		case UNDO_NO_AUTOSTART:
			p = s->conn ? virStoragePoolLookupByName(s->conn, u->what) : NULL;
			if (!p)
				ok = FALSE;
			else if (u->kind == UNDO_DESTROY)
				ok &= virStoragePoolDestroy(p) == 0;
			else if (u->kind == UNDO_UNDEFINE)
				ok &= virStoragePoolUndefine(p) == 0;
			else
				ok &= virStoragePoolSetAutostart(p, 0) == 0;
			if (p)
				virStoragePoolFree(p);
			break;
		}
	}
	g_array_set_size(s->undo, 0);
	return ok;
}

/* ---- up and down ------------------------------------------------------- */

static int take_lock(GError **error);

static gboolean setup_up(Setup *s, gboolean pools, GError **error)
{
	g_autoptr(GArray) nodes = dmem_nodes(s->cfg, error);
	g_autoptr(DmemCarry) carry = NULL;
	DmemMountIter it = { 0 };

	if (!nodes)
		return FALSE;
	carry = dmem_carry_load(s->cfg, error);
	if (!carry || (s->lock = take_lock(error)) < 0)
		return FALSE;
	while (dmem_config_next_mount(s->cfg, &it)) {
		g_autofree char *opts = g_strdup_printf("pagesize=%s",
							dmem_pagesize_name(it.pagesize));

		/* its files come back with it: mount -o recover, by the restore */
		if (dmem_carry_mount(carry, it.path, NULL)) {
			g_printerr("dmemfs-host-setup: %s is carried by a host kernel update: left "
				   "for dmem-liveupdate --restore\n", it.path);
			s->left++;
			continue;
		}
		if (!ensure_mount(s, it.path, opts, FALSE, error))
			return FALSE;
	}
	for (guint i = 0; i < nodes->len; i++) {
		guint n = g_array_index(nodes, guint, i);
		g_autofree char *target = dmem_nodepool_target(DMEM_NODEPOOL_DIR, n);
		g_autofree char *opts = dmem_nodepool_mount_options(n);

		if (!ensure_mount(s, target, opts, TRUE, error))
			return FALSE;
	}
	if (!pools)
		return TRUE;
	if (!connect_rw(s, error))
		return FALSE;
	for (guint i = 0; i < nodes->len; i++)
		if (!ensure_pool(s, g_array_index(nodes, guint, i), error))
			return FALSE;
	return TRUE;
}

/* the pools dmem-node<N> defined as up defines them: stopped and undefined */
static gboolean remove_pools(Setup *s, GError **error)
{
	virStoragePoolPtr *pools = NULL;
	int n = virConnectListAllStoragePools(s->conn, &pools, 0);
	gboolean ok = TRUE;

	if (n < 0)
		return libvirt_fail(error, "cannot list the storage pools", NULL);
	for (int i = 0; i < n && ok; i++) {
		const char *name = virStoragePoolGetName(pools[i]);
		g_autofree char *xml = NULL;
		guint node;

		if (!dmem_nodepool_parse(name, &node) ||
		    !(xml = virStoragePoolGetXMLDesc(pools[i], VIR_STORAGE_XML_INACTIVE)) ||
		    !dmem_nodepool_xml_matches(xml, DMEM_NODEPOOL_DIR, node))
			continue;
		if (virStoragePoolIsActive(pools[i]) == 1 && virStoragePoolDestroy(pools[i]) < 0)
			ok = libvirt_fail(error, "cannot stop", name);
		else if (virStoragePoolIsPersistent(pools[i]) == 1 &&
			 virStoragePoolUndefine(pools[i]) < 0)
			ok = libvirt_fail(error, "cannot undefine", name);
		else
			s->pools++;
	}
	for (int i = 0; i < n; i++)
		virStoragePoolFree(pools[i]);
	g_free(pools);
	return ok;
}

static gboolean setup_down(Setup *s, GError **error)
{
	g_autoptr(GError) pools_err = NULL;
	gboolean pools_ok;

	if ((s->lock = take_lock(error)) < 0)
		return FALSE;
	pools_ok = connect_rw(s, &pools_err) && remove_pools(s, &pools_err);

	/* the instances go even when libvirt cannot be reached */
	for (guint node = 0; node < DMEM_MAX_NODES; node++) {
		g_autofree char *target = dmem_nodepool_target(DMEM_NODEPOOL_DIR, node);

		if (!remove_instance(s, target, error))
			return FALSE;
	}
	if (rmdir(DMEM_NODEPOOL_DIR) && errno != ENOENT && errno != ENOTEMPTY)
		return dmem_fail(error, "rmdir %s: %s", DMEM_NODEPOOL_DIR, g_strerror(errno));
	if (!pools_ok)
		return dmem_fail(error, "%s (the instances under %s are unmounted)", pools_err->message,
			         DMEM_NODEPOOL_DIR);
	return TRUE;
}

/* one run at a time */
static int take_lock(GError **error)
{
	int fd = open(SETUP_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0 || flock(fd, LOCK_EX)) {
		dmem_fail(error, "%s: %s", SETUP_LOCK, g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* grub [DMEM | --recommend --guest SHAPE... [--reserve SIZE]] */
static int grub(int argc, char **argv, gboolean recommend, char **guests, const char *reserve,
		const char *file)
{
	g_autofree char *value = NULL;
	g_autoptr(GError) e = NULL;

	if (argc != (recommend ? 2 : 3) || (!recommend && (guests || reserve)) ||
	    (recommend && !guests) || !*file) {
		return dmem_cli_fail(PROG, 2, "grub takes a dmem= value, or --recommend with "
				     "--guest SHAPE (see --help)");
	}
	value = recommend ? setup_grub_recommend(guests, reserve, &e) : g_strdup(argv[2]);
	if (!value || !setup_grub_write(file, value, &e))
		return dmem_cli_fail(PROG, 1, "grub: %s", e->message);
	printf("dmemfs-host-setup: grub: DMEM=\"%s\" in %s; run update-grub and reboot into "
	       "the dmemfs kernel\n", value, file);
	return 0;
}

int main(int argc, char **argv)
{
	g_autofree char *config = NULL, *uri = NULL, *reserve = NULL, *grub_file = NULL;
	g_auto(GStrv) guests = NULL;
	gboolean recommend = FALSE;
	const GOptionEntry entries[] = {
		{ "config", 0, 0, G_OPTION_ARG_FILENAME, &config, "configuration file (default "
		  DMEM_DEFAULT_CONFIG ")", "FILE" },
		{ "connect", 0, 0, G_OPTION_ARG_STRING, &uri, "libvirt URI (default qemu:///system)",
		  "URI" },
		{ "recommend", 0, 0, G_OPTION_ARG_NONE, &recommend, "grub: the dmem= that "
		  "dmem-capacity --recommend prints", NULL },
		{ "guest", 0, 0, G_OPTION_ARG_STRING_ARRAY, &guests, "grub --recommend: a guest "
		  "shape (repeatable, as dmem-capacity --guest)", "SHAPE" },
		{ "reserve", 0, 0, G_OPTION_ARG_STRING, &reserve, "grub --recommend: what the host "
		  "keeps (as dmem-capacity --reserve)", "SIZE" },
		{ "grub-file", 0, 0, G_OPTION_ARG_FILENAME, &grub_file, "grub: the snippet (default "
		  SETUP_GRUB_FILE ")", "FILE" },
		G_OPTION_ENTRY_NULL
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("mount|up|down|grub [DMEM]");
	g_autoptr(GError) e = NULL;
	g_autoptr(DmemConfig) cfg = NULL;
	Setup s = { .lock = -1 };
	gboolean ok, up, pools;

	g_option_context_add_main_entries(ctx, entries, NULL);
	g_option_context_set_summary(ctx, "mount: mount dmemfs at the configured mount points and "
				     "a nodes=N instance per node.\nup: the same, and define the "
				     "libvirt storage pools dmem-node<N>.\ndown: take the pools and "
				     "the instances away.\ngrub DMEM, grub --recommend --guest SHAPE: "
				     "the dmem= to boot with, in " SETUP_GRUB_FILE ".");
	if (!g_option_context_parse(ctx, &argc, &argv, &e))
		return dmem_cli_fail(PROG, 2, "%s (see --help)", e->message);
	if (argc >= 2 && !strcmp(argv[1], "grub") && !config && !uri)
		return grub(argc, argv, recommend, guests, reserve,
			    grub_file ? grub_file : SETUP_GRUB_FILE);
	if (argc != 2 || (strcmp(argv[1], "mount") && strcmp(argv[1], "up") &&
			  strcmp(argv[1], "down")) || recommend || guests || reserve || grub_file) {
		return dmem_cli_fail(PROG, 2, "say mount, up, down or grub; --recommend, --guest, "
				     "--reserve and --grub-file go with grub only, --config and "
				     "--connect not with it (see --help)");
	}
	up = strcmp(argv[1], "down") != 0;
	pools = !strcmp(argv[1], "up");
	cfg = config ? dmem_config_load_file(config, TRUE, &e) : dmem_config_load(&e);
	if (!cfg)
		return dmem_cli_error(PROG, e);
	virSetErrorFunc(NULL, quiet_libvirt);
	s.cfg = cfg;
	s.uri = uri ? uri : "qemu:///system";
	s.undo = g_array_new(FALSE, FALSE, sizeof(Undo));
	g_array_set_clear_func(s.undo, undo_clear);
	ok = up ? setup_up(&s, pools, &e) : setup_down(&s, &e);
	if (!ok && up)
		dmem_cli_fail(PROG, 1, "%s (%s)", e->message,
			      undo_all(&s) ? "nothing changed" : "partly undone: see the mounts and "
			      "storage pools");
	else if (!ok)
		dmem_cli_error(PROG, e);
	if (s.conn)
		virConnectClose(s.conn);
	g_array_free(s.undo, TRUE);
	if (s.lock >= 0)
		close(s.lock);
	if (!ok)
		return 1;
	if (up)
		printf("dmemfs-host-setup: %s: %u mount(s) made, %u storage pool(s) dmem-node<N> "
		       "ready%s\n", argv[1], s.mounts, s.pools,
		       s.left ? ", mount points carried by a live update left alone" : "");
	else
		printf("dmemfs-host-setup: down: %u storage pool(s) dmem-node<N> removed\n",
		       s.pools);
	return 0;
}
