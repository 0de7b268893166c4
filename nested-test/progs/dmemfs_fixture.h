/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The dmemfs fixture of dmemfs_test and dmemfs_vm_test: one private dmemfs
 * instance per page-size variant (dmemfs.4K.*, dmemfs.2M.*, dmemfs.1G.*),
 * and the helpers both use: the per-node pool counters of
 * /sys/kernel/mm/dmem (the witness of where dpages come from and that they
 * go back), the kernel log, seeded patterns, memory policies.
 */
#ifndef DMEMFS_FIXTURE_H
#define DMEMFS_FIXTURE_H

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "test_util.h"

#define SZ_4K		(4096UL)
#define SZ_2M		(2UL << 20)
#define SZ_1G		(1UL << 30)
#define SZ_128M		(128UL << 20)
#define MAX_NODES	64
#define STATS_DIR	"/sys/kernel/mm/dmem"
#define ZEROING		STATS_DIR "/background_zeroing"

struct dstats {
	int nr;				/* node<N> directories found: 0..nr-1 */
	uint64_t total[MAX_NODES];
	uint64_t free[MAX_NODES];
	uint64_t used[MAX_NODES];
};

/*
 * The kernel makes a node<N> directory only for nodes that have dmem: a
 * missing one reads as zeros.  nr is one past the highest node found.
 */
static inline int read_stats(struct dstats *s)
{
	int n;

	memset(s, 0, sizeof(*s));
	if (!dmem_nodes_below(MAX_NODES))
		return -1;	/* a node the arrays cannot hold */
	for (n = 0; n < MAX_NODES; n++) {
		if (dmem_node_stat(n, "total", &s->total[n]))
			continue;
		if (dmem_node_stat(n, "free", &s->free[n]) ||
		    dmem_node_stat(n, "used", &s->used[n]))
			return -1;
		s->nr = n + 1;
	}
	if (s->nr < 2)
		s->nr = 2;	/* the tests look at nodes 0 and 1 */
	return access(STATS_DIR, F_OK);
}

static inline uint64_t sum(const uint64_t *v, int nr)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < nr; i++)
		t += v[i];
	return t;
}

static inline long sys_mbind(void *addr, unsigned long len, int mode,
		      const unsigned long *nodemask, unsigned long maxnode,
		      unsigned int flags)
{
	return syscall(__NR_mbind, addr, len, mode, nodemask, maxnode, flags);
}

/* First CPU of a NUMA node, from sysfs; -1 if none. */
static inline int node_cpu(int node)
{
	char path[96], buf[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	buf[n] = 0;
	return atoi(buf);
}

static inline int pin_to_node(int node)
{
	int cpu = node_cpu(node);
	cpu_set_t set;

	if (cpu < 0)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/*
 * Kernel log helpers.  kmsg_open() opens /dev/kmsg at its current end;
 * kmsg_scan() then reads every record logged since and returns NULL when
 * none has one of @words, else a malloc'd copy of the first such record.
 * It closes @fd.  kmsg_bad() scans for the words of a kernel splat.
 * Markers (kmsg_mark) only help a human reading the console.
 */
static inline void kmsg_mark(const char *mark)
{
	int fd = open("/dev/kmsg", O_WRONLY);

	if (fd >= 0) {
		dprintf(fd, "%s\n", mark);
		close(fd);
	}
}

static inline int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

static const char *const bad_words[] = { "WARNING:", "BUG:", "Oops", "Call Trace", NULL };

static inline char *kmsg_scan(int fd, const char *const *words)
{
	char rec[8192], *msg;
	ssize_t n;
	int i;

	if (fd < 0)
		return strdup("cannot open /dev/kmsg");
	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)	/* overwritten records: go on */
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			close(fd);
			return strdup(n < 0 ? strerror(errno) : "EOF on /dev/kmsg");
		}
		rec[n] = 0;
		msg = strchr(rec, ';');	/* "prio,seq,ts,flags;message\n" */
		msg = msg ? msg + 1 : rec;
		msg[strcspn(msg, "\n")] = 0;
		for (i = 0; words[i]; i++) {
			if (strstr(msg, words[i])) {
				close(fd);
				return strdup(msg);
			}
		}
	}
	close(fd);
	return NULL;
}

static inline char *kmsg_bad(int fd)
{
	return kmsg_scan(fd, bad_words);
}

/* Pattern helpers: a word depends on the seed and its file offset. */
static inline uint64_t pat(uint64_t seed, uint64_t off)
{
	return seed ^ (off * 0x9e3779b97f4a7c15ULL);
}

static inline void fill(void *p, size_t len, uint64_t seed)
{
	uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = pat(seed, i * 8);
}

/* Offset of the first wrong word, or -1. */
static inline long check(const void *p, size_t len, uint64_t seed)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != pat(seed, i * 8))
			return i * 8;
	return -1;
}

static inline long first_nonzero(const void *p, size_t len)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i])
			return i * 8;
	return -1;
}

/*
 * Sparse variants for large pages: the pattern covers the first and the last
 * 64 KiB of each page-size unit (whole 4K pages), so 1G pages stay cheap
 * under TCG while both ends of every dpage are checked.
 */
#define SPARSE	(64UL << 10)

static inline void fill_sparse(void *p, size_t len, size_t ps, uint64_t seed)
{
	size_t off, chunk = ps < 2 * SPARSE ? ps : SPARSE;

	for (off = 0; off < len; off += ps) {
		fill((char *)p + off, chunk, seed + off);
		if (chunk < ps)
			fill((char *)p + off + ps - chunk, chunk, seed + off + 1);
	}
}

static inline long check_sparse(const void *p, size_t len, size_t ps, uint64_t seed)
{
	size_t off, chunk = ps < 2 * SPARSE ? ps : SPARSE;
	long bad;

	for (off = 0; off < len; off += ps) {
		bad = check((const char *)p + off, chunk, seed + off);
		if (bad >= 0)
			return off + bad;
		if (chunk < ps) {
			bad = check((const char *)p + off + ps - chunk, chunk, seed + off + 1);
			if (bad >= 0)
				return off + ps - chunk + bad;
		}
	}
	return -1;
}

/* Touch one byte in each page-size unit: one fault, one dpage each. */
static inline void touch(void *p, size_t len, size_t ps)
{
	volatile char *c = p;
	size_t off;

	for (off = 0; off < len; off += ps)
		c[off] = 1;
}

/* -------------------------------------------------------------------- */
/* Global checks (no mount)                                             */
/* -------------------------------------------------------------------- */

/* Whether /proc/mounts lists @dir with @opt among its options. */
static inline int mounted_with(const char *dir, const char *opt)
{
	char line[512];
	int found = 0;
	FILE *f = fopen("/proc/mounts", "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, dir) && strstr(line, " dmemfs ") && strstr(line, opt);
	fclose(f);
	return found;
}

/* -------------------------------------------------------------------- */
/* Per page size                                                         */
/* -------------------------------------------------------------------- */

FIXTURE(dmemfs) {
	char dir[64];
	int mounted;
	struct dstats base;
};

FIXTURE_VARIANT(dmemfs) {
	const char *opts;
	size_t ps;
};

FIXTURE_VARIANT_ADD(dmemfs, 4K) { .opts = "pagesize=4K", .ps = SZ_4K };
FIXTURE_VARIANT_ADD(dmemfs, 2M) { .opts = "pagesize=2M", .ps = SZ_2M };
FIXTURE_VARIANT_ADD(dmemfs, 1G) { .opts = "pagesize=1G", .ps = SZ_1G };

FIXTURE_SETUP(dmemfs)
{
	/* Checks first: teardown does not run when setup fails. */
	ASSERT_EQ(0, read_stats(&self->base)) TH_LOG("no dmem stats in " STATS_DIR);
	/* Each test needs at least one page of this size on each node. */
	ASSERT_LE(variant->ps, self->base.free[0]) TH_LOG("node0: %lu bytes free", self->base.free[0]);
	ASSERT_LE(variant->ps, self->base.free[1]) TH_LOG("node1: %lu bytes free", self->base.free[1]);
	strcpy(self->dir, "/tmp/dmemfs.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, mount("none", self->dir, "dmemfs", 0, variant->opts)) {
		TH_LOG("mount -t dmemfs -o %s none %s: %s", variant->opts,
		       self->dir, strerror(errno));
		rmdir(self->dir);
	}
	self->mounted = 1;
}

FIXTURE_TEARDOWN(dmemfs)
{
	if (self->mounted)
		umount2(self->dir, MNT_DETACH);
	rmdir(self->dir);
}

static inline int open_file(struct __test_metadata *_metadata, const char *dir,
		     const char *name, size_t size)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", path, strerror(errno));
	ASSERT_EQ(0, ftruncate(fd, size)) TH_LOG("ftruncate %s %zu: %s", path, size,
						  strerror(errno));
	return fd;
}

static inline void *map_fd(struct __test_metadata *_metadata, int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap MAP_SHARED %zu: %s", size, strerror(errno));
	return p;
}

static inline void unlink_in(struct __test_metadata *_metadata, const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ASSERT_EQ(0, unlink(path)) TH_LOG("unlink %s: %s", path, strerror(errno));
}

/* The pool must be exactly back where the test started, node by node. */
static inline void expect_baseline(struct __test_metadata *_metadata, const struct dstats *base,
			    const char *when)
{
	struct dstats now;
	int n;

	ASSERT_EQ(0, read_stats(&now));
	for (n = 0; n < base->nr; n++) {
		EXPECT_EQ(base->free[n], now.free[n])
			TH_LOG("%s: node%d free %lu, baseline %lu", when, n, now.free[n],
			       base->free[n]);
		EXPECT_EQ(base->used[n], now.used[n])
			TH_LOG("%s: node%d used %lu, baseline %lu", when, n, now.used[n],
			       base->used[n]);
	}
}

/* How many pages of size @ps the whole pool has free, at most @cap. */
static inline size_t pages_free(const struct dstats *s, size_t ps, size_t cap)
{
	size_t n = sum(s->free, s->nr) / ps;

	return n < cap ? n : cap;
}

static inline uint64_t used_all(struct __test_metadata *_metadata)
{
	struct dstats s;

	ASSERT_EQ(0, read_stats(&s));
	return sum(s.used, s.nr);
}

/*
 * Map k pages with a memory policy, running on @run_node's CPU, and check
 * that exactly the pages' bytes moved from free to used on @want_node only.
 */
static inline void policy_case(struct __test_metadata *_metadata, const char *dir,
			size_t ps, int mode, int policy_node, int run_node, int want_node)
{
	unsigned long mask = 1UL << policy_node;
	struct dstats before, after;
	size_t k, len;
	char *why;
	void *p;
	int fd, n, kfd;

	ASSERT_EQ(0, pin_to_node(run_node)) TH_LOG("no CPU on node%d", run_node);
	ASSERT_EQ(0, read_stats(&before));
	k = before.free[want_node] / ps;
	if (k > 8)
		k = 8;
	ASSERT_LE(1, k);
	len = k * ps;
	kmsg_mark("dmemfs_test: policy case");
	kfd = kmsg_open();
	fd = open_file(_metadata, dir, "policy", len);
	p = map_fd(_metadata, fd, len);
	if (mode == MPOL_LOCAL) {
		ASSERT_EQ(0, sys_mbind(p, len, mode, NULL, 0, 0))
			TH_LOG("mbind MPOL_LOCAL: %s", strerror(errno));
	} else {
		ASSERT_EQ(0, sys_mbind(p, len, mode, &mask, MAX_NODES, 0))
			TH_LOG("mbind mode %d node%d: %s", mode, policy_node, strerror(errno));
	}
	touch(p, len, ps);
	ASSERT_EQ(0, read_stats(&after));
	for (n = 0; n < before.nr; n++) {
		uint64_t want = n == want_node ? len : 0;

		EXPECT_EQ(want, after.used[n] - before.used[n])
			TH_LOG("mode %d: node%d used grew by %lu, expected %lu", mode, n,
			       after.used[n] - before.used[n], want);
		EXPECT_EQ(want, before.free[n] - after.free[n])
			TH_LOG("mode %d: node%d free fell by %lu, expected %lu", mode, n,
			       before.free[n] - after.free[n], want);
	}
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, dir, "policy");
	expect_baseline(_metadata, &before, "after unlink");
	why = kmsg_bad(kfd);
	EXPECT_EQ(NULL, why) TH_LOG("kernel log: %s", why);
}

#endif /* DMEMFS_FIXTURE_H */
