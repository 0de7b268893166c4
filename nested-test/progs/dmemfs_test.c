// SPDX-License-Identifier: GPL-2.0
/*
 * dmemfs_test: in-guest functional test of dmem + dmemfs (kselftest harness).
 *
 * Runs inside the L1 test VM booted with dmem= on two NUMA nodes.  Every
 * check is an assert of this program; the per-node pool counters in
 * /sys/kernel/mm/dmem/node<N>/{total,free,used}_bytes are the witness of
 * where dpages come from and that they go back.
 *
 *   dmemfs_test            run all tests (TAP on stdout)
 *   dmemfs_test --list     print the test names, one a line, and exit
 *
 * The per-page-size tests are fixture variants (dmemfs.4K.*, dmemfs.2M.*,
 * dmemfs.1G.*, dmemfs_fixture.h).  They size themselves from the live pool,
 * so they work for any dmem= reservation of at least one page of each size
 * per node.  dmemfs as VM memory (huge leaves, policies, GUP, fork, mremap,
 * races with faults) is dmemfs_vm_test.
 */
#include "dmemfs_fixture.h"

TEST(sysfs_stats)
{
	struct dstats s;
	int n;

	ASSERT_EQ(0, read_stats(&s)) TH_LOG("no " STATS_DIR " or unreadable counters");
	for (n = 0; n < 2; n++) {
		EXPECT_LT(0, s.total[n]) TH_LOG("node%d has no dmem (no " STATS_DIR "/node%d)", n, n);
		EXPECT_EQ(0, s.total[n] % SZ_128M) TH_LOG("node%d total %lu", n, s.total[n]);
		EXPECT_EQ(s.total[n], s.free[n] + s.used[n])
			TH_LOG("node%d total %lu free %lu used %lu", n,
			       s.total[n], s.free[n], s.used[n]);
		EXPECT_EQ(0, s.used[n]) TH_LOG("node%d used before any test", n);
	}
}

/* mount -o @opts on @dir: refused with EINVAL, and @msg in the kernel log. */
static void bad_mount(struct __test_metadata *_metadata, const char *dir, const char *opts,
		      const char *msg)
{
	const char *const want[] = { msg, NULL };
	int wfd = kmsg_open();
	struct statfs sf;
	char *why;

	EXPECT_EQ(-1, mount("none", dir, "dmemfs", 0, opts))
		TH_LOG("mount -o %s succeeded", opts);
	EXPECT_EQ(EINVAL, errno) TH_LOG("mount -o %s: %s", opts, strerror(errno));
	if (!statfs(dir, &sf) && (unsigned long)sf.f_type == DMEMFS_MAGIC)
		umount(dir);
	why = kmsg_scan(wfd, want);
	EXPECT_NE(NULL, why) TH_LOG("mount -o %s: no \"%s\" in the kernel log", opts, msg);
	free(why);
}

/*
 * A bad or unknown mount option fails the mount with a message, as tmpfs
 * and hugetlbfs do: a misspelt size= that mounted would be no limit, a
 * bad pagesize= that fell back to 4K would be a guest without huge
 * leaves, a misspelt recover an empty instance.  Never a WARN().
 */
TEST(mount_bad_options)
{
	char dir[] = "/tmp/dmemfs-bad.XXXXXX";
	static const struct { const char *opts, *msg; } bad[] = {
		{ "pagesize=8K", "dmemfs: unsupported pagesize=8K" },
		{ "pagesize=3M", "dmemfs: unsupported pagesize=3M" },
		{ "pagesize=0", "dmemfs: unsupported pagesize=0" },
		{ "pagesize=2MB", "dmemfs: unsupported pagesize=2MB" },
		{ "pagesize=junk", "dmemfs: unsupported pagesize=junk" },
		{ "pagesize", "dmemfs: Bad value for 'pagesize'" },
		{ "nosuchoption=1", "dmemfs: Unknown parameter 'nosuchoption'" },
		{ "sise=4G", "dmemfs: Unknown parameter 'sise'" },
		{ "recovr", "dmemfs: Unknown parameter 'recovr'" },
		{ "recover=1", "dmemfs: Unexpected value for 'recover'" },
		{ "size=4Q", "dmemfs: bad size=4Q" },
		{ "nodes=junk", "dmemfs: bad nodes=junk" },
		{ "nodes=", "dmemfs: nodes needs a value" },
		{ "nodes", "dmemfs: nodes needs a value" },
		{ "nodes=7", "dmemfs: nodes=7: no dmem on these nodes" },
		{ "nodes=100000", "dmemfs: bad nodes=100000" },
		{ "recover", "dmemfs: recover: no table kept for source none, pagesize 4K" },
		{ "persist", "dmemfs: persist is for remount" },
	};
	char *why;
	int kfd;

	ASSERT_NE(NULL, mkdtemp(dir));
	kfd = kmsg_open();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		bad_mount(_metadata, dir, bad[i].opts, bad[i].msg);
	rmdir(dir);
	why = kmsg_bad(kfd);
	EXPECT_EQ(NULL, why) TH_LOG("kernel log: %s", why);
}

/*
 * Remount takes size= and persist; anything else that would change the
 * instance, or that does not parse, fails the remount with a message and
 * leaves the instance as it was.
 */
TEST(remount_bad_options)
{
	char dir[] = "/tmp/dmemfs-bad.XXXXXX";
	static const struct { const char *opts, *msg; } bad[] = {
		{ "pagesize=4K", "dmemfs: pagesize cannot change on remount" },
		{ "pagesize=1G", "dmemfs: pagesize cannot change on remount" },
		{ "nodes=1", "dmemfs: nodes cannot change on remount" },
		{ "recover", "dmemfs: recover is for a new mount" },
		{ "sise=4G", "dmemfs: Unknown parameter 'sise'" },
		{ "size=junk", "dmemfs: bad size=junk" },
		{ "size=3M", "dmemfs: size=3145728 is not a multiple of the dpage size" },
	};
	char *why;
	int kfd;

	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, mount("none", dir, "dmemfs", 0, "pagesize=2M,nodes=0,size=64M"));
	kfd = kmsg_open();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *const want[] = { bad[i].msg, NULL };
		int wfd = kmsg_open();

		EXPECT_EQ(-1, mount("none", dir, NULL, MS_REMOUNT, bad[i].opts))
			TH_LOG("remount -o %s succeeded", bad[i].opts);
		EXPECT_EQ(EINVAL, errno) TH_LOG("remount -o %s: %s", bad[i].opts, strerror(errno));
		why = kmsg_scan(wfd, want);
		EXPECT_NE(NULL, why) TH_LOG("remount -o %s: no \"%s\" in the kernel log",
					    bad[i].opts, bad[i].msg);
		free(why);
		EXPECT_TRUE(mounted_with(dir, "pagesize=2M") && mounted_with(dir, "nodes=0") &&
			    mounted_with(dir, "size=64M"))
			TH_LOG("remount -o %s changed the instance", bad[i].opts);
	}
	/* what remount may do: the same pagesize and nodes, a new size= */
	EXPECT_EQ(0, mount("none", dir, NULL, MS_REMOUNT, "pagesize=2M,nodes=0,size=128M"))
		TH_LOG("remount with the same pagesize and nodes: %s", strerror(errno));
	EXPECT_TRUE(mounted_with(dir, "size=128M"));
	umount(dir);
	rmdir(dir);
	why = kmsg_bad(kfd);
	EXPECT_EQ(NULL, why) TH_LOG("kernel log: %s", why);
}

struct charger {
	int fd;
	volatile int stop;
	long ok;
};

/* fallocate() one 4 KiB page after another until told to stop */
static void *charge_pages(void *arg)
{
	struct charger *c = arg;
	off_t off = 0;

	while (!c->stop) {
		if (!fallocate(c->fd, 0, off, SZ_4K)) {
			off += SZ_4K;
			c->ok++;
		}
	}
	return NULL;
}

/*
 * remount size= against faults that charge the mount at the same time: a
 * remount that succeeds leaves the files at or below its limit, also when
 * a dpage was being charged while it checked (before the fix a charge
 * that had read the old limit could land after the check).  A thread
 * fallocates 4 KiB pages one after another; the test sets the limit just
 * above what the files hold, again and again, and each time, once the
 * thread can only hit the limit, the files must not hold more.
 */
TEST(remount_size_races_charges)
{
	char dir[] = "/tmp/dmemfs-race.XXXXXX", opts[64], path[96];
	struct charger c = { 0 };
	uint64_t limit = 0, over = 0, refused = 0;
	struct statfs st;
	pthread_t th;
	time_t end;
	int i;

	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, mount("none", dir, "dmemfs", 0, "pagesize=4K,size=64M"));
	snprintf(path, sizeof(path), "%s/f", dir);
	c.fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, c.fd);
	ASSERT_EQ(0, pthread_create(&th, NULL, charge_pages, &c));
	/* 20 s at most: the harness gives a global test 30 */
	end = time(NULL) + 20;
	for (i = 0; i < 2000 && !over && time(NULL) < end; i++) {
		ASSERT_EQ(0, statfs(dir, &st));
		limit = (st.f_blocks - st.f_bfree) * st.f_bsize + 2 * SZ_4K;
		snprintf(opts, sizeof(opts), "size=%lu", limit);
		if (mount("none", dir, NULL, MS_REMOUNT, opts)) {
			refused++;	/* the files grew past it first: fine */
			continue;
		}
		usleep(2000);		/* the thread reaches the limit */
		ASSERT_EQ(0, statfs(dir, &st));
		if ((st.f_blocks - st.f_bfree) * st.f_bsize > limit)
			over = (st.f_blocks - st.f_bfree) * st.f_bsize - limit;
	}
	c.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%d remounts (%lu refused), %ld pages charged", i, refused, c.ok);
	EXPECT_EQ(0, over) TH_LOG("the files hold %lu bytes more than size=%lu", over, limit);
	close(c.fd);
	umount(dir);
	rmdir(dir);
}

TEST_F(dmemfs, statfs)
{
	size_t ps = variant->ps;
	struct statfs sf;
	struct dstats now;
	void *p;
	int fd;

	ASSERT_EQ(0, statfs(self->dir, &sf));
	EXPECT_EQ(DMEMFS_MAGIC, (unsigned long)sf.f_type);
	EXPECT_EQ(ps, (size_t)sf.f_bsize);
	EXPECT_EQ(sum(self->base.total, self->base.nr) / ps, sf.f_blocks);
	EXPECT_EQ(sum(self->base.free, self->base.nr) / ps, sf.f_bfree);

	/* One dpage allocated shows in f_bfree. */
	fd = open_file(_metadata, self->dir, "one", ps);
	p = map_fd(_metadata, fd, ps);
	touch(p, ps, ps);
	ASSERT_EQ(0, statfs(self->dir, &sf));
	ASSERT_EQ(0, read_stats(&now));
	EXPECT_EQ(sum(now.free, now.nr) / ps, sf.f_bfree);
	EXPECT_EQ(sum(self->base.free, self->base.nr) / ps - 1, sf.f_bfree);
	munmap(p, ps);
	close(fd);
	unlink_in(_metadata, self->dir, "one");
	expect_baseline(_metadata, &self->base, "after unlink");
}

TEST_F_TIMEOUT(dmemfs, pattern_96m, 180)
{
	const size_t len = 96UL << 20;
	size_t ps = variant->ps, dlen = (len + ps - 1) / ps * ps;
	uint64_t seed = 0x5eed0000 + ps;
	struct stat st;
	long bad;
	void *p;
	int fd;

	fd = open_file(_metadata, self->dir, "pattern", len);
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(len, (size_t)st.st_size);
	p = map_fd(_metadata, fd, len);
	fill(p, len, seed);
	bad = check(p, len, seed);
	EXPECT_EQ(-1, bad) TH_LOG("same mapping: wrong word at offset %ld", bad);
	EXPECT_EQ(dlen, used_all(_metadata) - sum(self->base.used, self->base.nr));
	ASSERT_EQ(0, munmap(p, len));
	close(fd);

	/* A new open and a new mapping see the same data. */
	fd = open_file(_metadata, self->dir, "pattern", len);
	p = map_fd(_metadata, fd, len);
	bad = check(p, len, seed);
	EXPECT_EQ(-1, bad) TH_LOG("second mapping: wrong word at offset %ld", bad);
	EXPECT_EQ(dlen, used_all(_metadata) - sum(self->base.used, self->base.nr));
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, self->dir, "pattern");
	expect_baseline(_metadata, &self->base, "after unlink");
}

TEST_F_TIMEOUT(dmemfs, truncate_frees, 120)
{
	size_t ps = variant->ps, n = pages_free(&self->base, ps, 8);
	uint64_t used0 = sum(self->base.used, self->base.nr);
	long bad;
	void *p;
	int fd;

	ASSERT_LE(2, n);
	fd = open_file(_metadata, self->dir, "trunc", n * ps);
	p = map_fd(_metadata, fd, n * ps);
	fill_sparse(p, n * ps, ps, 7);
	ASSERT_EQ(n * ps, used_all(_metadata) - used0);
	ASSERT_EQ(0, munmap(p, n * ps));

	/* Shrink to one page: n-1 dpages go back, the first keeps its data. */
	ASSERT_EQ(0, ftruncate(fd, ps));
	EXPECT_EQ(ps, used_all(_metadata) - used0);
	p = map_fd(_metadata, fd, ps);
	bad = check_sparse(p, ps, ps, 7);
	EXPECT_EQ(-1, bad) TH_LOG("kept page: wrong word at offset %ld", bad);
	ASSERT_EQ(0, munmap(p, ps));

	/* Grow again: the new part reads as zeros and allocates at fault. */
	ASSERT_EQ(0, ftruncate(fd, 2 * ps));
	EXPECT_EQ(ps, used_all(_metadata) - used0);
	p = map_fd(_metadata, fd, 2 * ps);
	bad = first_nonzero((char *)p + ps, ps);
	EXPECT_EQ(-1, bad) TH_LOG("regrown page: nonzero at offset %ld", bad);
	EXPECT_EQ(2 * ps, used_all(_metadata) - used0);
	ASSERT_EQ(0, munmap(p, 2 * ps));

	/* Truncate to zero returns everything, per node. */
	ASSERT_EQ(0, ftruncate(fd, 0));
	expect_baseline(_metadata, &self->base, "after ftruncate 0");
	close(fd);
	unlink_in(_metadata, self->dir, "trunc");
	expect_baseline(_metadata, &self->base, "after unlink");
}

TEST_F_TIMEOUT(dmemfs, unlink_frees_at_last_unmap, 120)
{
	size_t ps = variant->ps, n = pages_free(&self->base, ps, 4);
	uint64_t used0 = sum(self->base.used, self->base.nr);
	void *p;
	long bad;
	int fd;

	fd = open_file(_metadata, self->dir, "victim", n * ps);
	p = map_fd(_metadata, fd, n * ps);
	fill_sparse(p, n * ps, ps, 11);
	close(fd);
	/* Unlinked while mapped: data stays usable, dpages stay held. */
	unlink_in(_metadata, self->dir, "victim");
	bad = check_sparse(p, n * ps, ps, 11);
	EXPECT_EQ(-1, bad) TH_LOG("after unlink: wrong word at offset %ld", bad);
	EXPECT_EQ(n * ps, used_all(_metadata) - used0);
	/* The last unmap drops the inode: every dpage goes back. */
	ASSERT_EQ(0, munmap(p, n * ps));
	expect_baseline(_metadata, &self->base, "after last munmap");
}

/*
 * Fill the whole free pool of node 0 with a pattern, free it, then fill it
 * again with a new file: every dpage of the second file was a dpage of the
 * first one, and it must read as zeros.
 */
TEST_F_TIMEOUT(dmemfs, zeroed_after_reuse, 300)
{
	size_t ps = variant->ps;
	size_t len = self->base.free[0] / ps * ps;
	unsigned long mask = 1UL << 0;
	struct dstats now;
	long bad;
	void *p;
	int fd;

	ASSERT_LE(ps, len);
	fd = open_file(_metadata, self->dir, "dirty", len);
	p = map_fd(_metadata, fd, len);
	ASSERT_EQ(0, sys_mbind(p, len, MPOL_BIND, &mask, MAX_NODES, 0))
		TH_LOG("mbind BIND node0: %s", strerror(errno));
	memset(p, 0xa5, len);
	ASSERT_EQ(0, read_stats(&now));
	ASSERT_EQ(0, now.free[0]) TH_LOG("node0 not full after writing %zu bytes", len);
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, self->dir, "dirty");
	expect_baseline(_metadata, &self->base, "after freeing the dirty file");

	fd = open_file(_metadata, self->dir, "fresh", len);
	p = map_fd(_metadata, fd, len);
	ASSERT_EQ(0, sys_mbind(p, len, MPOL_BIND, &mask, MAX_NODES, 0));
	bad = first_nonzero(p, len);
	EXPECT_EQ(-1, bad) TH_LOG("fresh file: nonzero byte near offset %ld", bad);
	ASSERT_EQ(0, read_stats(&now));
	EXPECT_EQ(0, now.free[0]) TH_LOG("fresh file did not reuse all of node0");
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, self->dir, "fresh");
	expect_baseline(_metadata, &self->base, "after unlink");
}

/* Run on node 0's CPU so that only the policy can explain node-1 pages. */
TEST_F_TIMEOUT(dmemfs, bind_node1, 120)
{
	policy_case(_metadata, self->dir, variant->ps, MPOL_BIND, 1, 0, 1);
}

TEST_F_TIMEOUT(dmemfs, bind_node0, 120)
{
	policy_case(_metadata, self->dir, variant->ps, MPOL_BIND, 0, 1, 0);
}

TEST_F_TIMEOUT(dmemfs, preferred_node1, 120)
{
	policy_case(_metadata, self->dir, variant->ps, MPOL_PREFERRED, 1, 0, 1);
}

TEST_F_TIMEOUT(dmemfs, local_node1, 120)
{
	policy_case(_metadata, self->dir, variant->ps, MPOL_LOCAL, 0, 1, 1);
}

/*
 * nodes=1: statfs counts node 1 only, and every dpage comes from node 1
 * whatever the file's policy: a bind to node 0, a preference for node 0,
 * local allocation on node 0's CPU.  nodes=0-1: a bind to one of them
 * stays there.  The instances are mounted inside the fixture's, so that
 * its lazy unmount takes them along when an assert ends the test early.
 */
TEST_F_TIMEOUT(dmemfs, nodes_scope, 300)
{
	static const struct { const char *nodes; int mode, policy, run, want; } cases[] = {
		{ "1", MPOL_BIND, 0, 0, 1 },
		{ "1", MPOL_PREFERRED, 0, 0, 1 },
		{ "1", MPOL_LOCAL, 0, 0, 1 },
		{ "0-1", MPOL_BIND, 1, 0, 1 },
		{ "0-1", MPOL_BIND, 0, 1, 0 },
	};
	size_t ps = variant->ps;
	char dir[96], opts[64];
	struct statfs sf;

	snprintf(dir, sizeof(dir), "%s/sub", self->dir);
	ASSERT_EQ(0, mkdir(dir, 0700));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(opts, sizeof(opts), "%s,nodes=%s", variant->opts, cases[i].nodes);
		ASSERT_EQ(0, mount("none", dir, "dmemfs", 0, opts))
			TH_LOG("mount -o %s: %s", opts, strerror(errno));
		snprintf(opts, sizeof(opts), "nodes=%s", cases[i].nodes);
		EXPECT_TRUE(mounted_with(dir, opts)) TH_LOG("%s is not in /proc/mounts", opts);
		if (!strcmp(cases[i].nodes, "1")) {
			ASSERT_EQ(0, statfs(dir, &sf));
			EXPECT_EQ(self->base.total[1] / ps, sf.f_blocks)
				TH_LOG("nodes=1: statfs total %lu dpages, node1 has %lu",
				       (unsigned long)sf.f_blocks, self->base.total[1] / ps);
			EXPECT_EQ(self->base.free[1] / ps, sf.f_bfree)
				TH_LOG("nodes=1: statfs free %lu dpages, node1 has %lu",
				       (unsigned long)sf.f_bfree, self->base.free[1] / ps);
		}
		TH_LOG("nodes=%s, policy mode %d on node%d, CPU of node%d", cases[i].nodes,
		       cases[i].mode, cases[i].policy, cases[i].run);
		policy_case(_metadata, dir, ps, cases[i].mode, cases[i].policy, cases[i].run,
			    cases[i].want);
		ASSERT_EQ(0, umount(dir)) TH_LOG("umount %s: %s", dir, strerror(errno));
	}
	ASSERT_EQ(0, rmdir(dir));
	expect_baseline(_metadata, &self->base, "after the nodes= instances");
}

TEST_F(dmemfs, map_private_refused)
{
	size_t ps = variant->ps;
	void *p;
	int fd;

	fd = open_file(_metadata, self->dir, "priv", ps);
	errno = 0;
	p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	if (p != MAP_FAILED)
		munmap(p, ps);
	errno = 0;
	p = mmap(NULL, ps, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, p) TH_LOG("read-only MAP_PRIVATE accepted");
	if (p != MAP_FAILED)
		munmap(p, ps);
	close(fd);
	unlink_in(_metadata, self->dir, "priv");
	expect_baseline(_metadata, &self->base, "after unlink");
}

/*
 * The owner of a file with a size, or of a directory with entries, is
 * fixed, for root too: libvirt's relabelling of a path that another
 * domain's hot-plugged device names (chown to the qemu user, then
 * "restore" to root) must leave the file, its directory and the QEMU that
 * has it open as they were.
 */
TEST_F(dmemfs, owner_fixed_once_sized)
{
	struct stat st;
	char path[256], sub[128];
	int fd;

	snprintf(path, sizeof(path), "%s/owned", self->dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", path, strerror(errno));
	/* no size yet: the owner can still be set, as the hook does */
	EXPECT_EQ(0, fchown(fd, 64055, 64055)) TH_LOG("chown of an empty file: %s", strerror(errno));
	ASSERT_EQ(0, ftruncate(fd, variant->ps));
	errno = 0;
	EXPECT_EQ(-1, chown(path, 0, 0)) TH_LOG("root took a sized file");
	EXPECT_EQ(EPERM, errno);
	errno = 0;
	EXPECT_EQ(-1, fchown(fd, -1, 0)) TH_LOG("the group of a sized file changed");
	EXPECT_EQ(EPERM, errno);
	/* the same owner is no change: libvirt's relabel skips nothing else */
	EXPECT_EQ(0, chown(path, 64055, 64055)) TH_LOG("chown to its own owner: %s", strerror(errno));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(64055, st.st_uid);
	EXPECT_EQ(64055, st.st_gid);
	/* mode changes are the owner's business, as on any file */
	EXPECT_EQ(0, fchmod(fd, 0640));
	/* shrunk to nothing, it can be given away again */
	ASSERT_EQ(0, ftruncate(fd, 0));
	EXPECT_EQ(0, fchown(fd, 0, 0)) TH_LOG("chown of an emptied file: %s", strerror(errno));
	close(fd);
	unlink_in(_metadata, self->dir, "owned");
	/* a directory with entries keeps its owner too: the way to the files */
	snprintf(sub, sizeof(sub), "%s/d", self->dir);
	ASSERT_EQ(0, mkdir(sub, 0710));
	EXPECT_EQ(0, chown(sub, 0, 64055)) TH_LOG("chown of an empty directory: %s", strerror(errno));
	fd = open_file(_metadata, sub, "f", 0);
	close(fd);
	errno = 0;
	EXPECT_EQ(-1, chown(sub, 0, 0)) TH_LOG("the group of a directory with a file changed");
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(0, chmod(sub, 0700));
	unlink_in(_metadata, sub, "f");
	EXPECT_EQ(0, chown(sub, 64055, 64055)) TH_LOG("chown of an emptied directory: %s",
						      strerror(errno));
	ASSERT_EQ(0, rmdir(sub));
	expect_baseline(_metadata, &self->base, "after unlink");
}

/*
 * A child binds a mapping larger than the whole pool to node 1 and touches
 * it page by page.  It must die of SIGBUS once node 1 is empty, node 0 must
 * not be touched, and the kernel log must stay free of warnings and oopses.
 */
TEST_F_TIMEOUT(dmemfs, exhaust_sigbus, 300)
{
	size_t ps = variant->ps;
	size_t len = (sum(self->base.total, self->base.nr) / ps + 1) * ps;
	volatile size_t *progress;
	struct dstats now;
	int fd, status, kfd;
	char *why;
	pid_t pid;

	progress = mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, progress);
	*progress = 0;
	fd = open_file(_metadata, self->dir, "hog", len);
	kmsg_mark("dmemfs_test: exhaust begin");
	kfd = kmsg_open();
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		unsigned long mask = 1UL << 1;
		volatile char *p;
		size_t off;

		signal(SIGBUS, SIG_DFL);
		pin_to_node(0);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			_exit(10);
		if (sys_mbind((void *)p, len, MPOL_BIND, &mask, MAX_NODES, 0))
			_exit(11);
		for (off = 0; off < len; off += ps) {
			p[off] = 1;
			*progress = off / ps + 1;
		}
		_exit(12);	/* the whole file fit: no SIGBUS */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("child exited with %d, no SIGBUS",
						 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (WIFSIGNALED(status)) {
		EXPECT_EQ(SIGBUS, WTERMSIG(status));
	}
	/* Pages made before the fault that failed are exactly node 1's pool. */
	EXPECT_EQ(self->base.free[1] / ps, *progress)
		TH_LOG("touched %zu pages before SIGBUS, node1 had %lu free", *progress,
		       self->base.free[1] / ps);
	ASSERT_EQ(0, read_stats(&now));
	EXPECT_GT(ps, now.free[1]) TH_LOG("node1 still has %lu bytes free", now.free[1]);
	EXPECT_EQ(self->base.used[0], now.used[0]) TH_LOG("MPOL_BIND node1 spilled to node0");
	close(fd);
	unlink_in(_metadata, self->dir, "hog");
	expect_baseline(_metadata, &self->base, "after unlink");
	why = kmsg_bad(kfd);
	EXPECT_EQ(NULL, why) TH_LOG("kernel log after exhaustion: %s", why);
	munmap((void *)progress, SZ_4K);
}

TEST_F(dmemfs, dirs_and_rename)
{
	size_t ps = variant->ps;
	char a[128], b[128], c[128], path[256], path2[256];
	uint64_t used0 = sum(self->base.used, self->base.nr);
	struct stat st;
	struct dirent *de;
	DIR *d;
	long bad;
	void *p;
	int fd, entries = 0;

	snprintf(a, sizeof(a), "%s/a", self->dir);
	snprintf(b, sizeof(b), "%s/b", self->dir);
	snprintf(c, sizeof(c), "%s/c", self->dir);
	ASSERT_EQ(0, mkdir(a, 0755)) TH_LOG("mkdir: %s", strerror(errno));
	ASSERT_EQ(0, mkdir(b, 0755));
	ASSERT_EQ(0, stat(a, &st));
	EXPECT_TRUE(S_ISDIR(st.st_mode));

	fd = open_file(_metadata, a, "f", ps);
	p = map_fd(_metadata, fd, ps);
	fill_sparse(p, ps, ps, 42);
	ASSERT_EQ(0, munmap(p, ps));
	close(fd);

	/* Move the file to another directory. */
	snprintf(path, sizeof(path), "%s/f", a);
	snprintf(path2, sizeof(path2), "%s/g", b);
	ASSERT_EQ(0, rename(path, path2)) TH_LOG("rename: %s", strerror(errno));
	EXPECT_EQ(-1, stat(path, &st));
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(0, stat(path2, &st));
	EXPECT_EQ(ps, (size_t)st.st_size);
	EXPECT_EQ(ps, used_all(_metadata) - used0);

	/* Rename the directory, the data follows. */
	ASSERT_EQ(0, rename(b, c));
	snprintf(path2, sizeof(path2), "%s/g", c);
	fd = open(path2, O_RDWR);
	ASSERT_LE(0, fd);
	p = map_fd(_metadata, fd, ps);
	bad = check_sparse(p, ps, ps, 42);
	EXPECT_EQ(-1, bad) TH_LOG("after renames: wrong word at offset %ld", bad);
	ASSERT_EQ(0, munmap(p, ps));
	close(fd);

	/* Rename over an existing file frees the replaced file's dpages. */
	fd = open_file(_metadata, c, "h", ps);
	p = map_fd(_metadata, fd, ps);
	touch(p, ps, ps);
	ASSERT_EQ(0, munmap(p, ps));
	close(fd);
	EXPECT_EQ(2 * ps, used_all(_metadata) - used0);
	snprintf(path, sizeof(path), "%s/h", c);
	ASSERT_EQ(0, rename(path, path2));
	EXPECT_EQ(ps, used_all(_metadata) - used0);

	/* rmdir: empty works, non-empty is refused. */
	ASSERT_EQ(0, rmdir(a));
	EXPECT_EQ(-1, rmdir(c));
	EXPECT_EQ(ENOTEMPTY, errno);
	ASSERT_EQ(0, unlink(path2));
	ASSERT_EQ(0, rmdir(c));

	d = opendir(self->dir);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			entries++;
	closedir(d);
	EXPECT_EQ(0, entries);
	expect_baseline(_metadata, &self->base, "after cleanup");
}

/* -------------------------------------------------------------------- */
/* persist: the table of files for the next kernel (tests/kexec-l1.sh   */
/* carries it over kexec; here, what it is true of and what it costs)   */
/* -------------------------------------------------------------------- */

static int persist(const char *dir)
{
	return mount("none", dir, NULL, MS_REMOUNT, "persist") ? errno : 0;
}

/* @path's first @size - 1 bytes, NUL-terminated: their count or -errno */
static ssize_t read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n, len = 0;

	if (fd < 0)
		return -errno;
	while (len < (ssize_t)size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = 0;
	return len;
}

/* write @text to @path in one write(): 0 or -errno */
static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		err = -errno;
	close(fd);
	return err;
}

#define TABLES "/sys/fs/dmemfs/tables"
#define KEPT "/sys/fs/dmemfs/kept"

/*
 * 1 when TABLES has the line "ADDR:KEY" for the table at @addr (its key,
 * 64 hex digits, into @key when not NULL), 0 when not, -errno when it
 * cannot be read.
 */
static int table_line(uint64_t addr, char *key)
{
	char line[256], want[32];
	FILE *f = fopen(TABLES, "r");
	int found = 0;

	if (!f)
		return -errno;
	snprintf(want, sizeof(want), "%#llx:", (unsigned long long)addr);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, want, strlen(want)))
			continue;
		found = strspn(line + strlen(want), "0123456789abcdef") == 64 &&
			line[strlen(want) + 64] == '\n';
		if (found && key)
			snprintf(key, 65, "%s", line + strlen(want));
	}
	fclose(f);
	return found;
}

/*
 * Who can read what (Documentation/filesystems/dmemfs.rst): the address
 * of a table is public, its key is root's.  The key is in TABLES (0400),
 * never in /proc/mounts; an unprivileged reader gets EACCES; each persist
 * draws a new key; a change takes the line away.  KEPT (0600) takes only
 * "discard".
 */
TEST_F(dmemfs, persist_key_is_roots)
{
	char key[65] = "", key2[65] = "", mounts[8192];
	struct stat st;
	uint64_t t;
	pid_t pid;
	int fd, status;
	ssize_t n;

	fd = open_file(_metadata, self->dir, "f", variant->ps);
	ASSERT_EQ(0, fallocate(fd, 0, 0, variant->ps));
	ASSERT_EQ(0, persist(self->dir));
	t = persisted(self->dir);
	ASSERT_NE(0, t);
	ASSERT_EQ(1, table_line(t, key)) TH_LOG("no line %#llx:KEY in " TABLES, (long long)t);
	ASSERT_EQ(0, stat(TABLES, &st));
	EXPECT_EQ(0100400, st.st_mode);
	EXPECT_EQ(0, st.st_uid);
	ASSERT_EQ(0, stat(KEPT, &st));
	EXPECT_EQ(0100600, st.st_mode);
	n = read_file("/proc/mounts", mounts, sizeof(mounts));
	ASSERT_LT(0, n);
	EXPECT_EQ(NULL, strstr(mounts, key)) TH_LOG("the key is in /proc/mounts");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		_exit(open(TABLES, O_RDONLY) < 0 && errno == EACCES ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("uid 65534 could open " TABLES);
	ASSERT_EQ(0, persist(self->dir));
	t = persisted(self->dir);
	ASSERT_EQ(1, table_line(t, key2));
	EXPECT_NE(0, strcmp(key, key2)) TH_LOG("two persists, one key");
	ASSERT_EQ(0, fchmod(fd, 0640));
	EXPECT_EQ(0, table_line(t, NULL)) TH_LOG("a dropped table is still listed");
	close(fd);
	EXPECT_EQ(-EINVAL, write_file(KEPT, "junk")) TH_LOG(KEPT " took junk");
	EXPECT_EQ(0, write_file(KEPT, "discard")) TH_LOG(KEPT " refused discard");
}

/* One change a table shows, done to the files of @dir (a 2-dpage "f"). */
static int persist_change(const char *dir, int fd, size_t ps, int what)
{
	char a[256], b[256];

	snprintf(a, sizeof(a), "%s/f", dir);
	switch (what) {
	case 0: /* a dpage allocated */
		return fallocate(fd, 0, ps, ps);
	case 1: /* a dpage freed */
		return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, ps, ps);
	case 2:
		return ftruncate(fd, 3 * ps);
	case 3:
		return fchmod(fd, 0640);
	case 4: /* an owner changed (of "e": a file with a size keeps its own) */
		snprintf(b, sizeof(b), "%s/e", dir);
		return chown(b, 64055, 64055);
	case 5:
		snprintf(b, sizeof(b), "%s/g", dir);
		return rename(a, b) ?: rename(b, a);
	case 6:
		snprintf(b, sizeof(b), "%s/link", dir);
		return link(a, b);
	case 7:
		snprintf(b, sizeof(b), "%s/link", dir);
		return unlink(b);
	case 8:
		snprintf(b, sizeof(b), "%s/d", dir);
		return mkdir(b, 0700);
	case 9:
		snprintf(b, sizeof(b), "%s/d", dir);
		return rmdir(b);
	case 11: /* a dpage past the end, kept */
		return fallocate(fd, FALLOC_FL_KEEP_SIZE, 3 * ps, ps);
	case 12: /* the size grown over it: no dpage stored */
		return fallocate(fd, 0, 3 * ps, ps);
	case 13: /* a directory's mode */
		snprintf(b, sizeof(b), "%s/dd", dir);
		return chmod(b, 0750);
	case 14: /* an empty directory's owner */
		snprintf(b, sizeof(b), "%s/dd", dir);
		return chown(b, 64055, 64055);
	case 15: /* setuid set */
		return fchmod(fd, 04640);
	case 16: /* a chown to the same owner clears it: the mode changed */
		return fchown(fd, 0, 0);
	case 10: { /* a memory policy set */
		unsigned long mask = 1;
		void *p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		int err;

		if (p == MAP_FAILED)
			return -1;
		err = sys_mbind(p, ps, MPOL_BIND, &mask, MAX_NODES, 0);
		munmap(p, ps);
		return err;
	}
	}
	return -1;
}

struct filler {
	int fd, err;
	off_t len;
	volatile int done;
};

static void *fallocate_all(void *arg)
{
	struct filler *f = arg;

	if (fallocate(f->fd, 0, 0, f->len))
		f->err = errno;
	f->done = 1;
	return NULL;
}

/*
 * persist does not wait for a fallocate() of a file of the mount: the
 * table would not stand anyway, and persist holds s_umount for writing,
 * which memory_failure()'s search of the mounts waits for, so a tenant's
 * long fallocate() would hold up every memory error on the host.  It
 * gives up with EBUSY while the fallocate() still runs, and works once
 * the file is quiet.
 */
TEST(persist_passes_busy_file)
{
	char dir[] = "/tmp/dmemfs-busy.XXXXXX", path[96];
	struct filler f = { .len = 256 << 20 };
	struct stat st;
	pthread_t th;
	int err, in_window;

	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, mount("none", dir, "dmemfs", 0, "pagesize=4K"));
	snprintf(path, sizeof(path), "%s/f", dir);
	f.fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, f.fd);
	ASSERT_EQ(0, pthread_create(&th, NULL, fallocate_all, &f));
	/* two dpages in: the fallocate() holds the file's invalidate lock */
	do {
		ASSERT_EQ(0, fstat(f.fd, &st));
	} while (!f.done && st.st_blocks < 16);
	err = persist(dir);
	in_window = !f.done;
	pthread_join(th, NULL);
	EXPECT_EQ(0, f.err);
	TH_LOG("persist during a 256 MiB fallocate: %s, %s it ended", err ? strerror(err) : "ok",
	       in_window ? "before" : "after");
	EXPECT_EQ(EBUSY, err);
	EXPECT_TRUE(in_window) TH_LOG("persist waited for the fallocate()");
	EXPECT_EQ(0, persisted(dir));
	EXPECT_EQ(0, persist(dir)) TH_LOG("persist of the quiet file");
	EXPECT_NE(0, persisted(dir));
	close(f.fd);
	EXPECT_EQ(0, umount(dir));
	rmdir(dir);
}

/*
 * A table is true of the files or gone: after each kind of change,
 * persisted= disappears and the key leaves TABLES; the table's page,
 * wiped, stays with the mount for the next persist.  A table costs its
 * pages and nothing else, and unmount frees them.
 */
TEST_F(dmemfs, persist_dropped_by_changes)
{
	static const char *const what[] = { "allocate", "punch", "truncate", "chmod",
		"chown", "rename", "link", "unlink", "mkdir", "rmdir", "mbind",
		"keep-size allocate", "grow over kept dpages", "dir chmod", "dir chown",
		"setuid", "same owner, setuid cleared" };
	size_t ps = variant->ps, files;
	uint64_t used0 = sum(self->base.used, self->base.nr), t;
	char dd[256];
	int fd, i;

	fd = open_file(_metadata, self->dir, "f", 2 * ps);
	ASSERT_EQ(0, fallocate(fd, 0, 0, ps));
	close(open_file(_metadata, self->dir, "e", 0));
	snprintf(dd, sizeof(dd), "%s/dd", self->dir);
	ASSERT_EQ(0, mkdir(dd, 0700));
	for (i = 0; i < (int)(sizeof(what) / sizeof(what[0])); i++) {
		struct stat st;

		ASSERT_EQ(0, fstat(fd, &st));
		files = (size_t)st.st_blocks * 512;
		ASSERT_EQ(0, persist(self->dir)) TH_LOG("remount,persist: %s", strerror(errno));
		t = persisted(self->dir);
		ASSERT_NE(0, t) TH_LOG("no persisted= after remount,persist");
		/*
		 * a table of a file or two takes its minimum, two 4 KiB
		 * pages, and the next persist writes into the pages the last
		 * one used
		 */
		EXPECT_EQ(files + TABLE_MIN, used_all(_metadata) - used0);
		ASSERT_EQ(0, persist_change(self->dir, fd, ps, i))
			TH_LOG("%s: %s", what[i], strerror(errno));
		EXPECT_EQ(0, persisted(self->dir))
			TH_LOG("after %s the table at %#lx is still shown", what[i], (long)t);
		/*
		 * the files changed: the table's page is wiped but held until
		 * the next persist, so that no file gets the page a loaded
		 * kexec may name (the next persist frees it)
		 */
		if (ps > SZ_4K)
			EXPECT_EQ(TABLE_MIN, (used_all(_metadata) - used0) % ps)
				TH_LOG("after %s: not the table's two pages held", what[i]);
		EXPECT_EQ(0, table_line(t, NULL)) TH_LOG("after %s: still in " TABLES, what[i]);
	}
	close(fd);
	ASSERT_EQ(0, persist(self->dir));
	ASSERT_NE(0, persisted(self->dir));
	ASSERT_EQ(0, umount(self->dir));
	self->mounted = 0;
	expect_baseline(_metadata, &self->base, "after unmount with a table");
}

/*
 * what does not change what a table shows keeps it: times set, a mode or
 * an owner set to what it is, a size set to the size, of a file and of a
 * directory (the table keeps path, mode, owner and size, not times)
 */
TEST_F(dmemfs, persist_kept_without_changes)
{
	static const char *const what[] = { "utimes", "touch dir", "same mode", "same dir mode",
		"same owner", "same dir owner", "same size" };
	size_t ps = variant->ps;
	struct stat st, dst;
	uint64_t t;
	char d[256];
	int fd, i;

	snprintf(d, sizeof(d), "%s/d", self->dir);
	ASSERT_EQ(0, mkdir(d, 0750));
	fd = open_file(_metadata, d, "f", ps);
	ASSERT_EQ(0, fallocate(fd, 0, 0, ps));
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_EQ(0, stat(d, &dst));
	ASSERT_EQ(0, persist(self->dir)) TH_LOG("remount,persist: %s", strerror(errno));
	t = persisted(self->dir);
	ASSERT_NE(0, t);
	for (i = 0; i < (int)(sizeof(what) / sizeof(what[0])); i++) {
		int err = -1;

		switch (i) {
		case 0:
			err = futimens(fd, NULL);
			break;
		case 1:
			err = utimensat(AT_FDCWD, d, NULL, 0);
			break;
		case 2:
			err = fchmod(fd, st.st_mode & 07777);
			break;
		case 3:
			err = chmod(d, dst.st_mode & 07777);
			break;
		case 4:
			err = fchown(fd, st.st_uid, st.st_gid);
			break;
		case 5:
			err = chown(d, dst.st_uid, dst.st_gid);
			break;
		case 6:
			err = ftruncate(fd, ps);
			break;
		}
		ASSERT_EQ(0, err) TH_LOG("%s: %s", what[i], strerror(errno));
		EXPECT_EQ(t, persisted(self->dir)) TH_LOG("%s dropped the table", what[i]);
		EXPECT_EQ(1, table_line(t, NULL)) TH_LOG("after %s: not in " TABLES, what[i]);
	}
	/* and a change still drops it */
	ASSERT_EQ(0, fchmod(fd, (st.st_mode & 07777) ^ 0040));
	EXPECT_EQ(0, persisted(self->dir));
	close(fd);
}

struct persist_race {
	int fd;
	size_t ps, nr;
	volatile int stop;
	unsigned long changes;
};

static void *persist_racer(void *arg)
{
	struct persist_race *r = arg;
	size_t i = 0;

	while (!r->stop) {
		off_t off = (off_t)(i++ % r->nr) * r->ps;

		if (!fallocate(r->fd, 0, off, r->ps) &&
		    !fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, r->ps))
			r->changes += 2;
	}
	return NULL;
}

/*
 * persist while another thread allocates and punches: each persist either
 * gives up (EBUSY) or leaves a table that the next change takes away;
 * once the files are quiet it works, and no table page leaks.  The debug
 * kernel (KASAN, lockdep) runs it too.
 */
TEST_F_TIMEOUT(dmemfs, persist_races_changes, 300)
{
	struct persist_race r = { .ps = variant->ps, .nr = 4 };
	uint64_t used0 = sum(self->base.used, self->base.nr);
	int busy = 0, ok = 0, err, i, kfd = kmsg_open();
	pthread_t th;
	char *why;

	if (r.ps == SZ_1G)
		r.nr = 1;
	r.fd = open_file(_metadata, self->dir, "f", r.nr * r.ps);
	ASSERT_EQ(0, pthread_create(&th, NULL, persist_racer, &r));
	for (i = 0; i < 200; i++) {
		err = persist(self->dir);
		if (err == EBUSY)
			busy++;
		else if (!err)
			ok++;
		else
			EXPECT_EQ(0, err) TH_LOG("persist: %s", strerror(err));
	}
	r.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%d tables kept, %d gave up, %lu changes", ok, busy, r.changes);
	/* the last persist may have seen the racer stopped: one change more */
	ASSERT_EQ(0, fallocate(r.fd, 0, 0, r.ps));
	EXPECT_EQ(0, persisted(self->dir)) TH_LOG("a table outlived a change");
	/* at most the last table's pages, wiped, held until persist or unmount */
	if (r.ps > SZ_4K)
		EXPECT_GE(TABLE_MIN, (used_all(_metadata) - used0) % r.ps) TH_LOG("a table page leaked");
	ASSERT_EQ(0, persist(self->dir));
	EXPECT_NE(0, persisted(self->dir));
	close(r.fd);
	unlink_in(_metadata, self->dir, "f");
	EXPECT_EQ(0, persisted(self->dir));
	ASSERT_EQ(0, umount(self->dir));
	self->mounted = 0;
	expect_baseline(_metadata, &self->base, "after the race and the unmount");
	why = kmsg_bad(kfd);
	EXPECT_EQ(NULL, why) TH_LOG("kernel log: %s", why);
	free(why);
}

/* -------------------------------------------------------------------- */
/* Background zeroing (kdmemzerod): freed dmem is zeroed while free     */
/* -------------------------------------------------------------------- */

#define ZERO_LEN	(128UL << 20)

/* Wait up to @secs for no node to have dirty free dmem; what is left. */
static uint64_t wait_clean(int secs)
{
	uint64_t dirty = 0;
	int i, n;

	for (i = 0; i <= secs * 10; i++) {
		dirty = 0;
		for (n = 0; n < 2; n++)
			dirty += dmem_node_bytes(n, "dirty");
		if (!dirty)
			break;
		usleep(100000);
	}
	return dirty;
}

/* A file of @len bytes bound to node 0, mapped at *@p. */
static int node0_file(struct __test_metadata *_metadata, const char *dir, const char *name,
		      size_t len, void **p)
{
	unsigned long mask = 1UL << 0;
	int fd = open_file(_metadata, dir, name, len);

	*p = map_fd(_metadata, fd, len);
	ASSERT_EQ(0, sys_mbind(*p, len, MPOL_BIND, &mask, MAX_NODES, 0))
		TH_LOG("mbind BIND node0: %s", strerror(errno));
	return fd;
}

/* Write a pattern over @len bytes of node 0 and free them: dirty dmem. */
static void dirty_node0(struct __test_metadata *_metadata, const char *dir, size_t len)
{
	void *p;
	int fd = node0_file(_metadata, dir, "dirty", len, &p);

	memset(p, 0xa5, len);
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, dir, "dirty");
}

/*
 * Allocate @len bytes of node 0 with fallocate, count how the dpages were
 * zeroed, and check that every byte reads zero, also after a punched and
 * refaulted dpage and a truncate and extend.
 */
static void alloc_node0(struct __test_metadata *_metadata, const char *dir, size_t len,
			struct dmem_zero_count *c)
{
	long bad;
	void *p;
	int fd;

	ASSERT_EQ(0, dmem_trace("dmem_alloc_dpage", 1));
	fd = node0_file(_metadata, dir, "fresh", len, &p);
	ASSERT_EQ(0, fallocate(fd, 0, 0, len)) TH_LOG("fallocate %zu: %s", len, strerror(errno));
	ASSERT_EQ(0, dmem_trace("dmem_alloc_dpage", 0));
	ASSERT_LE(0, dmem_trace_each("dmem_alloc_dpage", dmem_zero_count_line, c));
	bad = first_nonzero(p, len);
	EXPECT_EQ(-1, bad) TH_LOG("fallocated file: nonzero byte near offset %ld", bad);

	memset(p, 0x5a, len);
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, SZ_2M));
	bad = first_nonzero(p, SZ_2M);
	EXPECT_EQ(-1, bad) TH_LOG("punched and refaulted: nonzero byte near offset %ld", bad);
	ASSERT_EQ(0, ftruncate(fd, 0));
	ASSERT_EQ(0, ftruncate(fd, len));
	bad = first_nonzero(p, len);
	EXPECT_EQ(-1, bad) TH_LOG("truncated and extended: nonzero byte near offset %ld", bad);
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, dir, "fresh");
}

FIXTURE(zeroing) {
	char dir[64];
	int mounted;
	struct dstats base;
};

FIXTURE_SETUP(zeroing)
{
	uint64_t on = 0;

	ASSERT_EQ(0, read_u64(ZEROING, &on)) TH_LOG("no " ZEROING);
	ASSERT_EQ(1, on) TH_LOG("background zeroing is not on by default");
	ASSERT_EQ(0, read_stats(&self->base));
	ASSERT_LE(ZERO_LEN, self->base.free[0]) TH_LOG("node0: %lu bytes free", self->base.free[0]);
	strcpy(self->dir, "/tmp/dmemfs-zero.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, mount("none", self->dir, "dmemfs", 0, "pagesize=2M")) {
		TH_LOG("mount -t dmemfs -o pagesize=2M none %s: %s", self->dir, strerror(errno));
		rmdir(self->dir);
	}
	self->mounted = 1;
}

FIXTURE_TEARDOWN(zeroing)
{
	write_str(ZEROING, "1");
	dmem_trace("dmem_zero_batch", 0);
	dmem_trace("dmem_alloc_dpage", 0);
	if (self->mounted)
		umount2(self->dir, MNT_DETACH);
	rmdir(self->dir);
}

/*
 * Freed memory is zeroed by the node's zeroer until no node has dirty
 * free dmem; a later allocation takes zeroed dpages without zeroing them.
 */
TEST_F_TIMEOUT(zeroing, drains_then_allocates_zeroed, 300)
{
	struct dmem_zero_count c = { 0 };
	struct dmem_zero_count z = { 0 };
	uint64_t left;
	struct dstats now;
	int n;

	ASSERT_EQ(0, dmem_trace("dmem_zero_batch", 1));
	dirty_node0(_metadata, self->dir, ZERO_LEN);
	left = wait_clean(120);
	ASSERT_EQ(0, left) TH_LOG("%lu dirty bytes left after 120 s", left);
	ASSERT_EQ(0, dmem_trace("dmem_zero_batch", 0));
	ASSERT_LT(0, dmem_trace_each("dmem_zero_batch", dmem_zero_count_line, &z));
	EXPECT_LE(ZERO_LEN, z.pages * SZ_4K)
		TH_LOG("the zeroers' batches cover %lu bytes, %lu were freed", z.pages * SZ_4K,
		       ZERO_LEN);
	ASSERT_EQ(0, read_stats(&now));
	for (n = 0; n < now.nr; n++)
		EXPECT_EQ(now.free[n], dmem_node_bytes(n, "zeroed"))
			TH_LOG("node%d: free %lu, zeroed %lu", n, now.free[n],
			       dmem_node_bytes(n, "zeroed"));

	alloc_node0(_metadata, self->dir, ZERO_LEN, &c);
	EXPECT_EQ(ZERO_LEN / SZ_2M, c.zeroed_before + c.zeroed_now)
		TH_LOG("%ld + %ld allocation events for %lu dpages", c.zeroed_before,
		       c.zeroed_now, ZERO_LEN / SZ_2M);
	EXPECT_EQ(0, c.zeroed_now)
		TH_LOG("%ld dpages zeroed when allocated from a clean pool", c.zeroed_now);
	expect_baseline(_metadata, &self->base, "after unlink");
}

/* background_zeroing=0: nothing is zeroed in the background, all on allocation */
TEST_F_TIMEOUT(zeroing, off_zeroes_every_allocation, 300)
{
	struct dmem_zero_count c = { 0 };
	uint64_t on = 1, left, dirty;

	left = wait_clean(120);
	ASSERT_EQ(0, left) TH_LOG("%lu dirty bytes left after 120 s", left);
	ASSERT_EQ(0, write_str(ZEROING, "0"));
	ASSERT_EQ(0, read_u64(ZEROING, &on));
	ASSERT_EQ(0, on);
	dirty_node0(_metadata, self->dir, ZERO_LEN);
	sleep(2);
	dirty = dmem_node_bytes(0, "dirty");
	EXPECT_EQ(ZERO_LEN, dirty) TH_LOG("node0: %lu dirty bytes 2 s after freeing %lu, off",
					  dirty, ZERO_LEN);

	alloc_node0(_metadata, self->dir, ZERO_LEN, &c);
	EXPECT_EQ(ZERO_LEN / SZ_2M, c.zeroed_now)
		TH_LOG("off: %ld of %lu dpages zeroed when allocated (%ld before)", c.zeroed_now,
		       ZERO_LEN / SZ_2M, c.zeroed_before);

	ASSERT_EQ(0, write_str(ZEROING, "1"));
	left = wait_clean(120);
	EXPECT_EQ(0, left) TH_LOG("back on: %lu dirty bytes left after 120 s", left);
	expect_baseline(_metadata, &self->base, "after unlink");
}

/* The CPUs of NUMA node @node (its cpulist) into @set; how many. */
static int node_cpus(int node, cpu_set_t *set)
{
	char path[96], buf[256], *s = buf, *end;
	ssize_t n;
	int fd, count = 0;

	CPU_ZERO(set);
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	while (*s >= '0' && *s <= '9') {
		long a = strtol(s, &end, 10), b = a;

		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (; a <= b && a < CPU_SETSIZE; a++, count++)
			CPU_SET(a, set);
		s = *end == ',' ? end + 1 : end;
	}
	return count;
}

#define HOG_SECS	25

struct hogs {
	volatile int rt;	/* go SCHED_FIFO */
	volatile int stop;	/* the test is done with them */
	volatile int expired;	/* a hog gave its CPU back by itself */
	volatile int running;	/* SCHED_FIFO ones */
};

/*
 * A thread that spins on @cpu, first at nice 0, next to the zeroer at nice
 * 19, which then zeroes slowly and so is nearly always inside a batch;
 * then, told to, SCHED_FIFO, which stops the zeroer where it is, until
 * told to stop or for HOG_SECS.
 */
static pid_t start_hog(struct hogs *h, int cpu)
{
	struct sched_param sp = { .sched_priority = 1 };
	struct timespec t0, t;
	cpu_set_t one;
	pid_t pid = fork();

	if (pid)
		return pid;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		_exit(2);
	while (!h->rt && !h->stop)
		;
	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		_exit(2);
	__sync_fetch_and_add(&h->running, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= HOG_SECS) {
			h->expired = 1;
			break;
		}
	} while (!h->stop);
	_exit(0);
}

#define PREEMPT_MODE "/sys/kernel/debug/sched/preempt"

/* The preemption mode in force ("none (voluntary) full" names it), or "". */
static void preempt_mode(char *mode, size_t size)
{
	char buf[128] = "", *a, *b;
	ssize_t n = read_file(PREEMPT_MODE, buf, sizeof(buf));

	*mode = 0;
	a = n > 0 ? strchr(buf, '(') : NULL;
	b = a ? strchr(a, ')') : NULL;
	if (b)
		snprintf(mode, size, "%.*s", (int)(b - a - 1), a + 1);
}

/*
 * An allocation never waits for a zeroer.  Real-time threads on every CPU
 * of node 0, with RT throttling off and full preemption as RT hosts run
 * (preempt=full; the zeroer is then preempted inside a batch, not only
 * between batches), starve node 0's
 * zeroer (nice 19) in the middle of a dirty pool; node 0 is then filled
 * from a CPU of node 1, which needs the pages of the batch the zeroer
 * holds.  The fill must complete while the threads still run (before the
 * fix it waited, in D state, for the zeroer to run again, which here is
 * when the threads give up after HOG_SECS), and read zero.
 */
TEST_F_TIMEOUT(zeroing, alloc_never_waits_for_starved_zeroer, 300)
{
	const size_t dirty_len = 512UL << 20;
	char rt_saved[32] = "950000\n", preempt_saved[32], preempt_now[32];
	struct dstats now;
	cpu_set_t n0, n1;
	struct hogs *h;
	pid_t hog[CPU_SETSIZE];
	int nhog = 0, cpu, fd_keep, fd_a, fd_b, rt_fd, i;
	uint64_t dirty, keep_len, fill_len;
	void *pa, *pb;
	long bad;
	ssize_t n;

	ASSERT_LT(0, node_cpus(0, &n0)) TH_LOG("node 0 has no CPU");
	ASSERT_LT(0, node_cpus(1, &n1)) TH_LOG("node 1 has no CPU to allocate from");
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(n1), &n1));
	ASSERT_EQ(0, wait_clean(120));
	ASSERT_EQ(0, read_stats(&now));
	ASSERT_LT(dirty_len + SZ_2M, now.free[0]) TH_LOG("node0: %lu bytes free", now.free[0]);
	/* node 0 full but for dirty_len, freed dirty: its zeroer starts */
	keep_len = (now.free[0] - dirty_len) & ~(SZ_2M - 1);
	fd_keep = node0_file(_metadata, self->dir, "keep", keep_len, &pa);
	ASSERT_EQ(0, fallocate(fd_keep, 0, 0, keep_len)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, munmap(pa, keep_len));
	fd_a = node0_file(_metadata, self->dir, "a", dirty_len, &pa);
	ASSERT_EQ(0, fallocate(fd_a, 0, 0, dirty_len));
	ASSERT_EQ(0, munmap(pa, dirty_len));

	h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, h);
	rt_fd = open("/proc/sys/kernel/sched_rt_runtime_us", O_RDWR);
	ASSERT_LE(0, rt_fd);
	n = read(rt_fd, rt_saved, sizeof(rt_saved) - 1);
	rt_saved[n > 0 ? n : 0] = 0;
	ASSERT_EQ(3, pwrite(rt_fd, "-1\n", 3, 0)) TH_LOG("RT throttling off: %s", strerror(errno));
	preempt_mode(preempt_saved, sizeof(preempt_saved));
	if (*preempt_saved)
		write_file(PREEMPT_MODE, "full");
	preempt_mode(preempt_now, sizeof(preempt_now));

	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &n0))
			hog[nhog++] = start_hog(h, cpu);
	ASSERT_EQ(0, ftruncate(fd_a, 0));	/* dirty_len of dirty dmem on node 0 */
	usleep(500000);				/* the zeroer is at it, slowly */
	h->rt = 1;
	while (h->running < nhog && !h->expired)
		usleep(1000);
	usleep(100000);
	dirty = dmem_node_bytes(0, "dirty");

	/* all of node 0 that is free, from node 1's CPUs */
	fill_len = dmem_node_bytes(0, "free") & ~(SZ_2M - 1);
	fd_b = node0_file(_metadata, self->dir, "b", fill_len, &pb);
	i = fallocate(fd_b, 0, 0, fill_len);
	n = h->expired;
	h->stop = 1;
	for (cpu = 0; cpu < nhog; cpu++)
		waitpid(hog[cpu], NULL, 0);
	if (pwrite(rt_fd, rt_saved, strlen(rt_saved), 0) < 0)
		TH_LOG("RT throttling not restored to %s: %s", rt_saved, strerror(errno));
	close(rt_fd);
	if (*preempt_saved)
		write_file(PREEMPT_MODE, preempt_saved);

	TH_LOG("%d hog(s) on node 0, preemption '%s'; %lu dirty bytes on node 0 under them; "
	       "filled %lu bytes",
	       nhog, preempt_now, dirty, fill_len);
	ASSERT_LT(0, dirty) TH_LOG("the zeroer was done before the hogs ran: nothing was tested");
	ASSERT_EQ(0, i) TH_LOG("fallocate of node 0's %lu free bytes: %s", fill_len, strerror(errno));
	EXPECT_EQ(0, n) TH_LOG("the fill finished only after the real-time threads gave node 0 "
			       "back: it waited for the starved zeroer");
	bad = first_nonzero(pb, fill_len);
	EXPECT_EQ(-1, bad) TH_LOG("filled file: nonzero byte near offset %ld", bad);
	ASSERT_EQ(0, munmap(pb, fill_len));
	munmap((void *)h, sizeof(*h));
	close(fd_b);
	close(fd_a);
	close(fd_keep);
	unlink_in(_metadata, self->dir, "b");
	unlink_in(_metadata, self->dir, "a");
	unlink_in(_metadata, self->dir, "keep");
	EXPECT_EQ(0, wait_clean(120));
	expect_baseline(_metadata, &self->base, "after the starved zeroer");
}

/* A write of something that is not a boolean changes nothing. */
/*
 * Suspend and hibernation through pm_test=freezer: the kernel freezes
 * every task, waits, and thaws them, without suspending anything.
 */
#define PM_STATE	"/sys/power/state"
#define PM_TEST		"/sys/power/pm_test"
#define PM_FREEZE_MS	"/sys/power/pm_freeze_timeout"

/* Write @state to /sys/power/state under pm_test=freezer: 0 or -errno. */
static int pm_freezer_test(const char *state)
{
	int err;

	if (write_file(PM_TEST, "freezer"))
		return -ENOTSUP;
	err = write_file(PM_STATE, state);
	write_file(PM_TEST, "none");
	return err;
}

/* Every node's free dmem allocated, written and freed: a dirty pool. */
static void dirty_pool(struct __test_metadata *_metadata, const char *dir)
{
	struct dstats now;
	uint64_t len = 0;
	int fd, n;
	void *p;

	ASSERT_EQ(0, read_stats(&now));
	for (n = 0; n < now.nr; n++)
		len += now.free[n] & ~(SZ_2M - 1);
	fd = open_file(_metadata, dir, "pool", len);
	p = map_fd(_metadata, fd, len);
	memset(p, 0x5a, len);
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	unlink_in(_metadata, dir, "pool");
}

/*
 * A zeroer with the whole pool to clear still freezes: between batches.
 * The freeze timeout is cut to 1 s, far less than clearing the pool
 * takes (before the fix the zeroer froze only once the pool was clean,
 * and the freeze failed with EBUSY).
 */
TEST_F_TIMEOUT(zeroing, suspend_freezes_busy_zeroer, 300)
{
	char saved[32] = "20000\n";
	uint64_t before, after;
	int err, fd;
	ssize_t n;

	ASSERT_EQ(0, access(PM_TEST, W_OK)) TH_LOG("no %s (CONFIG_PM_DEBUG)", PM_TEST);
	ASSERT_EQ(0, write_str(ZEROING, "0"));
	dirty_pool(_metadata, self->dir);
	fd = open(PM_FREEZE_MS, O_RDWR);
	ASSERT_LE(0, fd);
	n = read(fd, saved, sizeof(saved) - 1);
	saved[n > 0 ? n : 0] = 0;
	ASSERT_EQ(5, pwrite(fd, "1000\n", 5, 0));
	ASSERT_EQ(0, write_str(ZEROING, "1"));
	usleep(200000);				/* the zeroers are at it */
	before = wait_clean(0);
	err = pm_freezer_test("freeze");
	after = wait_clean(0);
	EXPECT_LT(0, pwrite(fd, saved, strlen(saved), 0));
	close(fd);
	TH_LOG("dirty before the freeze %lu MiB, after the thaw %lu MiB", before >> 20, after >> 20);
	EXPECT_EQ(0, err) TH_LOG("freeze with a busy zeroer: %s", strerror(-err));
	EXPECT_NE(0, after) TH_LOG("the zeroers were done before the freeze: not the case");
	EXPECT_EQ(0, wait_clean(240)) TH_LOG("the zeroers did not finish after the thaw");
	expect_baseline(_metadata, &self->base, "after the freeze");
}

/*
 * Hibernation: the image holds no dmem, so it is refused while a dpage is
 * allocated, with a message; with nothing allocated it goes through.
 * (The second check, with every task frozen, and the pool marked dirty
 * after the image run in syscore hooks, which only pm_test=core reaches;
 * that level suspends L1's devices and its virtio-9p root does not come
 * back, so they are not tested here.)
 */
TEST_F_TIMEOUT(zeroing, hibernation_refused_while_in_use, 300)
{
	const char *const refused[] = { "hibernation refused", NULL };
	char state[256] = "";
	int fd, kmsg, err, n;
	char *line;
	void *p;

	ASSERT_EQ(0, access(PM_TEST, W_OK)) TH_LOG("no %s (CONFIG_PM_DEBUG)", PM_TEST);
	fd = open(PM_STATE, O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, state, sizeof(state) - 1);
	close(fd);
	ASSERT_NE(NULL, strstr(n > 0 ? state : "", "disk")) TH_LOG("no hibernation: '%s'", state);

	fd = open_file(_metadata, self->dir, "held", SZ_2M);
	p = map_fd(_metadata, fd, SZ_2M);
	memset(p, 1, SZ_2M);
	kmsg = kmsg_open();
	err = pm_freezer_test("disk");
	line = kmsg_scan(kmsg, refused);
	EXPECT_EQ(-EBUSY, err) TH_LOG("hibernation with 2 MiB of dmem in use: %s", strerror(-err));
	EXPECT_NE(NULL, line) TH_LOG("no message");
	if (line)
		TH_LOG("%s", line);
	free(line);
	munmap(p, SZ_2M);
	close(fd);
	unlink_in(_metadata, self->dir, "held");

	err = pm_freezer_test("disk");
	EXPECT_EQ(0, err) TH_LOG("hibernation with no dmem in use: %s", strerror(-err));
	expect_baseline(_metadata, &self->base, "after hibernation");
}

TEST_F(zeroing, knob_refuses_junk)
{
	uint64_t on = 0;

	EXPECT_EQ(-1, write_str(ZEROING, "maybe"));
	ASSERT_EQ(0, read_u64(ZEROING, &on));
	EXPECT_EQ(1, on);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return harness_list_tests();
	kmsg_mark("dmemfs_test: start");
	harness_filter_env();
	return test_harness_run(argc, argv);
}
