// SPDX-License-Identifier: GPL-2.0
/*
 * dmemfs_vm_test: dmemfs as VM memory, in the L1 test VM (kselftest
 * harness): huge leaves, every mempolicy mode, the file's own policy,
 * fallocate/punch hole, MADV_POPULATE_WRITE, GUP users, fork, mremap,
 * mprotect, /proc/PID/mem and truncate racing with faults.
 *
 *   dmemfs_vm_test            run all tests (TAP on stdout)
 *   dmemfs_vm_test --list     print the test names, one a line, and exit
 *
 * The tests run for each page-size variant of the dmemfs fixture of
 * dmemfs_fixture.h, shared with dmemfs_test, and use its helpers (pool
 * counters, kernel log, patterns).
 */
#include "dmemfs_fixture.h"

#include <linux/loop.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#ifndef MPOL_PREFERRED_MANY
#define MPOL_PREFERRED_MANY	5
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif


struct fault_count {
	char want[64];		/* "leaf=<size>K ret=0x100" */
	long hits, other;	/* faults that mapped such a leaf, or another */
};

static void count_fault(const char *line, void *arg)
{
	struct fault_count *c = arg;

	if (strstr(line, c->want))
		c->hits++;
	else if (strstr(line, "ret=0x100"))
		c->other++;
}

/* Count the dmemfs_fault events in the trace buffer that mapped @leaf_kb. */
static long count_faults(size_t leaf_kb, long *other)
{
	struct fault_count c = { .hits = 0 };

	snprintf(c.want, sizeof(c.want), "leaf=%zuK ret=0x100", leaf_kb);
	if (dmem_trace_each("dmemfs_fault", count_fault, &c) < 0)
		return -1;
	*other = c.other;
	return c.hits;
}

enum leaf_opt { LEAF_PLAIN, LEAF_NOHUGEPAGE, LEAF_THP_DISABLE };

/*
 * The leaf size is read from the dmemfs_fault tracepoint: VM_PFNMAP
 * mappings are not walked by smaps or pagemap.  One touch per dpage must
 * map exactly one leaf of the dpage size (4K, 2M PMD, 1G PUD).  When the
 * mapping has MADV_NOHUGEPAGE or the process PR_SET_THP_DISABLE, the 6.1
 * series still maps the dpage size (the dpage is whole whatever maps it,
 * as on hugetlbfs); 6.12 applies them to every VM_PFNMAP mapping with huge
 * faults, dmemfs as a VFIO BAR, so there the leaf is 4K, as the task asked
 * (Documentation/filesystems/dmemfs.rst).
 */
static void check_leaves(struct __test_metadata *_metadata, const char *dir, size_t ps,
			 enum leaf_opt opt)
{
	size_t k = ps == SZ_1G ? 1 : 4, len = k * ps, i;
	size_t leaf = opt != LEAF_PLAIN && kernel_at_least(6, 12) ? SZ_4K : ps;
	long hits, other = 0;
	char *p;
	int fd;

	ASSERT_EQ(0, dmem_trace("dmemfs_fault", 1))
		TH_LOG("cannot enable the dmem:dmemfs_fault tracepoint");
	fd = open_file(_metadata, dir, "leaf", len);
	p = map_fd(_metadata, fd, len);
	EXPECT_EQ(0, (uintptr_t)p % ps) TH_LOG("mmap(NULL) not %zu-aligned: %p", ps, p);
	if (opt == LEAF_NOHUGEPAGE)
		ASSERT_EQ(0, madvise(p, len, MADV_NOHUGEPAGE)) TH_LOG("%s", strerror(errno));
	if (opt == LEAF_THP_DISABLE)
		ASSERT_EQ(0, prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)) TH_LOG("%s", strerror(errno));
	for (i = 0; i < k; i++)
		p[i * ps + ps / 2] = 1;
	dmem_trace("dmemfs_fault", 0);
	if (opt == LEAF_THP_DISABLE)
		prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
	hits = count_faults(leaf >> 10, &other);
	EXPECT_EQ((long)k, hits) TH_LOG("%ld faults mapped %zuK leaves, %ld others", hits,
					leaf >> 10, other);
	EXPECT_EQ(0, other);
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, dir, "leaf");
}

TEST_F_TIMEOUT(dmemfs, leaf_size, 120)
{
	check_leaves(_metadata, self->dir, variant->ps, LEAF_PLAIN);
	expect_baseline(_metadata, &self->base, "after unlink");
}

TEST_F_TIMEOUT(dmemfs, leaf_size_madv_nohugepage, 120)
{
	check_leaves(_metadata, self->dir, variant->ps, LEAF_NOHUGEPAGE);
	expect_baseline(_metadata, &self->base, "after unlink");
}

TEST_F_TIMEOUT(dmemfs, leaf_size_thp_disabled, 120)
{
	check_leaves(_metadata, self->dir, variant->ps, LEAF_THP_DISABLE);
	expect_baseline(_metadata, &self->base, "after unlink");
}

/* Field @key (in kB) of the /proc/self/smaps entry that starts at @addr. */
static long smaps_kb(void *addr, const char *key)
{
	unsigned long start, end;
	char line[256];
	int in = 0;
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
			in = start == (unsigned long)addr;
		else if (in && !strncmp(line, key, strlen(key)) &&
			 line[strlen(key)] == ':')
			kb = strtol(line + strlen(key) + 1, NULL, 10);
		if (kb >= 0)
			break;
	}
	fclose(f);
	return kb;
}

/* Extents FIEMAP reports for @fd, with a physical address each. */
static long fiemap_extents(int fd, int *with_phys)
{
	FIEMAP_REQ(fm, 8);
	unsigned int i;

	fm->fm_length = FIEMAP_MAX_OFFSET;
	fm->fm_extent_count = 8;
	if (ioctl(fd, FS_IOC_FIEMAP, fm))
		return -1;
	*with_phys = 0;
	for (i = 0; i < fm->fm_mapped_extents; i++)
		*with_phys += fm->fm_extents[i].fe_physical &&
			      !(fm->fm_extents[i].fe_flags & FIEMAP_EXTENT_UNKNOWN);
	return fm->fm_mapped_extents;
}

/*
 * Fork a second mm that maps @len of @path itself (fork does not copy
 * dmemfs mappings) and reads a byte every @step of its first @touch bytes.
 * Returns its pid once it has, with *@hold the pipe end that keeps it
 * there: close it and the child exits 0.  -1 if it could not map.
 */
static pid_t second_mapper(const char *path, size_t len, size_t touch, size_t step, int *hold)
{
	int h[2], ready[2];
	char c = 0;
	pid_t pid;

	if (pipe(h))
		return -1;
	if (pipe(ready)) {
		close(h[0]);
		close(h[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		int cfd = open(path, O_RDWR);
		char *q = cfd < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ, MAP_SHARED, cfd, 0);
		size_t off;

		if (q == MAP_FAILED)
			_exit(2);
		for (off = 0; off < touch; off += step)
			c = *(volatile char *)(q + off);
		close(h[1]);
		close(ready[0]);
		if (write(ready[1], &c, 1) != 1)
			_exit(3);
		_exit(read(h[0], &c, 1) == 0 ? 0 : 1);
	}
	close(h[0]);
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1) {
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(ready[0]);
	if (pid < 0)
		close(h[1]);
	else
		*hold = h[1];
	return pid;
}


/*
 * smaps: the dpage size as KernelPageSize, and the file's dpages behind
 * the mapping as Rss, their Pss shared among the mappings of each dpage;
 * FIEMAP: one extent per dpage, at its address.
 */
TEST_F_TIMEOUT(dmemfs, smaps_and_fiemap, 120)
{
	size_t ps = variant->ps, k = ps == SZ_1G ? 1 : 4, len = 2 * k * ps;
	int fd, phys, hold, status;
	char path[256];
	pid_t pid;
	char *p;

	fd = open_file(_metadata, self->dir, "smaps", len);
	p = map_fd(_metadata, fd, len);
	EXPECT_EQ((long)(ps >> 10), smaps_kb(p, "KernelPageSize"));
	EXPECT_EQ((long)(len >> 10), smaps_kb(p, "Size"));
	EXPECT_EQ(0, smaps_kb(p, "Rss"));
	EXPECT_EQ(0, fiemap_extents(fd, &phys));
	touch(p, k * ps, ps);
	EXPECT_EQ((long)((k * ps) >> 10), smaps_kb(p, "Rss"));
	EXPECT_EQ((long)((k * ps) >> 10), smaps_kb(p, "Pss"));
	EXPECT_EQ((long)k, fiemap_extents(fd, &phys));
	EXPECT_EQ((int)k, phys);
	ASSERT_EQ(0, fallocate(fd, 0, 0, len));
	EXPECT_EQ((long)(len >> 10), smaps_kb(p, "Rss"));
	EXPECT_EQ((long)(len >> 10), smaps_kb(p, "Pss"));
	EXPECT_EQ((long)(len >> 10), smaps_kb(p, "Private_Dirty"));
	EXPECT_EQ((long)(2 * k), fiemap_extents(fd, &phys));

	/*
	 * A second process maps the first half: those dpages count half in
	 * each process's Pss and as shared, the rest stays private here.
	 */
	snprintf(path, sizeof(path), "%s/smaps", self->dir);
	pid = second_mapper(path, len / 2, 0, 1, &hold);
	ASSERT_LT(0, pid) TH_LOG("the second process could not map the file");
	EXPECT_EQ((long)(len >> 10), smaps_kb(p, "Rss"));
	EXPECT_EQ((long)((len / 4 + len / 2) >> 10), smaps_kb(p, "Pss"));
	EXPECT_EQ((long)((len / 2) >> 10), smaps_kb(p, "Shared_Dirty"));
	EXPECT_EQ((long)((len / 2) >> 10), smaps_kb(p, "Private_Dirty"));
	close(hold);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_EQ((long)(len >> 10), smaps_kb(p, "Pss"));
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, self->dir, "smaps");
	expect_baseline(_metadata, &self->base, "after unlink");
}

/* QEMU 7.2 turns policy=preferred into MPOL_PREFERRED_MANY. */
TEST_F_TIMEOUT(dmemfs, preferred_many_node1, 120)
{
	policy_case(_metadata, self->dir, variant->ps, MPOL_PREFERRED_MANY, 1, 0, 1);
}

TEST_F_TIMEOUT(dmemfs, interleave, 120)
{
	unsigned long mask = 3;
	size_t ps = variant->ps, len = 2 * ps;
	struct dstats before, after;
	char *p;
	int fd;

	ASSERT_EQ(0, read_stats(&before));
	fd = open_file(_metadata, self->dir, "il", len);
	p = map_fd(_metadata, fd, len);
	ASSERT_EQ(0, sys_mbind(p, len, MPOL_INTERLEAVE, &mask, MAX_NODES, 0))
		TH_LOG("mbind MPOL_INTERLEAVE: %s", strerror(errno));
	touch(p, len, ps);
	ASSERT_EQ(0, read_stats(&after));
	EXPECT_EQ(ps, after.used[0] - before.used[0]);
	EXPECT_EQ(ps, after.used[1] - before.used[1]);
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, self->dir, "il");
	expect_baseline(_metadata, &before, "after unlink");
}

/*
 * A policy set through one mapping stays with the file: a process that
 * maps it later (QEMU after libvirt's hook) allocates on that node.
 */
TEST_F_TIMEOUT(dmemfs, file_policy_outlives_mapping, 120)
{
	unsigned long mask = 1UL << 1;
	size_t ps = variant->ps;
	struct dstats before, after;
	int fd, status;
	pid_t pid;
	char *p;

	ASSERT_EQ(0, pin_to_node(0));
	ASSERT_EQ(0, read_stats(&before));
	fd = open_file(_metadata, self->dir, "shared", ps);
	p = map_fd(_metadata, fd, ps);
	ASSERT_EQ(0, sys_mbind(p, ps, MPOL_BIND, &mask, MAX_NODES, 0));
	ASSERT_EQ(0, munmap(p, ps));
	close(fd);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char path[128];

		snprintf(path, sizeof(path), "%s/shared", self->dir);
		fd = open(path, O_RDWR);
		p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (fd < 0 || p == MAP_FAILED)
			_exit(2);
		p[0] = 1;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(0, read_stats(&after));
	EXPECT_EQ(0, after.used[0] - before.used[0]);
	EXPECT_EQ(ps, after.used[1] - before.used[1]);
	unlink_in(_metadata, self->dir, "shared");
	expect_baseline(_metadata, &before, "after unlink");
}

TEST_F_TIMEOUT(dmemfs, fallocate_punch_enospc, 180)
{
	size_t ps = variant->ps;
	uint64_t used0 = used_all(_metadata);
	struct stat st;
	int fd;

	fd = open_file(_metadata, self->dir, "falloc", 0);
	ASSERT_EQ(0, fallocate(fd, 0, 0, 2 * ps)) TH_LOG("fallocate: %s", strerror(errno));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ((off_t)(2 * ps), st.st_size);
	EXPECT_EQ((blkcnt_t)(2 * ps / 512), st.st_blocks);
	EXPECT_EQ(2 * ps, used_all(_metadata) - used0);

	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, ps, ps));
	EXPECT_EQ(ps, used_all(_metadata) - used0);
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ((off_t)(2 * ps), st.st_size);

	/* more than the pool holds: ENOSPC and nothing left allocated */
	errno = 0;
	EXPECT_EQ(-1, fallocate(fd, 0, 0, sum(self->base.total, self->base.nr) + ps));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(ps, used_all(_metadata) - used0);
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ((off_t)(2 * ps), st.st_size);

	close(fd);
	unlink_in(_metadata, self->dir, "falloc");
	expect_baseline(_metadata, &self->base, "after unlink");
}

struct dontneed_reader {
	const char *p;
	size_t ps;
	volatile int *stop;
	long reads, bad;
};

/* Reads the first dpage, which nobody punches, for as long as it runs. */
static void *dontneed_read(void *arg)
{
	struct dontneed_reader *r = arg;

	while (!*r->stop) {
		if (check_sparse(r->p, r->ps, r->ps, 11) != -1)
			r->bad++;
		r->reads++;
	}
	return NULL;
}

/*
 * QEMU discards guest RAM (virtio-mem unplug, balloon, postcopy) with a
 * punch hole on the file and then MADV_DONTNEED on its own mapping; a
 * dmem mapping is VM_PFNMAP, which madvise refused with EINVAL, so QEMU
 * could not even start a virtio-mem device on dmem.  MADV_DONTNEED drops
 * the entries and keeps the data (a shared file), for whole dpages and
 * inside a huge leaf, also while another thread faults the same range;
 * MADV_FREE stays refused.
 */
TEST_F_TIMEOUT(dmemfs, madvise_dontneed_discards, 180)
{
	size_t ps = variant->ps, n = pages_free(&self->base, ps, 4), len;
	uint64_t used0 = used_all(_metadata);
	struct dontneed_reader r;
	volatile int stop = 0;
	pthread_t t;
	/* each round refaults (and zeroes) one dpage */
	long bad, rounds = 0, want = ps == SZ_1G ? 3 : 200;
	char *p;
	int fd;

	ASSERT_LE(2, n);
	len = n * ps;
	fd = open_file(_metadata, self->dir, "discard", len);
	p = map_fd(_metadata, fd, len);
	fill_sparse(p, len, ps, 11);
	ASSERT_EQ(len, used_all(_metadata) - used0);

	ASSERT_EQ(0, madvise(p, len, MADV_DONTNEED)) TH_LOG("MADV_DONTNEED: %s", strerror(errno));
	bad = check_sparse(p, len, ps, 11);
	EXPECT_EQ(-1, bad) TH_LOG("after MADV_DONTNEED: wrong word at offset %ld", bad);
	EXPECT_EQ(len, used_all(_metadata) - used0);

	/* inside one leaf: the leaf goes, the file keeps its dpage */
	if (ps > SZ_4K) {
		ASSERT_EQ(0, madvise(p + ps / 2, SZ_4K, MADV_DONTNEED));
		bad = check_sparse(p, ps, ps, 11);
		EXPECT_EQ(-1, bad) TH_LOG("4K MADV_DONTNEED in a leaf: wrong word at offset %ld",
					  bad);
	}

	/* QEMU's discard of the second dpage: punch, then drop the mapping */
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, ps, ps));
	ASSERT_EQ(0, madvise(p + ps, ps, MADV_DONTNEED));
	EXPECT_EQ(len - ps, used_all(_metadata) - used0);
	bad = first_nonzero(p + ps, ps);
	EXPECT_EQ(-1, bad) TH_LOG("discarded dpage: nonzero at offset %ld", bad);
	EXPECT_EQ(len, used_all(_metadata) - used0);

	/* discards of the rest race with a reader of the first dpage */
	r = (struct dontneed_reader){ .p = p, .ps = ps, .stop = &stop };
	ASSERT_EQ(0, pthread_create(&t, NULL, dontneed_read, &r));
	while (rounds < want || r.reads < 3) {
		ASSERT_EQ(0, madvise(p, len, MADV_DONTNEED));
		ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, ps,
				       len - ps));
		memset(p + ps, 0x5a, SZ_4K);
		rounds++;
	}
	stop = 1;
	pthread_join(t, NULL);
	EXPECT_EQ(0, r.bad) TH_LOG("%ld of %ld reads saw a wrong first dpage", r.bad, r.reads);

	errno = 0;
	EXPECT_EQ(-1, madvise(p, len, MADV_FREE));
	EXPECT_EQ(EINVAL, errno);

	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, self->dir, "discard");
	expect_baseline(_metadata, &self->base, "after unlink");
}

TEST_F_TIMEOUT(dmemfs, populate_write, 180)
{
	size_t ps = variant->ps, len = ps == SZ_1G ? ps : 8 * ps;
	uint64_t used0 = used_all(_metadata);
	char *p;
	int fd;

	fd = open_file(_metadata, self->dir, "populate", len);
	p = map_fd(_metadata, fd, len);
	ASSERT_EQ(0, madvise(p, len, MADV_POPULATE_WRITE))
		TH_LOG("MADV_POPULATE_WRITE: %s", strerror(errno));
	EXPECT_EQ(len, used_all(_metadata) - used0);
	EXPECT_EQ(-1, first_nonzero(p, len));
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, self->dir, "populate");
	expect_baseline(_metadata, &self->base, "after unlink");
}

struct populate_arg {
	char *p;
	size_t len;
	pthread_barrier_t *go;
	int err;
};

static void *populate_thread(void *arg)
{
	struct populate_arg *a = arg;

	pthread_barrier_wait(a->go);
	a->err = madvise(a->p, a->len, MADV_POPULATE_WRITE) ? errno : 0;
	return NULL;
}

/*
 * Four threads MADV_POPULATE_WRITE one empty dpage when exactly one is
 * left: one allocates and zeroes it, the others wait for it and map it,
 * as QEMU's preallocation threads do inside a 1G dpage.  2M and 1G: node
 * 0 filled up to one dpage; 4K (a node of 4K dpages is slow to fill): a
 * second mount limited to one dpage with size=.  Each thread allocating
 * its own failed all but one of them with EFAULT.
 */
TEST_F_TIMEOUT(dmemfs, populate_race_last_dpage, 600)
{
	size_t ps = variant->ps;
	unsigned long node0 = 1;
	char dir[64], lim[] = "/tmp/dmemfs-one.XXXXXX", opts[64];
	struct populate_arg a[4];
	pthread_barrier_t go;
	struct dstats now;
	pthread_t t[4];
	int ff = -1, fd, i;
	char *p;

	ASSERT_EQ(0, syscall(__NR_set_mempolicy, MPOL_BIND, &node0, 64));
	strcpy(dir, self->dir);
	if (ps == SZ_4K) {
		ASSERT_NE(NULL, mkdtemp(lim));
		snprintf(opts, sizeof(opts), "%s,size=%zu", variant->opts, ps);
		ASSERT_EQ(0, mount("none", lim, "dmemfs", 0, opts));
		strcpy(dir, lim);
	} else {
		uint64_t fill = self->base.free[0] - ps;

		ASSERT_EQ(0, self->base.free[0] % ps);
		ff = open_file(_metadata, dir, "filler", fill);
		if (fill)
			ASSERT_EQ(0, fallocate(ff, 0, 0, fill))
				TH_LOG("fallocate %lu on node0: %s", fill, strerror(errno));
		ASSERT_EQ(0, read_stats(&now));
		ASSERT_EQ(ps, now.free[0]);
	}
	fd = open_file(_metadata, dir, "race", ps);
	p = map_fd(_metadata, fd, ps);
	ASSERT_EQ(0, pthread_barrier_init(&go, NULL, 4));
	for (i = 0; i < 4; i++) {
		a[i] = (struct populate_arg){ .p = p, .len = ps, .go = &go };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, populate_thread, &a[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, a[i].err) TH_LOG("thread %d: MADV_POPULATE_WRITE: %s", i,
					      strerror(a[i].err));
	}
	pthread_barrier_destroy(&go);
	EXPECT_EQ(-1, first_nonzero(p, ps < SZ_1G ? ps : SPARSE));
	if (ps != SZ_4K) {
		ASSERT_EQ(0, read_stats(&now));
		EXPECT_EQ(0, now.free[0]);
	}
	ASSERT_EQ(0, munmap(p, ps));
	close(fd);
	unlink_in(_metadata, dir, "race");
	if (ff >= 0) {
		close(ff);
		unlink_in(_metadata, dir, "filler");
	} else {
		EXPECT_EQ(0, umount(lim));
		rmdir(lim);
	}
	expect_baseline(_metadata, &self->base, "after unlink");
}

/*
 * get_user_pages() users on a dmem mapping fail cleanly (or work), never
 * oops: vmsplice and process_vm_readv take GUP-fast first.  Plain
 * read()/write() go through the page tables and work.
 */
TEST_F_TIMEOUT(dmemfs, gup_users_no_oops, 120)
{
	size_t len = 64 * 1024, ps = variant->ps < len ? len : variant->ps;
	struct iovec local, remote;
	char buf[4096];
	int fd, zfd, pfd[2], kfd;
	ssize_t n;
	char *p, *why;

	kfd = kmsg_open();
	fd = open_file(_metadata, self->dir, "gup", ps);
	p = map_fd(_metadata, fd, ps);
	memset(p, 0x5a, len);

	ASSERT_EQ(0, pipe(pfd));
	local.iov_base = p;
	local.iov_len = sizeof(buf);
	n = vmsplice(pfd[1], &local, 1, 0);
	EXPECT_TRUE(n == (ssize_t)sizeof(buf) || (n < 0 && errno == EFAULT))
		TH_LOG("vmsplice: %zd %s", n, strerror(errno));
	close(pfd[0]);
	close(pfd[1]);

	local.iov_base = buf;
	local.iov_len = sizeof(buf);
	remote.iov_base = p;
	remote.iov_len = sizeof(buf);
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	EXPECT_TRUE(n == (ssize_t)sizeof(buf) || (n < 0 && errno == EFAULT))
		TH_LOG("process_vm_readv: %zd %s", n, strerror(errno));

	zfd = open("/dev/zero", O_RDONLY);
	ASSERT_LE(0, zfd);
	EXPECT_EQ((ssize_t)len, read(zfd, p, len));
	close(zfd);
	EXPECT_EQ(-1, first_nonzero(p, len));

	ASSERT_EQ(0, munmap(p, ps));
	close(fd);
	unlink_in(_metadata, self->dir, "gup");
	why = kmsg_bad(kfd);
	EXPECT_EQ(NULL, why) TH_LOG("kernel log: %s", why);
	expect_baseline(_metadata, &self->base, "after unlink");
}

/*
 * O_DIRECT from a block device into a dmem mapping pins the destination
 * with get_user_pages(): it must fail cleanly (EFAULT) or work, never oops.
 * The device is a loop device over a file in L1's tmpfs.
 */
TEST_F_TIMEOUT(dmemfs, o_direct_into_mapping, 120)
{
	char img[] = "/tmp/dmemfs-odirect.XXXXXX", dev[32], *p, *why;
	size_t len = 64 * 1024, ps = variant->ps < len ? len : variant->ps;
	int fd, bfd, lc, lfd, dfd, n, kfd;
	ssize_t r;

	kfd = kmsg_open();
	bfd = mkstemp(img);
	ASSERT_LE(0, bfd);
	unlink(img);
	ASSERT_EQ(0, ftruncate(bfd, 1 << 20));
	lc = open("/dev/loop-control", O_RDWR);
	ASSERT_LE(0, lc) TH_LOG("/dev/loop-control: %s", strerror(errno));
	n = ioctl(lc, LOOP_CTL_GET_FREE);
	ASSERT_LE(0, n);
	snprintf(dev, sizeof(dev), "/dev/loop%d", n);
	lfd = open(dev, O_RDWR);
	ASSERT_LE(0, lfd) TH_LOG("%s: %s", dev, strerror(errno));
	ASSERT_EQ(0, ioctl(lfd, LOOP_SET_FD, bfd));

	fd = open_file(_metadata, self->dir, "odirect", ps);
	p = map_fd(_metadata, fd, ps);
	memset(p, 0x5a, len);
	dfd = open(dev, O_RDONLY | O_DIRECT);
	ASSERT_LE(0, dfd) TH_LOG("open %s O_DIRECT: %s", dev, strerror(errno));
	errno = 0;
	r = pread(dfd, p, len, 0);
	EXPECT_TRUE(r == (ssize_t)len || (r < 0 && errno == EFAULT))
		TH_LOG("O_DIRECT read into the mapping: %zd %s", r, strerror(errno));
	close(dfd);
	ioctl(lfd, LOOP_CLR_FD, 0);
	close(lfd);
	close(lc);
	close(bfd);

	ASSERT_EQ(0, munmap(p, ps));
	close(fd);
	unlink_in(_metadata, self->dir, "odirect");
	why = kmsg_bad(kfd);
	EXPECT_EQ(NULL, why) TH_LOG("kernel log: %s", why);
	expect_baseline(_metadata, &self->base, "after unlink");
}

/* Run fn in a child; return its raw wait status. */
static int in_child(void (*fn)(char *), char *p)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		fn(p);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static void child_read(char *p)
{
	*(volatile char *)p;
}

static void child_write(char *p)
{
	*(volatile char *)p = 1;
}

TEST_F_TIMEOUT(dmemfs, fork_does_not_copy, 120)
{
	size_t ps = variant->ps;
	int fd, status;
	char *p;

	fd = open_file(_metadata, self->dir, "fork", ps);
	p = map_fd(_metadata, fd, ps);
	p[0] = 7;
	status = in_child(child_read, p);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		TH_LOG("child status %#x: the mapping was inherited", status);
	EXPECT_EQ(7, p[0]);
	ASSERT_EQ(0, munmap(p, ps));
	close(fd);
	unlink_in(_metadata, self->dir, "fork");
	expect_baseline(_metadata, &self->base, "after unlink");
}

/*
 * mremap() never grows a dmemfs mapping (VM_DONTEXPAND).  The 6.1 series
 * refused to move one too.  On 6.12 a move to an address aligned to the
 * dpage works and keeps the data and its leaves; a move to one that is
 * not fails with EINVAL and is undone (->mremap), after the move zapped
 * the leaves it could not take whole: no "bad pud" in the kernel log, and
 * the data stays.
 */
static const char *const bad_pud_words[] = { "bad pud", "bad pmd", "WARNING:", "BUG:",
					     "Oops", NULL };

TEST_F_TIMEOUT(dmemfs, mremap, 120)
{
	int moves = kernel_at_least(6, 12), fd, kmsg, misaligned, err;
	size_t ps = variant->ps;
	char *p, *q, *hole, *bad;

	fd = open_file(_metadata, self->dir, "mremap", 2 * ps);
	p = map_fd(_metadata, fd, ps);
	p[0] = 3;
	p[ps - 1] = 4;
	errno = 0;
	q = mremap(p, ps, 2 * ps, MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, q) TH_LOG("mremap grew a dmemfs mapping");
	/* a move to a free place aligned to the dpage, then one that is not */
	hole = mmap(NULL, 4 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	for (misaligned = 0; misaligned <= (ps > SZ_4K); misaligned++) {
		q = (char *)(((uintptr_t)hole + ps - 1) & ~(ps - 1));
		if (misaligned)	/* past the first move's place */
			q += ps + (ps > SZ_2M ? SZ_2M : SZ_4K);
		kmsg = kmsg_open();
		errno = 0;
		q = mremap(p, ps, ps, MREMAP_MAYMOVE | MREMAP_FIXED, q);
		err = errno;	/* before kmsg_scan() reads to EAGAIN */
		bad = kmsg_scan(kmsg, bad_pud_words);
		EXPECT_EQ(NULL, bad) TH_LOG("kernel log: %s", bad);
		free(bad);
		if (!moves || misaligned) {
			EXPECT_EQ(MAP_FAILED, q) TH_LOG("move %d to %p worked", misaligned, q);
			EXPECT_EQ(EINVAL, err);
			if (q != MAP_FAILED)
				p = q;
			break;
		}
		ASSERT_NE(MAP_FAILED, q) TH_LOG("move %d: %s", misaligned, strerror(err));
		EXPECT_EQ(3, q[0]);
		EXPECT_EQ(4, q[ps - 1]);
		q[1] = 5;
		p = q;
	}
	EXPECT_EQ(3, p[0]);
	EXPECT_EQ(4, p[ps - 1]);
	ASSERT_EQ(0, munmap(p, ps));
	munmap(hole, 4 * ps);
	if (moves) {
		p = map_fd(_metadata, fd, ps);
		EXPECT_EQ(5, p[1]) TH_LOG("a write through the moved mapping is lost");
		ASSERT_EQ(0, munmap(p, ps));
	}
	close(fd);
	unlink_in(_metadata, self->dir, "mremap");
	expect_baseline(_metadata, &self->base, "after unlink");
}

TEST_F_TIMEOUT(dmemfs, mprotect_behaves, 120)
{
	size_t len = 64 * 1024, ps = variant->ps < 2 * len ? 2 * len : variant->ps;
	int fd, status;
	char *p;

	fd = open_file(_metadata, self->dir, "mprot", ps);
	p = map_fd(_metadata, fd, ps);
	fill(p, len, 42);
	ASSERT_EQ(0, mprotect(p, ps, PROT_READ));
	EXPECT_EQ(-1, check(p, len, 42));
	/* the child has no mapping (VM_DONTCOPY): re-map read-only there */
	status = in_child(child_write, p);
	EXPECT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, mprotect(p, ps, PROT_READ | PROT_WRITE));
	p[len] = 1;
	EXPECT_EQ(-1, check(p, len, 42));
	ASSERT_EQ(0, munmap(p, ps));
	close(fd);
	unlink_in(_metadata, self->dir, "mprot");
	expect_baseline(_metadata, &self->base, "after unlink");
}

/* A read-only mapping of this process faults on write: SIGSEGV. */
TEST_F_TIMEOUT(dmemfs, mprotect_read_only_write_faults, 120)
{
	size_t ps = variant->ps;
	int fd, status;
	pid_t pid;
	char *p;

	fd = open_file(_metadata, self->dir, "ro", ps);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			_exit(2);
		p[0] = 1;
		if (mprotect(p, ps, PROT_READ))
			_exit(3);
		if (p[0] != 1)
			_exit(4);
		p[1] = 1;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		TH_LOG("child status %#x", status);
	close(fd);
	unlink_in(_metadata, self->dir, "ro");
	expect_baseline(_metadata, &self->base, "after unlink");
}

TEST_F_TIMEOUT(dmemfs, proc_pid_mem, 120)
{
	size_t ps = variant->ps;
	const char msg[] = "written through /proc/self/mem";
	char back[sizeof(msg)];
	int fd, mfd;
	char *p;

	fd = open_file(_metadata, self->dir, "procmem", ps);
	p = map_fd(_metadata, fd, ps);
	mfd = open("/proc/self/mem", O_RDWR);
	ASSERT_LE(0, mfd);
	/* the dpage is not allocated yet: the write allocates it */
	ASSERT_EQ((ssize_t)sizeof(msg), pwrite(mfd, msg, sizeof(msg), (off_t)(uintptr_t)(p + ps / 2)))
		TH_LOG("pwrite /proc/self/mem: %s", strerror(errno));
	EXPECT_EQ(0, memcmp(p + ps / 2, msg, sizeof(msg)));
	memcpy(p + 100, "direct", 6);
	ASSERT_EQ(6, pread(mfd, back, 6, (off_t)(uintptr_t)(p + 100)));
	EXPECT_EQ(0, memcmp(back, "direct", 6));
	close(mfd);
	ASSERT_EQ(0, munmap(p, ps));
	close(fd);
	unlink_in(_metadata, self->dir, "procmem");
	expect_baseline(_metadata, &self->base, "after unlink");
}

struct racer {
	char *p;
	size_t len, ps;
	volatile int *stop;
	unsigned int seed;
	long faults, errors;
};

static void *race_faults(void *arg)
{
	struct racer *r = arg;

	while (!*r->stop) {
		size_t off = (rand_r(&r->seed) % (r->len / r->ps)) * r->ps;

		if (madvise(r->p + off, r->ps, MADV_POPULATE_WRITE))
			r->errors++;	/* EFAULT past EOF: expected */
		else
			r->faults++;
	}
	return NULL;
}

/* Faults from 4 threads while the file shrinks and grows: no leak, no oops. */
TEST_F_TIMEOUT(dmemfs, truncate_races_faults, 300)
{
	size_t ps = variant->ps, k = ps == SZ_1G ? 2 : 16, len = k * ps;
	int rounds = ps == SZ_1G ? 4 : ps == SZ_2M ? 20 : 100, i, fd, kfd;
	struct racer r[4];
	pthread_t t[4];
	volatile int stop = 0;
	long faults = 0;
	char *p, *why;

	kfd = kmsg_open();
	fd = open_file(_metadata, self->dir, "race", len);
	p = map_fd(_metadata, fd, len);
	for (i = 0; i < 4; i++) {
		r[i] = (struct racer){ .p = p, .len = len, .ps = ps, .stop = &stop,
				       .seed = i + 1 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, race_faults, &r[i]));
	}
	for (i = 0; i < rounds; i++) {
		ASSERT_EQ(0, ftruncate(fd, (i % k) * ps));
		usleep(1000);
		ASSERT_EQ(0, ftruncate(fd, len));
		usleep(1000);
	}
	/* let every thread fault on the full-size file at least once */
	for (i = 0; i < 4; i++)
		while (!r[i].faults)
			usleep(10000);
	stop = 1;
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		faults += r[i].faults;
	}
	EXPECT_LT(0, faults);
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, self->dir, "race");
	expect_baseline(_metadata, &self->base, "after unlink");
	why = kmsg_bad(kfd);
	EXPECT_EQ(NULL, why) TH_LOG("kernel log: %s", why);
}

#define KNOB "/sys/module/dmemfs/parameters/max_alloc_try_dpages"

/* One fault allocates max_alloc_try_dpages dpages; bad values are refused. */
TEST_F_TIMEOUT(dmemfs, max_alloc_try_dpages, 120)
{
	/* 1G: the pool has one dpage a node, nothing to allocate ahead */
	size_t ps = variant->ps, k = ps == SZ_1G ? 1 : 4;
	uint64_t used0 = used_all(_metadata);
	char *p;
	int fd;

	EXPECT_NE(0, write_str(KNOB, "0"));
	EXPECT_NE(0, write_str(KNOB, "65"));
	ASSERT_EQ(0, write_str(KNOB, ps == SZ_1G ? "1" : "4"));
	fd = open_file(_metadata, self->dir, "ahead", 8 * ps > SZ_1G ? ps : 8 * ps);
	p = map_fd(_metadata, fd, ps);
	p[0] = 1;
	write_str(KNOB, "1");
	EXPECT_EQ(k * ps, used_all(_metadata) - used0);
	ASSERT_EQ(0, munmap(p, ps));
	close(fd);
	unlink_in(_metadata, self->dir, "ahead");
	expect_baseline(_metadata, &self->base, "after unlink");
}

/*
 * The dpages live in an xarray private to the inode: fadvise(DONTNEED)
 * and drop_caches, which erase value entries in the page cache, must not
 * lose a byte of a file or leak its memory.
 */
TEST_F_TIMEOUT(dmemfs, drop_caches_and_fadvise_keep_data, 120)
{
	size_t len = 256 * 1024, ps = variant->ps < len ? len : variant->ps;
	uint64_t used0;
	char *p;
	int fd;

	fd = open_file(_metadata, self->dir, "keep", ps);
	p = map_fd(_metadata, fd, ps);
	fill(p, len, 77);
	used0 = used_all(_metadata);
	ASSERT_EQ(0, munmap(p, ps));
	EXPECT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	sync();
	EXPECT_EQ(0, write_str("/proc/sys/vm/drop_caches", "3"));
	EXPECT_EQ(used0, used_all(_metadata));
	p = map_fd(_metadata, fd, ps);
	EXPECT_EQ(-1, check(p, len, 77)) TH_LOG("data changed after fadvise/drop_caches");
	EXPECT_EQ(used0, used_all(_metadata));
	ASSERT_EQ(0, munmap(p, ps));
	close(fd);
	unlink_in(_metadata, self->dir, "keep");
	expect_baseline(_metadata, &self->base, "after unlink");
}

static sigjmp_buf bus_env;

static void bus_jump(int sig)
{
	siglongjmp(bus_env, sig);
}

/* Whether reading *@addr raises SIGBUS (1) or reads (0). */
static int read_sigbuses(volatile char *addr)
{
	struct sigaction sa = { .sa_handler = bus_jump }, old;
	volatile int r = 0;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_env, 1))
		r = 1;
	else
		(void)*addr;
	sigaction(SIGBUS, &old, NULL);
	return r;
}

/*
 * ftruncate() to a size inside a dpage that is mapped with a huge leaf,
 * while this process and a child (another mm) both map it.  The leaf
 * cannot be split: truncate unmaps the whole dpage, without taking either
 * mm's mmap lock (a zap of part of a PUD leaf asserts it).  The part below
 * the new size keeps its data and refaults with smaller leaves, the rest of
 * its page reads as zeros, and the next page is past EOF: SIGBUS.
 */
TEST_F_TIMEOUT(dmemfs, truncate_through_mapped_leaf, 300)
{
	size_t ps = variant->ps, len = 4 * ps, cut = ps + ps / 2 + 100;
	size_t eof_page = (cut + SZ_4K - 1) & ~(SZ_4K - 1), off;
	size_t below = ps / 2 < SZ_4K ? ps / 2 : SZ_4K, lo = ps + ps / 2 - below;
	int fd, kfd, hold, status;
	char *p, *why, path[128];
	long bad;
	pid_t pid;

	ASSERT_LE(2, pages_free(&self->base, ps, 2));
	/* a file of 2 dpages in a mapping of 4: past EOF is still mapped */
	kfd = kmsg_open();
	fd = open_file(_metadata, self->dir, "cut", 2 * ps);
	p = map_fd(_metadata, fd, len);
	fill_sparse(p, 2 * ps, ps, 23);
	fill(p + lo, below, 29);	/* just below the cut */
	snprintf(path, sizeof(path), "%s/cut", self->dir);
	/* a second mm that maps the same leaves */
	pid = second_mapper(path, len, 2 * ps, ps, &hold);
	ASSERT_LT(0, pid) TH_LOG("the second mapper did not map the file");

	ASSERT_EQ(0, ftruncate(fd, cut)) TH_LOG("ftruncate to %zu: %s", cut, strerror(errno));
	bad = check_sparse(p, ps, ps, 23);
	EXPECT_EQ(-1, bad) TH_LOG("first dpage: wrong word at %ld", bad);
	bad = check(p + lo, below, 29);
	EXPECT_EQ(-1, bad) TH_LOG("below the cut: wrong word at %ld", bad);
	bad = first_nonzero(p + cut + 4, eof_page - cut - 4);
	EXPECT_EQ(-1, bad) TH_LOG("rest of the cut page: nonzero at %ld", bad);
	EXPECT_EQ(1, read_sigbuses(p + eof_page)) TH_LOG("no SIGBUS past the new EOF");
	if (2 * ps - 1 >= eof_page)	/* not for 4K: the old end is in the cut page */
		EXPECT_EQ(1, read_sigbuses(p + 2 * ps - 1)) TH_LOG("no SIGBUS at the old end");

	/* grow back: what was cut off reads as zeros, up to the old end */
	ASSERT_EQ(0, ftruncate(fd, 2 * ps));
	off = (cut + 7) & ~7UL;
	bad = first_nonzero(p + off, (2 * ps < cut + 2 * SZ_4K ? 2 * ps : cut + 2 * SZ_4K) - off);
	EXPECT_EQ(-1, bad) TH_LOG("regrown part: nonzero at %ld", bad);
	if (2 * ps - below >= cut) {
		bad = first_nonzero(p + 2 * ps - below, below);
		EXPECT_EQ(-1, bad) TH_LOG("regrown end: nonzero at %ld", bad);
	}

	close(hold);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, self->dir, "cut");
	expect_baseline(_metadata, &self->base, "after unlink");
	why = kmsg_bad(kfd);
	EXPECT_EQ(NULL, why) TH_LOG("kernel log: %s", why);
}

/*
 * size=: a per-mount limit on the dmem its files hold.  Two instances of
 * 2M dpages, 8M and 4M: each gets exactly its limit (fallocate ENOSPC,
 * fault SIGBUS past it) whatever the other holds, statfs reports the
 * limit, remount changes it but not below use, and a bad size= fails the
 * mount.
 */
TEST(mount_size_limit)
{
	char a[] = "/tmp/dmemfs-sizeA.XXXXXX", b[] = "/tmp/dmemfs-sizeB.XXXXXX";
	static const char *const bad[] = { "pagesize=2M,size=3M", "pagesize=2M,size=junk",
					   "pagesize=2M,size=", "pagesize=2M,size", NULL };
	struct dstats base;
	struct statfs sf;
	char path[64];
	int fa, fb, i, kfd;
	char *p, *why;

	ASSERT_EQ(0, read_stats(&base));
	ASSERT_LE(16 * SZ_2M, sum(base.free, base.nr));
	ASSERT_NE(NULL, mkdtemp(a));
	ASSERT_NE(NULL, mkdtemp(b));
	kfd = kmsg_open();
	for (i = 0; bad[i]; i++) {
		EXPECT_EQ(-1, mount("none", a, "dmemfs", 0, bad[i]))
			TH_LOG("mount -o %s succeeded", bad[i]);
		EXPECT_EQ(EINVAL, errno);
		if (!statfs(a, &sf) && (unsigned long)sf.f_type == DMEMFS_MAGIC)
			umount(a);
	}
	ASSERT_EQ(0, mount("none", a, "dmemfs", 0, "pagesize=2M,size=8M"));
	ASSERT_EQ(0, mount("none", b, "dmemfs", 0, "pagesize=2M,size=4M"));
	EXPECT_TRUE(mounted_with(a, "size=8M"));
	ASSERT_EQ(0, statfs(a, &sf));
	EXPECT_EQ(SZ_2M, (size_t)sf.f_bsize);
	EXPECT_EQ(4, sf.f_blocks);
	EXPECT_EQ(4, sf.f_bfree);

	snprintf(path, sizeof(path), "%s/f", a);
	fa = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fa);
	snprintf(path, sizeof(path), "%s/f", b);
	fb = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fb);
	ASSERT_EQ(0, ftruncate(fa, 16 * SZ_2M));
	/* all or nothing: 10M does not fit in 8M, 8M does */
	EXPECT_EQ(-1, fallocate(fa, 0, 0, 5 * SZ_2M));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(0, fallocate(fa, 0, 0, 4 * SZ_2M)) TH_LOG("fallocate 8M: %s", strerror(errno));
	ASSERT_EQ(0, statfs(a, &sf));
	EXPECT_EQ(0, sf.f_bfree);
	/* a fault past the limit */
	p = mmap(NULL, 16 * SZ_2M, PROT_READ | PROT_WRITE, MAP_SHARED, fa, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(1, read_sigbuses(p + 4 * SZ_2M)) TH_LOG("no SIGBUS past size=8M");
	EXPECT_EQ(0, read_sigbuses(p + 4 * SZ_2M - 1));
	munmap(p, 16 * SZ_2M);
	/* the other tenant still gets its own 4M, and no more */
	EXPECT_EQ(0, fallocate(fb, 0, 0, 2 * SZ_2M)) TH_LOG("fallocate 4M in B: %s", strerror(errno));
	EXPECT_EQ(-1, fallocate(fb, 0, 2 * SZ_2M, SZ_2M));
	EXPECT_EQ(ENOSPC, errno);

	/* remount: up, then not below what A holds */
	EXPECT_EQ(0, mount("none", a, "dmemfs", MS_REMOUNT, "size=16M"))
		TH_LOG("remount size=16M: %s", strerror(errno));
	EXPECT_TRUE(mounted_with(a, "size=16M"));
	EXPECT_EQ(0, fallocate(fa, 0, 4 * SZ_2M, 2 * SZ_2M)) TH_LOG("fallocate after remount: %s", strerror(errno));
	EXPECT_EQ(-1, mount("none", a, "dmemfs", MS_REMOUNT, "size=4M"));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_TRUE(mounted_with(a, "size=16M"));
	/* punching gives the limit back */
	EXPECT_EQ(0, fallocate(fa, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 6 * SZ_2M));
	ASSERT_EQ(0, statfs(a, &sf));
	EXPECT_EQ(8, sf.f_bfree);
	EXPECT_EQ(0, mount("none", a, "dmemfs", MS_REMOUNT, "size=0"));
	ASSERT_EQ(0, statfs(a, &sf));
	EXPECT_EQ(sum(base.total, base.nr) / SZ_2M, sf.f_blocks);

	close(fa);
	close(fb);
	EXPECT_EQ(0, umount(a));
	EXPECT_EQ(0, umount(b));
	rmdir(a);
	rmdir(b);
	expect_baseline(_metadata, &base, "after umount");
	why = kmsg_bad(kfd);
	EXPECT_EQ(NULL, why) TH_LOG("kernel log: %s", why);
}

/*
 * Long calls yield the CPU.  A sampler thread at SCHED_FIFO, on the CPU
 * the test runs on, wakes every millisecond and counts.  Under voluntary
 * preemption it only gets the CPU where the kernel yields
 * (cond_resched()), so a call that zeroes or frees a GiB without yielding
 * lets it count nothing until the call returns.  Each call below that
 * runs for long enough to tell (100 ms or more) must let it count at least
 * once per 50 ms: a loose bound on a thread that asks for the CPU every
 * millisecond, not a speed.
 */
struct sampler {
	volatile long ticks;
	volatile int stop;
	int cpu, err;
};

static void *sampler_fn(void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };
	struct timespec ms = { 0, 1000000 };
	struct sampler *s = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	s->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (!s->err)
		s->err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	while (!s->err && !s->stop) {
		nanosleep(&ms, NULL);
		s->ticks++;
	}
	return NULL;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

enum yield_op { Y_FALLOCATE, Y_PUNCH, Y_TRUNCATE, Y_NR };
static const char *const yield_op_name[Y_NR] = { "fallocate", "punch hole", "truncate" };

static int yield_op(int fd, enum yield_op op, size_t len)
{
	switch (op) {
	case Y_FALLOCATE:
		return fallocate(fd, 0, 0, len);
	case Y_PUNCH:	/* frees the inner dpages, zeroes the parts at the ends */
		return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, SZ_4K,
				 len - 2 * SZ_4K);
	default:
		return ftruncate(fd, 0);
	}
}

TEST_F_TIMEOUT(dmemfs, long_calls_yield, 600)
{
	size_t ps = variant->ps, len;
	struct sampler s = { .cpu = node_cpu(0) };
	unsigned long node0 = 1;
	long checked = 0;
	pthread_t th;
	int fd, op;

	/* 512 MiB (1 GiB of 1G dpages): long enough to tell under TCG */
	len = ps == SZ_1G ? SZ_1G : 512UL << 20;
	ASSERT_LE(len, self->base.free[0]) TH_LOG("node0: %lu bytes free", self->base.free[0]);
	ASSERT_LE(0, s.cpu);
	ASSERT_EQ(0, pin_to_node(0));
	ASSERT_EQ(0, syscall(__NR_set_mempolicy, MPOL_BIND, &node0, 64));
	fd = open_file(_metadata, self->dir, "long", len);
	ASSERT_EQ(0, pthread_create(&th, NULL, sampler_fn, &s));
	usleep(20000);
	ASSERT_EQ(0, s.err) TH_LOG("sampler: %s", strerror(s.err));
	ASSERT_LT(0, s.ticks);
	/*
	 * Without background zeroing the allocation zeroes every dpage
	 * itself: a pre-zeroed pool would make fallocate too quick to tell.
	 */
	ASSERT_EQ(0, write_str(ZEROING, "0"));

	for (op = 0; op < Y_NR; op++) {
		struct timespec t0;
		long k0 = s.ticks, k, ms;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		EXPECT_EQ(0, yield_op(fd, op, len))
			TH_LOG("%s: %s", yield_op_name[op], strerror(errno));
		k = s.ticks - k0;
		ms = ms_since(&t0);
		TH_LOG("%s of %zu MiB: %ld ms, the sampler ran %ld times", yield_op_name[op],
		       len >> 20, ms, k);
		if (ms < 100)
			continue;
		checked++;
		EXPECT_LE(ms / 50, k) TH_LOG("%s did not yield the CPU", yield_op_name[op]);
		usleep(10000);
	}
	write_str(ZEROING, "1");
	s.stop = 1;
	pthread_join(th, NULL);
	/* zeroing at least one GiB or 512 MiB takes 100 ms anywhere */
	EXPECT_LT(0, checked) TH_LOG("no call ran long enough to check");
	close(fd);
	unlink_in(_metadata, self->dir, "long");
	expect_baseline(_metadata, &self->base, "after unlink");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return harness_list_tests();
	kmsg_mark("dmemfs_vm_test: start");
	harness_filter_env();
	return test_harness_run(argc, argv);
}
