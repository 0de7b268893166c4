// SPDX-License-Identifier: GPL-2.0-or-later
/* /etc/dmemfs-host.conf (GKeyFile) and its environment overrides. */
#include "dmemfs-host.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>

static const char *const default_mounts[DMEM_N_PAGESIZES] = {
	"/run/dmemfs/4K", "/run/dmemfs/2M", "/run/dmemfs/1G"
};

void dmem_config_free(DmemConfig *cfg)
{
	if (!cfg)
		return;
	for (int i = 0; i < DMEM_N_PAGESIZES; i++)
		if (cfg->mounts[i])
			g_ptr_array_unref(cfg->mounts[i]);
	g_free(cfg->path);
	g_free(cfg->qemu_binary);
	g_free(cfg->qemu_user);
	g_free(cfg->qemu_group);
	g_free(cfg->sysfs_root);
	g_free(cfg->state_dir);
	g_free(cfg);
}

static gboolean set_mounts(DmemConfig *cfg, int i, char **list, const char *where,
			   GError **error)
{
	g_ptr_array_set_size(cfg->mounts[i], 0);
	for (char **p = list; p && *p; p++) {
		g_autofree char *m = g_strstrip(g_strdup(*p));

		if (!*m)
			continue;
		if (!g_path_is_absolute(m)) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "%s: mount point '%s' for %s is not absolute", where, m,
				    dmem_pagesize_name(dmem_pagesizes[i]));
			return FALSE;
		}
		g_ptr_array_add(cfg->mounts[i], g_canonicalize_filename(m, "/"));
	}
	return TRUE;
}

static gboolean get_string(GKeyFile *kf, const char *group, const char *key, char **dst,
			   const char *path, GError **error)
{
	g_autoptr(GError) e = NULL;
	char *v = g_key_file_get_string(kf, group, key, &e);

	if (!v) {
		if (g_error_matches(e, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND) ||
		    g_error_matches(e, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND))
			return TRUE;
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: [%s] %s: %s", path,
			    group, key, e->message);
		return FALSE;
	}
	g_free(*dst);
	*dst = g_strstrip(v);
	return TRUE;
}

/*
 * The keys each group may hold.  A key file keeps a misspelt key ("2m=")
 * or a second value of one quietly, and the setting would not be what
 * the administrator wrote: both are errors.
 */
static const struct {
	const char *group;
	const char *keys[5];
} config_keys[] = {
	{ "mounts", { "4K", "2M", "1G" } },
	{ "qemu", { "binary", "user", "group", "confinement" } },
	{ "sysfs", { "root" } },
	{ "wrapper", { "default_pagesize" } },
	{ "liveupdate", { "state_dir" } },
};

static gboolean check_keys(GKeyFile *kf, const char *path, GError **error)
{
	g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);

	for (guint i = 0; groups[i]; i++) {
		g_auto(GStrv) keys = g_key_file_get_keys(kf, groups[i], NULL, NULL);
		guint g = 0;

		while (g < G_N_ELEMENTS(config_keys) && strcmp(config_keys[g].group, groups[i]))
			g++;
		if (g == G_N_ELEMENTS(config_keys)) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: unknown group [%s]",
				    path, groups[i]);
			return FALSE;
		}
		for (guint k = 0; keys && keys[k]; k++) {
			guint n = 0;

			while (n < G_N_ELEMENTS(config_keys[g].keys) && config_keys[g].keys[n] &&
			       strcmp(config_keys[g].keys[n], keys[k]))
				n++;
			if (n == G_N_ELEMENTS(config_keys[g].keys) || !config_keys[g].keys[n]) {
				g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
					    "%s: [%s] unknown key '%s'", path, groups[i], keys[k]);
				return FALSE;
			}
			if (g_strv_contains((const char *const *)keys + k + 1, keys[k])) {
				g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
					    "%s: [%s] %s is set more than once", path, groups[i],
					    keys[k]);
				return FALSE;
			}
		}
	}
	return TRUE;
}

DmemConfig *dmem_config_load_file(const char *path, gboolean apply_env, GError **error)
{
	g_autoptr(DmemConfig) cfg = g_new0(DmemConfig, 1);
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) e = NULL;
	g_autofree char *dps = NULL, *conf = NULL;

	for (int i = 0; i < DMEM_N_PAGESIZES; i++) {
		cfg->mounts[i] = g_ptr_array_new_with_free_func(g_free);
		g_ptr_array_add(cfg->mounts[i], g_strdup(default_mounts[i]));
	}
	cfg->qemu_binary = g_strdup("/usr/bin/qemu-system-x86_64");
	cfg->qemu_user = g_strdup("libvirt-qemu");
	cfg->sysfs_root = g_strdup("/sys/kernel/mm/dmem");
	cfg->default_pagesize = dmem_pagesizes[1];
	cfg->state_dir = g_strdup("/var/lib/dmemfs-host/liveupdate");

	if (path && !g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &e)) {
		if (!g_error_matches(e, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: %s", path,
				    e->message);
			return NULL;
		}
		path = NULL; /* no file: defaults */
	}
	if (path) {
		cfg->path = g_strdup(path);
		if (!check_keys(kf, path, error))
			return NULL;
		for (int i = 0; i < DMEM_N_PAGESIZES; i++) {
			const char *key = dmem_pagesize_name(dmem_pagesizes[i]);
			g_auto(GStrv) list = g_key_file_get_string_list(kf, "mounts", key, NULL,
									NULL);

			if (list && !set_mounts(cfg, i, list, path, error))
				return NULL;
		}
		if (!get_string(kf, "qemu", "binary", &cfg->qemu_binary, path, error) ||
		    !get_string(kf, "qemu", "user", &cfg->qemu_user, path, error) ||
		    !get_string(kf, "qemu", "group", &cfg->qemu_group, path, error) ||
		    !get_string(kf, "sysfs", "root", &cfg->sysfs_root, path, error) ||
		    !get_string(kf, "liveupdate", "state_dir", &cfg->state_dir, path, error) ||
		    !get_string(kf, "wrapper", "default_pagesize", &dps, path, error) ||
		    !get_string(kf, "qemu", "confinement", &conf, path, error))
			return NULL;
		if (conf && !strcmp(conf, "none")) {
			cfg->confinement = DMEM_CONFINE_NONE;
		} else if (conf && strcmp(conf, "apparmor")) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "%s: [qemu] confinement '%s' is not apparmor or none", path, conf);
			return NULL;
		}
		if (dps && !dmem_pagesize_parse(dps, &cfg->default_pagesize)) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "%s: [wrapper] default_pagesize '%s' is not 4K, 2M or 1G",
				    path, dps);
			return NULL;
		}
	}
	if (apply_env) {
		const char *v = g_getenv("DMEMFS_SYSFS_ROOT");

		if (v && *v) {
			g_free(cfg->sysfs_root);
			cfg->sysfs_root = g_strdup(v);
		}
		for (int i = 0; i < DMEM_N_PAGESIZES; i++) {
			g_autofree char *var = g_strdup_printf(
				"DMEMFS_%s_MOUNT", dmem_pagesize_name(dmem_pagesizes[i]));
			char *one[] = { (char *)g_getenv(var), NULL };

			if (one[0] && *one[0] && !set_mounts(cfg, i, one, var, error))
				return NULL;
		}
	}
	if (!g_path_is_absolute(cfg->state_dir)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "%s: [liveupdate] state_dir '%s' is not an absolute path",
			    cfg->path ? cfg->path : "config", cfg->state_dir);
		return NULL;
	}
	if (!g_path_is_absolute(cfg->qemu_binary)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "%s: [qemu] binary '%s' is not an absolute path",
			    cfg->path ? cfg->path : "config", cfg->qemu_binary);
		return NULL;
	}
	return g_steal_pointer(&cfg);
}

DmemConfig *dmem_config_load(GError **error)
{
	const char *path = g_getenv("DMEMFS_HOST_CONF");

	return dmem_config_load_file(path && *path ? path : DMEM_DEFAULT_CONFIG, TRUE, error);
}

const char *dmem_config_mount(const DmemConfig *cfg, guint64 pagesize, const char *wanted,
			      GError **error)
{
	int i = dmem_pagesize_index(pagesize);
	g_autofree char *canon = NULL;

	if (i < 0 || cfg->mounts[i]->len == 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "no dmemfs mount configured for page size %s",
			    i < 0 ? "?" : dmem_pagesize_name(pagesize));
		return NULL;
	}
	if (!wanted)
		return g_ptr_array_index(cfg->mounts[i], 0);
	/* the XML is untrusted: only mounts the administrator configured */
	if (g_path_is_absolute(wanted)) {
		canon = g_canonicalize_filename(wanted, "/");
		for (guint j = 0; j < cfg->mounts[i]->len; j++)
			if (strcmp(canon, g_ptr_array_index(cfg->mounts[i], j)) == 0)
				return g_ptr_array_index(cfg->mounts[i], j);
	}
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
		    "mount '%s' is not a configured %s dmemfs mount", wanted,
		    dmem_pagesize_name(pagesize));
	return NULL;
}

gboolean dmem_config_next_mount(const DmemConfig *cfg, DmemMountIter *it)
{
	for (; it->i < DMEM_N_PAGESIZES; it->i++, it->j = 0) {
		if (it->j < cfg->mounts[it->i]->len) {
			it->path = g_ptr_array_index(cfg->mounts[it->i], it->j++);
			it->pagesize = dmem_pagesizes[it->i];
			return TRUE;
		}
	}
	return FALSE;
}

gboolean dmem_config_qemu_ids(const DmemConfig *cfg, uid_t *uid, gid_t *gid, GError **error)
{
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	char buf[16384];
	int rc;

	rc = getpwnam_r(cfg->qemu_user, &pw, buf, sizeof(buf), &pwp);
	if (!pwp) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "qemu user '%s' not found%s%s",
			    cfg->qemu_user, rc ? ": " : "", rc ? g_strerror(rc) : "");
		return FALSE;
	}
	*uid = pw.pw_uid;
	*gid = pw.pw_gid;
	if (cfg->qemu_group) {
		rc = getgrnam_r(cfg->qemu_group, &gr, buf, sizeof(buf), &grp);
		if (!grp) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "qemu group '%s' not found%s%s", cfg->qemu_group,
				    rc ? ": " : "", rc ? g_strerror(rc) : "");
			return FALSE;
		}
		*gid = gr.gr_gid;
	}
	return TRUE;
}
