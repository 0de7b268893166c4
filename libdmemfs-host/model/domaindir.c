// SPDX-License-Identifier: GPL-2.0-or-later
/* A domain's directory on a dmemfs mount: <mount>/libvirt-<uuid>/<id> and the mark. */
#include "carry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *dmem_domain_dirname(const char *uuid)
{
	return g_strconcat(DMEM_DOMAIN_DIR_PREFIX, uuid, NULL);
}

char *dmem_domain_path(const char *mount, const char *uuid, const char *id)
{
	g_autofree char *name = dmem_domain_dirname(uuid);

	return g_build_filename(mount, name, id, NULL);
}

gboolean dmem_domain_path_split(const char *path, char **mount, char **uuid)
{
	g_autofree char *dir = g_path_get_dirname(path);
	g_autofree char *name = g_path_get_basename(dir);
	const char *u = name + strlen(DMEM_DOMAIN_DIR_PREFIX);
	g_autofree char *canon = NULL;

	if (!g_path_is_absolute(path) || !g_str_has_prefix(name, DMEM_DOMAIN_DIR_PREFIX))
		return FALSE;
	canon = dmem_uuid_normalize(u);
	if (!canon || strcmp(canon, u))
		return FALSE;
	*mount = g_path_get_dirname(dir);
	*uuid = g_steal_pointer(&canon);
	return TRUE;
}

int dmem_mount_open(const char *mount)
{
	/* O_PATH: the wrapper's AppArmor profile may not list the mount */
	return open(mount, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int dmem_domain_dir_open(int mountfd, const char *uuid, int flags)
{
	g_autofree char *name = dmem_domain_dirname(uuid);

	return openat(mountfd, name, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

gboolean dmem_domain_dir_adopt(int mountfd, const char *uuid, GError **error)
{
	g_autofree char *name = dmem_domain_dirname(uuid);
	struct stat st;

	if (fstatat(mountfd, uuid, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != 0)
		return TRUE;
	/* never onto a directory of the new name, even an empty one */
	if (fstatat(mountfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "0.35 directory %s left as it is: %s exists", uuid, name);
		return FALSE;
	}
	if (renameat(mountfd, uuid, mountfd, name) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "rename %s to %s: %s", uuid,
			    name, g_strerror(errno));
		return FALSE;
	}
	return TRUE;
}

int dmem_domain_dir_create(int mountfd, const char *uuid, gid_t gid, GError **error)
{
	g_autofree char *name = dmem_domain_dirname(uuid);
	int dfd;

	if (mkdirat(mountfd, name, 0700) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "mkdir %s: %s", name,
			    g_strerror(errno));
		return -1;
	}
	dfd = dmem_domain_dir_open(mountfd, uuid, O_RDONLY);
	/* root-owned, qemu group may only traverse: QEMU cannot add files */
	if (dfd < 0 || fchown(dfd, (uid_t)-1, gid) < 0 || fchmod(dfd, 0710) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: %s", name,
			    g_strerror(errno));
		if (dfd >= 0)
			close(dfd);
		unlinkat(mountfd, name, AT_REMOVEDIR); /* empty: we just made it */
		return -1;
	}
	return dfd;
}

gboolean dmem_domain_marked(int mountfd, const char *uuid)
{
	int dfd = dmem_domain_dir_open(mountfd, uuid, O_PATH);
	struct stat st;
	gboolean marked;

	if (dfd < 0)
		return FALSE;
	marked = fstatat(dfd, DMEM_CARRIED_MARK, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		 S_ISREG(st.st_mode) && st.st_uid == 0;
	close(dfd);
	return marked;
}

gboolean dmem_domain_carried(const DmemConfig *cfg, int mountfd, const char *uuid)
{
	int listed, dfd;

	if (!dmem_domain_marked(mountfd, uuid))
		return FALSE;
	listed = dmem_carry_lists(cfg, uuid);
	/* stale: the wrapper must not see it either */
	if (listed == 0 && (dfd = dmem_domain_dir_open(mountfd, uuid, O_PATH)) >= 0) {
		unlinkat(dfd, DMEM_CARRIED_MARK, 0);
		close(dfd);
	}
	return listed != 0;
}

gboolean dmem_remove_domain_dir(int mountfd, const char *uuid, GError **error)
{
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *name = NULL;
	struct dirent *de;
	DIR *d;
	int dfd;

	dfd = dmem_domain_dir_open(mountfd, uuid, O_RDONLY);
	if (dfd < 0) {
		if (errno == ENOENT)
			return TRUE;
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "open %s: %s", uuid,
			    g_strerror(errno));
		return FALSE;
	}
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "opendir %s: %s", uuid,
			    g_strerror(errno));
		return FALSE;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			g_ptr_array_add(names, g_strdup(de->d_name));
	for (guint i = 0; i < names->len; i++) {
		const char *n = g_ptr_array_index(names, i);

		/* only files: we never create anything else in there */
		if (unlinkat(dfd, n, 0) < 0 && errno != ENOENT) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "unlink %s/%s: %s",
				    uuid, n, g_strerror(errno));
			closedir(d);
			return FALSE;
		}
	}
	closedir(d);
	name = dmem_domain_dirname(uuid);
	if (unlinkat(mountfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "rmdir %s: %s", name,
			    g_strerror(errno));
		return FALSE;
	}
	return TRUE;
}

gboolean dmem_domain_set_mark(const DmemConfig *cfg, const char *uuid, gboolean on,
			      GError **error)
{
	DmemMountIter it = { 0 };

	while (dmem_config_next_mount(cfg, &it)) {
		int mfd = dmem_mount_open(it.path);
		int dfd = mfd < 0 ? -1 : dmem_domain_dir_open(mfd, uuid, O_RDONLY);
		int err = errno, fd = -1;

		if (mfd >= 0)
			close(mfd);
		/* no such mount, or no directory of this domain on it: nothing to mark */
		if (dfd < 0 && err == ENOENT)
			continue;
		if (dfd < 0) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s/%s: %s", it.path, uuid,
				    g_strerror(err));
			return FALSE;
		}
		if (!on) {
			unlinkat(dfd, DMEM_CARRIED_MARK, 0);
			close(dfd);
			continue;
		}
		fd = openat(dfd, DMEM_CARRIED_MARK, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		close(dfd);
		if (fd < 0) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s/%s/%s: %s", it.path,
				    uuid, DMEM_CARRIED_MARK, g_strerror(errno));
			return FALSE;
		}
		close(fd);
	}
	return TRUE;
}
