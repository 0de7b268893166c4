// SPDX-License-Identifier: GPL-2.0-or-later
#include "hook.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_dir(const char *path)
{
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

gboolean hook_release(const HookEnv *env, const char *uuid, GError **error)
{
	g_autoptr(GString) errs = g_string_new(NULL);

	for (int i = 0; i < DMEM_N_PAGESIZES; i++) {
		for (guint j = 0; j < env->cfg->mounts[i]->len; j++) {
			const char *m = g_ptr_array_index(env->cfg->mounts[i], j);
			g_autoptr(GError) e = NULL;
			int fd = open_dir(m);

			if (fd < 0)
				continue; /* not mounted: nothing of ours there */
			if (!dmem_remove_domain_dir(fd, uuid, &e))
				g_string_append_printf(errs, "%s%s: %s", errs->len ? "; " : "", m,
						       e->message);
			close(fd);
		}
	}
	if (errs->len) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "release: %s", errs->str);
		return FALSE;
	}
	return TRUE;
}

/* One backend's file, created and preallocated by a thread of its own. */
typedef struct {
	const HookEnv *env;
	const DomainPlan *plan;
	const PlanBackend *b;
	int dfd;
	gboolean ok;
	GError *error;
} CreateJob;

static gpointer create_job(gpointer data)
{
	CreateJob *j = data;

	/* virtio-mem: QEMU allocates the blocks it plugs, the file stays sparse */
	j->ok = dmem_create_file(j->dfd, j->b->id, j->b->size, !j->b->virtio_mem,
				 j->plan->pagesize, &j->b->policy, j->env->uid, j->env->gid,
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
static gboolean create_files(const HookEnv *env, const DomainPlan *plan, int dfd,
			     GError **error)
{
	guint n = plan->backends->len;
	g_autofree CreateJob *jobs = g_new0(CreateJob, n);
	g_autofree GThread **threads = g_new0(GThread *, n);
	gboolean ok = TRUE;

	for (guint i = 0; i < n; i++) {
		jobs[i] = (CreateJob){ .env = env, .plan = plan, .dfd = dfd,
				       .b = g_ptr_array_index(plan->backends, i) };
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
			g_propagate_error(error, g_steal_pointer(&jobs[i].error));
			ok = FALSE;
		}
		g_clear_error(&jobs[i].error);
	}
	return ok;
}

gboolean hook_prepare(const HookEnv *env, const DomainPlan *plan, GError **error)
{
	g_autoptr(GArray) stats = NULL;
	g_autoptr(GError) e = NULL;
	const char *mount;
	int mfd = -1, dfd = -1;
	gboolean created = FALSE;

	mount = dmem_config_mount(env->cfg, plan->pagesize, plan->mount, error);
	if (!mount)
		return FALSE;
	mfd = open_dir(mount);
	if (mfd < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: %s", mount, g_strerror(errno));
		return FALSE;
	}
	if (!env->ops->check_fs(mfd, plan->pagesize, &e)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: %s", mount, e->message);
		goto fail;
	}
	/* leftovers of a crash before release: give their dpages back first */
	if (!hook_release(env, plan->uuid, error))
		goto fail;
	stats = dmem_stats_read(env->cfg->sysfs_root, error);
	if (!stats || !plan_admit(plan, stats, error))
		goto fail;
	if (mkdirat(mfd, plan->uuid, 0700) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "mkdir %s/%s: %s", mount,
			    plan->uuid, g_strerror(errno));
		goto fail;
	}
	created = TRUE;
	dfd = openat(mfd, plan->uuid, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* root-owned, qemu group may only traverse: QEMU cannot add files */
	if (dfd < 0 || fchown(dfd, (uid_t)-1, env->gid) < 0 || fchmod(dfd, 0710) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s/%s: %s", mount, plan->uuid,
			    g_strerror(errno));
		goto fail;
	}
	if (!create_files(env, plan, dfd, &e)) {
		g_set_error(error, DMEM_ERROR, e->code, "%s/%s/%s", mount, plan->uuid, e->message);
		goto fail;
	}
	close(dfd);
	close(mfd);
	return TRUE;
fail:
	if (dfd >= 0)
		close(dfd);
	if (created)
		dmem_remove_domain_dir(mfd, plan->uuid, NULL);
	close(mfd);
	return FALSE;
}

gboolean hook_reconnect(const HookEnv *env, const DomainPlan *plan, GError **error)
{
	g_autoptr(GString) missing = g_string_new(NULL);
	const char *mount = dmem_config_mount(env->cfg, plan->pagesize, plan->mount, error);

	if (!mount)
		return FALSE;
	for (guint i = 0; i < plan->backends->len; i++) {
		const PlanBackend *b = g_ptr_array_index(plan->backends, i);
		g_autofree char *p = g_build_filename(mount, plan->uuid, b->id, NULL);
		struct stat st;

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
