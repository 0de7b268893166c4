/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the memory-error tests share (hwpoison_test.c, mce_test.c): the
 * physical address behind a file offset, the node to allocate on, a
 * dmemfs instance in a fresh directory, a mapped new file, a dirty GiB
 * and a thread that faults on it, a SIGBUS catcher, and the page sizes
 * the tests run at.  One program includes it once; include after
 * kselftest_harness.h and test_util.h.
 */
#ifndef DMEMFS_MEMORY_ERROR_H
#define DMEMFS_MEMORY_ERROR_H

#include <linux/fiemap.h>
#include <linux/fs.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SZ_4K		4096UL
#define SZ_2M		(2UL << 20)
#define SZ_1G		(1UL << 30)
#define MPOL_BIND	2
#define ZEROING		"/sys/kernel/mm/dmem/background_zeroing"

static inline int bind_to(int node)
{
	unsigned long mask = 1UL << node;

	return syscall(SYS_set_mempolicy, MPOL_BIND, &mask, sizeof(mask) * 8);
}

/* A dmemfs instance in a fresh directory under /tmp; its path in @dir[64]. */
static inline int mount_tmp(char *dir, const char *opts)
{
	strcpy(dir, "/tmp/memerr.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	if (!mount("none", dir, "dmemfs", 0, opts))
		return 0;
	rmdir(dir);
	return -1;
}

/* A new file at @path of @size bytes, mapped shared; its fd in *@fd. */
static inline uint8_t *map_new_file(struct __test_metadata *_metadata, const char *path,
				    size_t size, int *fd)
{
	uint8_t *p;

	*fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, *fd);
	ASSERT_EQ(0, ftruncate(*fd, size));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	return p;
}

/*
 * A GiB that a probe file in @dir (a 1G instance) takes and gives back,
 * dirty while background zeroing is off: the next 1G fault on the node
 * the task is bound to gets it.  Its physical address, or 0 when the node
 * has no whole free GiB.
 */
static inline uint64_t try_dirty_gib(const char *dir)
{
	char path[128];
	uint64_t phys = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/probe", dir);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		return 0;
	if (!fallocate(fd, 0, 0, SZ_1G))
		phys = phys_of(fd, 0);
	close(fd);
	if (unlink(path))
		return 0;
	return phys;
}

static inline uint64_t dirty_gib(struct __test_metadata *_metadata, const char *dir)
{
	uint64_t phys = try_dirty_gib(dir);

	ASSERT_NE(0, phys) TH_LOG("no whole free GiB on the node");
	return phys;
}

/* A thread that touches the first byte at @p: a fault that allocates. */
struct toucher {
	volatile uint8_t *p;
	volatile int started, done;
};

static inline void *touch_first_byte(void *arg)
{
	struct toucher *t = arg;

	t->started = 1;
	t->p[0] = 1;
	t->done = 1;
	return NULL;
}

/* What the last SIGBUS said; AR jumps back, AO returns. */
static sigjmp_buf bus_env;
static volatile sig_atomic_t bus_count, bus_code, bus_lsb;
static void *volatile bus_addr;

static inline void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	bus_count++;
	bus_code = si->si_code;
	bus_addr = si->si_addr;
	bus_lsb = si->si_addr_lsb;
	if (si->si_code != BUS_MCEERR_AO)
		siglongjmp(bus_env, 1);
}

static inline int catch_sigbus(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };

	return sigaction(SIGBUS, &sa, NULL);
}

/* Read *@addr; -1 if that raised a SIGBUS that jumped back. */
static __attribute__((noinline)) int read_or_sigbus(volatile uint64_t *addr, uint64_t *val)
{
	bus_count = 0;
	if (sigsetjmp(bus_env, 1))
		return -1;
	*val = *addr;
	return 0;
}

/*
 * The variants of fixture @f: one a page size, with the node to allocate
 * on (1G on node 1 keeps node 0's GiBs whole) and the file offset of the
 * page with the error.
 */
#define MEMORY_ERROR_VARIANTS(f)					\
	FIXTURE_VARIANT(f) {						\
		const char *opts;					\
		size_t ps;						\
		int node;						\
		size_t bad_off;						\
	};								\
	FIXTURE_VARIANT_ADD(f, 4K) {					\
		.opts = "pagesize=4K", .ps = SZ_4K, .node = 0,		\
		.bad_off = 5 * SZ_4K,					\
	};								\
	FIXTURE_VARIANT_ADD(f, 2M) {					\
		.opts = "pagesize=2M", .ps = SZ_2M, .node = 0,		\
		.bad_off = SZ_2M + 7 * SZ_4K,				\
	};								\
	FIXTURE_VARIANT_ADD(f, 1G) {					\
		.opts = "pagesize=1G", .ps = SZ_1G, .node = 1,		\
		.bad_off = (5UL << 20) + 3 * SZ_4K,			\
	}

#endif
