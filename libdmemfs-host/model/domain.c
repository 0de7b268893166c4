// SPDX-License-Identifier: GPL-2.0-or-later
#include "domain.h"

#include "aaprofile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* a 0.35 <mount>/<uuid> of this domain, on every mount, to its new name */
static void adopt_legacy(const DomainEnv *env, const char *uuid)
{
	DmemMountIter it = { 0 };

	while (dmem_config_next_mount(env->cfg, &it)) {
		g_autoptr(GError) e = NULL;
		int fd = dmem_mount_open(it.path);

		if (fd < 0)
			continue;
		/* on stderr, in libvirt's log: the old directory's dpages stay held */
		if (!dmem_domain_dir_adopt(fd, uuid, &e))
			g_printerr("dmemfs: %s: %s\n", it.path, e->message);
		close(fd);
	}
}

gboolean domain_adopt_all(const DomainEnv *env, GError **error)
{
	g_autoptr(GString) errs = g_string_new(NULL);
	DmemMountIter it = { 0 };

	while (dmem_config_next_mount(env->cfg, &it)) {
		g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
		int fd = open(it.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct dirent *de;
		DIR *d;

		if (fd < 0)
			continue; /* not mounted: nothing there */
		d = fdopendir(dup(fd));
		while (d && (de = readdir(d))) {
			g_autofree char *canon = dmem_uuid_normalize(de->d_name);

			if (canon && !strcmp(canon, de->d_name))
				g_ptr_array_add(names, g_strdup(de->d_name));
		}
		if (d)
			closedir(d);
		for (guint i = 0; i < names->len; i++) {
			g_autoptr(GError) e = NULL;

			if (!dmem_domain_dir_adopt(fd, g_ptr_array_index(names, i), &e))
				g_string_append_printf(errs, "%s%s: %s", errs->len ? "; " : "",
						       it.path, e->message);
		}
		close(fd);
	}
	if (errs->len) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s", errs->str);
		return FALSE;
	}
	return TRUE;
}

gboolean domain_carried(const DomainEnv *env, const char *uuid)
{
	DmemMountIter it = { 0 };

	adopt_legacy(env, uuid);

	while (dmem_config_next_mount(env->cfg, &it)) {
		int fd = dmem_mount_open(it.path);
		gboolean carried = fd >= 0 && dmem_domain_carried(env->cfg, fd, uuid);

		if (fd >= 0)
			close(fd);
		if (carried)
			return TRUE;
	}
	return FALSE;
}

gboolean domain_release(const DomainEnv *env, const char *uuid, GError **error)
{
	g_autoptr(GString) errs = g_string_new(NULL);
	DmemMountIter it = { 0 };

	adopt_legacy(env, uuid);

	while (dmem_config_next_mount(env->cfg, &it)) {
		g_autoptr(GError) e = NULL;
		int fd = dmem_mount_open(it.path);

		if (fd < 0)
			continue; /* not mounted: nothing of ours there */
		if (!dmem_remove_domain_dir(fd, uuid, &e))
			g_string_append_printf(errs, "%s%s: %s", errs->len ? "; " : "", it.path,
					       e->message);
		close(fd);
	}
	if (errs->len) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "release: %s", errs->str);
		return FALSE;
	}
	return TRUE;
}

/* The mount of one page size that a domain uses, and its <uuid> directory. */
typedef struct {
	const char *path;
	int mfd, dfd;
	gboolean created;
} DomMount;

/* One backend's file, created and preallocated by a thread of its own. */
typedef struct {
	const DomainEnv *env;
	const PlanBackend *b;
	const DomMount *mount; /* of the backend's page size */
	gboolean ok;
	GError *error;
} CreateJob;

static gpointer create_job(gpointer data)
{
	CreateJob *j = data;

	/* virtio-mem: QEMU allocates the blocks it plugs, the file stays sparse */
	j->ok = dmem_create_file(j->mount->dfd, j->b->id, j->b->size, !j->b->virtio_mem,
				 j->b->pagesize, &j->b->policy, j->env->uid, j->env->gid,
				 j->env->ops, &j->error);
	return NULL;
}

/*
 * Create every backend's file, all at once: each thread allocates under
 * its own cell's policy, so the cells' nodes (and what the kernel still
 * has to zero on each) work in parallel instead of one after another.
 * The first failure in backend order is the error; the caller removes
 * whatever was created.
 */
static gboolean create_files(const DomainEnv *env, const DomainPlan *plan, const DomMount *m,
			     GError **error)
{
	guint n = plan->backends->len;
	g_autofree CreateJob *jobs = g_new0(CreateJob, n);
	g_autofree GThread **threads = g_new0(GThread *, n);
	gboolean ok = TRUE;

	for (guint i = 0; i < n; i++) {
		const PlanBackend *b = g_ptr_array_index(plan->backends, i);

		jobs[i] = (CreateJob){ .env = env, .b = b,
				       .mount = &m[dmem_pagesize_index(b->pagesize)] };
		/* no thread to be had: do it here, it is only slower */
		if (n > 1)
			threads[i] = g_thread_try_new("dmem-prealloc", create_job, &jobs[i], NULL);
		if (!threads[i])
			create_job(&jobs[i]);
	}
	for (guint i = 0; i < n; i++) {
		if (threads[i])
			g_thread_join(threads[i]);
		if (!jobs[i].ok && ok) {
			g_set_error(error, DMEM_ERROR, jobs[i].error->code, "%s/%s/%s",
				    jobs[i].mount->path, plan->uuid, jobs[i].error->message);
			ok = FALSE;
		}
		g_clear_error(&jobs[i].error);
	}
	return ok;
}

/* the configured mount of @b's page size (the domain's may be named in its metadata) */
static const char *backend_mount(const DomainEnv *env, const DomainPlan *plan, const PlanBackend *b,
				 GError **error)
{
	return dmem_config_mount(env->cfg, b->pagesize,
				 b->pagesize == plan->pagesize ? plan->mount : NULL, error);
}

/* "2M /run/dmemfs/2M, 4K /run/dmemfs/4K": the page sizes served here */
static char *mounted_sizes(const DomainEnv *env)
{
	g_autoptr(GString) s = g_string_new(NULL);
	DmemMountIter it = { 0 };

	while (dmem_config_next_mount(env->cfg, &it)) {
		int fd = dmem_mount_open(it.path);

		if (fd >= 0 && env->ops->check_fs(fd, it.pagesize, NULL))
			g_string_append_printf(s, "%s%s %s", s->len ? ", " : "",
					       dmem_pagesize_name(it.pagesize), it.path);
		if (fd >= 0)
			close(fd);
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/*
 * Open the mount of every page size the plan uses: the domain's own (its
 * metadata may name which) and those of backends with a page size of
 * their own, each checked to be a dmemfs of that size.
 */
static gboolean open_mounts(const DomainEnv *env, const DomainPlan *plan, DomMount *m,
			    GError **error)
{
	for (guint k = 0; k < plan->backends->len; k++) {
		const PlanBackend *b = g_ptr_array_index(plan->backends, k);
		int i = dmem_pagesize_index(b->pagesize);
		g_autoptr(GError) e = NULL;
		g_autofree char *have = NULL;

		if (m[i].mfd >= 0)
			continue;
		m[i].path = backend_mount(env, plan, b, &e);
		if (m[i].path && (m[i].mfd = dmem_mount_open(m[i].path)) < 0)
			g_set_error_literal(&e, DMEM_ERROR, DMEM_ERROR_FAILED, g_strerror(errno));
		if (m[i].mfd >= 0 && env->ops->check_fs(m[i].mfd, b->pagesize, &e))
			continue;
		have = mounted_sizes(env);
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "%s: page size %s: %s%s%s (dmemfs mounted here: %s)", b->id,
			    dmem_pagesize_name(b->pagesize), m[i].path ? m[i].path : "",
			    m[i].path ? ": " : "", e->message,
			    *have ? have : "none");
		return FALSE;
	}
	return TRUE;
}

gboolean domain_prepare(const DomainEnv *env, const DomainPlan *plan, GError **error)
{
	g_autoptr(GArray) stats = NULL;
	DomMount m[DMEM_N_PAGESIZES];
	gboolean ok = FALSE;

	for (int i = 0; i < DMEM_N_PAGESIZES; i++)
		m[i] = (DomMount){ .mfd = -1, .dfd = -1 };
	if (!open_mounts(env, plan, m, error))
		goto out;
	/* leftovers of a crash before release: give their dpages back first */
	if (!domain_release(env, plan->uuid, error))
		goto out;
	stats = dmem_stats_read(env->cfg->sysfs_root, error);
	if (!stats || !plan_admit(plan, stats, error))
		goto out;
	for (int i = 0; i < DMEM_N_PAGESIZES; i++) {
		if (m[i].mfd < 0)
			continue;
		m[i].dfd = dmem_domain_dir_create(m[i].mfd, plan->uuid, env->gid, error);
		if (m[i].dfd < 0) {
			g_prefix_error(error, "%s: ", m[i].path);
			goto out;
		}
		m[i].created = TRUE;
	}
	ok = create_files(env, plan, m, error);
out:
	for (int i = 0; i < DMEM_N_PAGESIZES; i++) {
		if (m[i].dfd >= 0)
			close(m[i].dfd);
		if (!ok && m[i].created)
			dmem_remove_domain_dir(m[i].mfd, plan->uuid, NULL);
		if (m[i].mfd >= 0)
			close(m[i].mfd);
	}
	return ok;
}

gboolean domain_reconnect(const DomainEnv *env, const DomainPlan *plan, GError **error)
{
	g_autoptr(GString) missing = g_string_new(NULL);

	adopt_legacy(env, plan->uuid);

	for (guint i = 0; i < plan->backends->len; i++) {
		const PlanBackend *b = g_ptr_array_index(plan->backends, i);
		const char *mount = backend_mount(env, plan, b, error);
		g_autofree char *p = NULL;
		struct stat st;

		if (!mount)
			return FALSE;
		p = dmem_domain_path(mount, plan->uuid, b->id);
		if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode) || (guint64)st.st_size < b->size)
			g_string_append_printf(missing, "%s%s", missing->len ? ", " : "", p);
	}
	if (missing->len) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "domain %s: dmemfs files missing or short: %s", plan->uuid, missing->str);
		return FALSE;
	}
	return TRUE;
}

gboolean domain_profile_avoids_dmem(const DmemConfig *cfg, const char *uuid, GError **error)
{
	g_autofree char *path = g_strdup_printf("%s/libvirt-%s.files", DMEM_AA_PROFILE_DIR, uuid);
	g_autofree char *rules = NULL;
	g_autoptr(GPtrArray) dirs = dmem_aa_dmemfs_dirs(cfg);
	g_autoptr(GError) e = NULL;

	if (!g_file_get_contents(path, &rules, NULL, &e))
		return dmem_fail(error, "no AppArmor profile from libvirt for it (%s): its QEMU would "
				 "run as the qemu user that owns every dmem guest's memory; is "
				 "libvirt's AppArmor driver on (security_driver in qemu.conf)?",
				 e->message);
	return dmem_aa_rules_avoid(rules, (char *const *)dirs->pdata, error);
}

/* the main profile domain @plan should have, from libvirt's template */
static char *main_profile(const DmemConfig *cfg, const DomainPlan *plan, GError **error)
{
	g_autofree char *tpath = g_build_filename(DMEM_AA_PROFILE_DIR, "TEMPLATE.qemu", NULL);
	g_autofree char *template = NULL, *shortname = NULL, *rules = NULL;
	g_autoptr(GPtrArray) dirs = dmem_aa_dmemfs_dirs(cfg);
	g_autoptr(GError) e = NULL;

	if (!g_file_get_contents(tpath, &template, NULL, &e))
		return dmem_fail(error, "libvirt's AppArmor template: %s", e->message), NULL;
	if (plan->domid >= 0 && plan->name)
		shortname = dmem_aa_short_name(plan->domid, plan->name);
	rules = dmem_aa_deny_rules((char *const *)dirs->pdata, plan->uuid, shortname, error);
	return rules ? dmem_aa_main_profile(template, plan->uuid, rules, error) : NULL;
}

/* the profile is named as the domain's directory: libvirt-<uuid> */
static char *main_profile_path(const char *uuid)
{
	g_autofree char *name = dmem_domain_dirname(uuid);

	return g_build_filename(DMEM_AA_PROFILE_DIR, name, NULL);
}

gboolean domain_write_profile(const DmemConfig *cfg, const DomainPlan *plan, GError **error)
{
	g_autofree char *text = main_profile(cfg, plan, error);
	g_autofree char *path = main_profile_path(plan->uuid);
	g_autoptr(GError) e = NULL;

	if (!text)
		return FALSE;
	if (!g_file_set_contents_full(path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, &e))
		return dmem_fail(error, "its AppArmor profile: %s", e->message);
	return TRUE;
}

gboolean domain_profile_denies_others(const DmemConfig *cfg, const DomainPlan *plan,
				      GError **error)
{
	g_autofree char *want = main_profile(cfg, plan, error);
	g_autofree char *path = main_profile_path(plan->uuid);
	g_autofree char *have = NULL;

	if (!want)
		return FALSE;
	if (!g_file_get_contents(path, &have, NULL, NULL) || strcmp(have, want))
		return dmem_fail(error, "its AppArmor profile %s is not the one the hook wrote at "
				 "prepare: without its deny rules a device hot-plugged later could "
				 "name another guest's memory", path);
	return TRUE;
}

static gboolean on_dmemfs(const char *path, char **where)
{
	guint64 fstype;

	g_clear_pointer(where, g_free);
	return dmem_path_fstype(path, &fstype, where) && fstype == DMEMFS_MAGIC;
}

gboolean domain_paths_off_dmemfs(const DomainPlan *plan, GError **error)
{
	for (guint i = 0; plan->paths && i < plan->paths->len; i++) {
		const char *raw = g_ptr_array_index(plan->paths, i);
		g_autofree char *where = NULL, *shown = g_strescape(raw, NULL);
		g_autofree char *path = g_strstrip(g_strdup(raw));

		/* as libvirt takes it (untrimmed), and without the blanks around it */
		if (on_dmemfs(raw, &where) || (strcmp(path, raw) && on_dmemfs(path, &where)))
			return dmem_fail(error, "domain XML names '%s', on the dmemfs mount at or "
					 "above %s: a guest's memory is only ever its memory backing, "
					 "never a disk, serial or other file", shown, where);
	}
	return TRUE;
}

gboolean domain_on_prepare(const DomainEnv *env, const DomainPlan *plan, GError **error)
{
	if (domain_carried(env, plan->uuid))
		return domain_reconnect(env, plan, error);
	return domain_prepare(env, plan, error);
}

gboolean domain_on_release(const DomainEnv *env, const char *uuid, GError **error)
{
	if (domain_carried(env, uuid))
		return TRUE;
	return domain_release(env, uuid, error);
}
