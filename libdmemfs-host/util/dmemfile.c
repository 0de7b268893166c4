// SPDX-License-Identifier: GPL-2.0-or-later
/* Creating and preallocating a dmemfs file under a NUMA policy. */
#include "dmemfs-host.h"

#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

const DmemfsOps dmemfs_real_ops = {
	.check_fs = dmemfs_real_check_fs,
	.preallocate = dmemfs_real_preallocate,
};

gboolean dmemfs_real_check_fs(int dirfd, guint64 pagesize, GError **error)
{
	struct statfs st;

	if (fstatfs(dirfd, &st) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "statfs: %s",
			    g_strerror(errno));
		return FALSE;
	}
	if ((guint32)st.f_type != DMEMFS_MAGIC) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "not a dmemfs mount (f_type 0x%lx)", (unsigned long)st.f_type);
		return FALSE;
	}
	if ((guint64)st.f_bsize != pagesize) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "dmemfs page size is %lu, not %" G_GUINT64_FORMAT,
			    (unsigned long)st.f_bsize, pagesize);
		return FALSE;
	}
	return TRUE;
}

gboolean dmem_path_fstype(const char *path, guint64 *fstype, char **where)
{
	/* as written: ".." after a symlink is the kernel's to resolve, not ours */
	g_autofree char *p = g_strdup(path);
	struct statfs st;

	for (;;) {
		g_autofree char *real = realpath(p, NULL);
		char *up;

		if (real && !statfs(real, &st)) {
			*fstype = (guint32)st.f_type;
			if (where)
				*where = g_steal_pointer(&real);
			return TRUE;
		}
		up = g_path_get_dirname(p);
		if (!strcmp(up, p))
			return FALSE;	/* "/" or "." and still nothing */
		g_free(p);
		p = up;
	}
}

#define MASK_LONGS (DMEM_MAX_NODES / (8 * sizeof(unsigned long)))

int dmem_policy_to_mpol(const DmemPolicy *pol, unsigned long *mask, unsigned long *maxnode)
{
	memset(mask, 0, MASK_LONGS * sizeof(unsigned long));
	for (guint n = 0; n < DMEM_MAX_NODES; n++)
		if (dmem_nodeset_has(&pol->nodes, n))
			mask[n / (8 * sizeof(unsigned long))] |= 1UL << (n % (8 * sizeof(unsigned long)));
	/* the kernel reads maxnode - 1 bits */
	*maxnode = DMEM_MAX_NODES + 1;
	switch (pol->mode) {
	case DMEM_POLICY_BIND:
		return MPOL_BIND;
	case DMEM_POLICY_PREFERRED:
		return MPOL_PREFERRED;
	case DMEM_POLICY_INTERLEAVE:
		return MPOL_INTERLEAVE;
	case DMEM_POLICY_NONE:
		break;
	}
	*maxnode = 0;
	return MPOL_DEFAULT;
}

/*
 * The fallback touches pages under a SIGBUS handler of the process: one
 * populate at a time when the hook preallocates cells in parallel.
 */
static GMutex populate_lock;
static __thread sigjmp_buf populate_jmp;

static void populate_sigbus(int sig)
{
	(void)sig;
	siglongjmp(populate_jmp, 1);
}

gboolean dmem_populate(int fd, guint64 size, guint64 pagesize, const DmemPolicy *pol,
		       GError **error)
{
	unsigned long mask[MASK_LONGS], maxnode;
	int mode = dmem_policy_to_mpol(pol, mask, &maxnode);
	struct sigaction sa = { 0 }, old;
	volatile char *p;
	void *map;

	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "mmap: %s", g_strerror(errno));
		return FALSE;
	}
	if (mode != MPOL_DEFAULT && mbind(map, size, mode, mask, maxnode, 0) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "mbind %s: %s",
			    dmem_policy_name(pol->mode), g_strerror(errno));
		munmap(map, size);
		return FALSE;
	}
	if (madvise(map, size, MADV_POPULATE_WRITE) == 0) {
		munmap(map, size);
		return TRUE;
	}
	if (errno != EINVAL) {
		/* EFAULT/ENOMEM: the pool ran dry while populating */
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_NO_SPACE, "populate: %s",
			    g_strerror(errno));
		munmap(map, size);
		return FALSE;
	}
	/* no MADV_POPULATE_WRITE on VM_PFNMAP: touch each dpage, SIGBUS = pool empty */
	g_mutex_lock(&populate_lock);
	sa.sa_handler = populate_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	p = map;
	if (sigsetjmp(populate_jmp, 1) == 0) {
		for (guint64 off = 0; off < size; off += pagesize)
			p[off] = 0;
	} else {
		sigaction(SIGBUS, &old, NULL);
		g_mutex_unlock(&populate_lock);
		munmap(map, size);
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_NO_SPACE,
			    "populate: SIGBUS (dmem pool exhausted)");
		return FALSE;
	}
	sigaction(SIGBUS, &old, NULL);
	g_mutex_unlock(&populate_lock);
	munmap(map, size);
	return TRUE;
}

gboolean dmemfs_real_preallocate(int fd, guint64 size, guint64 pagesize, const DmemPolicy *pol,
				 GError **error)
{
	unsigned long mask[MASK_LONGS], maxnode;
	int mode = dmem_policy_to_mpol(pol, mask, &maxnode);
	int rc, err;

	/* fallocate allocates under the calling thread's policy */
	if (mode != MPOL_DEFAULT && set_mempolicy(mode, mask, maxnode) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "set_mempolicy %s: %s",
			    dmem_policy_name(pol->mode), g_strerror(errno));
		return FALSE;
	}
	rc = fallocate(fd, 0, 0, (off_t)size);
	err = errno;
	if (mode != MPOL_DEFAULT)
		set_mempolicy(MPOL_DEFAULT, NULL, 0);
	if (rc == 0)
		return TRUE;
	if (err == EOPNOTSUPP)
		return dmem_populate(fd, size, pagesize, pol, error);
	g_set_error(error, DMEM_ERROR, err == ENOSPC ? DMEM_ERROR_NO_SPACE : DMEM_ERROR_FAILED,
		    "fallocate: %s", g_strerror(err));
	return FALSE;
}

gboolean dmem_create_file(int dirfd, const char *name, guint64 size, gboolean populate,
			  guint64 pagesize, const DmemPolicy *pol, uid_t uid, gid_t gid,
			  const DmemfsOps *ops, GError **error)
{
	g_autoptr(GError) e = NULL;
	const char *what;
	int fd;

	fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "create %s: %s", name,
			    g_strerror(errno));
		return FALSE;
	}
	what = "chown";
	if (fchown(fd, uid, gid) < 0)
		goto fail_errno;
	what = "chmod";
	if (fchmod(fd, 0600) < 0)
		goto fail_errno;
	what = "ftruncate";
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail_errno;
	if (populate && !ops->preallocate(fd, size, pagesize, pol, &e)) {
		g_set_error(error, DMEM_ERROR, e->code, "%s: %s", name, e->message);
		goto fail;
	}
	close(fd);
	return TRUE;
fail_errno:
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s %s: %s", what, name,
		    g_strerror(errno));
fail:
	close(fd);
	unlinkat(dirfd, name, 0);
	return FALSE;
}
