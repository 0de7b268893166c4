// SPDX-License-Identifier: GPL-2.0
/*
 * hwpoison_test: memory errors in dmem, inside L1 (kselftest harness).
 *
 * For dmemfs with 4K, 2M and 1G dpages: map a file, find the pfn of one of
 * its 4 KiB pages with FIEMAP, inject a memory error there through
 * debugfs hwpoison/corrupt-pfn (memory_failure(), as the MCE handler
 * calls it), and check that
 *  - this process, early-kill, gets SIGBUS BUS_MCEERR_AO with the 4 KiB
 *    address of the error inside the dpage and si_addr_lsb 12;
 *  - touching that page again gets SIGBUS BUS_MCEERR_AR at it, while the
 *    other pages of the dpage keep their data;
 *  - /proc/self/mem refuses the poisoned page and reads a healthy one;
 *  - the page is counted in poisoned_bytes, listed in debugfs, and never
 *    handed out again: after the file is gone, the whole free pool of the
 *    node is allocated again and FIEMAP shows no extent over that pfn.
 *
 * alloc.poison_while_allocating injects into a 1G dpage that a fault is
 * still zeroing, before the file holds it, and checks that the bad page is
 * never mapped.  alloc.search_passes_busy_files checks that the search for
 * a bad page's owner does not wait for another file's long fallocate(),
 * alloc.owner_busy_fallocating that marking the owner does not wait for
 * the owner's own.  kvm.vcpu_gets_mceerr_ar: a vCPU (kvm_flat.h) that reads
 * the poisoned page makes KVM send SIGBUS BUS_MCEERR_AR at it, as QEMU
 * needs for an action-required vMCE, not fail KVM_RUN with EFAULT.
 *
 * Each test leaves one 4 KiB page of its node poisoned for good, so the
 * runner (nested-test/l1/l1-trunk.sh) runs this program last.
 *
 *   hwpoison_test          run all tests (TAP on stdout)
 *   hwpoison_test --list   print the test names, one a line, and exit
 *   hwpoison_test --pfn FILE OFFSET
 *                          print the pfn behind OFFSET of a dmemfs FILE
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "test_util.h"
#include "memory_error.h"
#include "kvm_flat.h"

#define INJECT		"/sys/kernel/debug/hwpoison/corrupt-pfn"
#define POISONED	"/sys/kernel/debug/dmem/poisoned"
#define MAGIC		0x6477706f69736f6eULL

/* Whether any extent of @fd covers @pfn; -1 on error. */
static __attribute__((noinline)) int covers_pfn(int fd, uint64_t pfn, uint64_t *extents)
{
	enum { N = 512 };
	struct fiemap *fm = calloc(1, sizeof(*fm) + N * sizeof(struct fiemap_extent));
	uint64_t start = 0, phys = pfn * SZ_4K;
	int hit = 0, last = 0;

	if (!fm)
		return -1;
	*extents = 0;
	while (!last && !hit) {
		unsigned int i;

		memset(fm, 0, sizeof(*fm));
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_extent_count = N;
		if (ioctl(fd, FS_IOC_FIEMAP, fm)) {
			hit = -1;
			break;
		}
		if (!fm->fm_mapped_extents)
			break;
		for (i = 0; i < fm->fm_mapped_extents; i++) {
			struct fiemap_extent *e = &fm->fm_extents[i];

			if (phys >= e->fe_physical && phys < e->fe_physical + e->fe_length)
				hit = 1;
			last = e->fe_flags & FIEMAP_EXTENT_LAST;
			start = e->fe_logical + e->fe_length;
		}
		*extents += fm->fm_mapped_extents;
	}
	free(fm);
	return hit;
}

/* dpages of size @ps on @node that hold a poisoned page; -1 on error. */
static long poisoned_chunks(int node, size_t ps)
{
	uint64_t seen[64];
	char line[128];
	long n = 0, i;
	FILE *f = fopen(POISONED, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strchr(line, ' ');
		uint64_t chunk;

		if (!sp || atoi(line) != node || line[0] == 'n')
			continue;
		chunk = strtoull(sp + 1, NULL, 16) * SZ_4K / ps;
		for (i = 0; i < n && seen[i] != chunk; i++)
			;
		if (i == n && n < 64)
			seen[n++] = chunk;
	}
	fclose(f);
	return n;
}

static int listed_poisoned(uint64_t pfn)
{
	char line[128];
	int found = 0;
	FILE *f = fopen(POISONED, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strchr(line, ' ');

		if (sp && strtoull(sp + 1, NULL, 16) == pfn)
			found = 1;
	}
	fclose(f);
	return found;
}

/*
 * The harness runs the fixtures in the order they are declared: alloc
 * first, while node 0 still has a whole GiB with no poisoned page (its
 * poison_while_allocating needs one; the hwpoison variants may leave a
 * poisoned page in each of node 0's GiBs, depending on where the
 * allocator put their files).
 */
FIXTURE(alloc) {
	char dir[64];
};

FIXTURE(hwpoison) {
	char dir[64];
	int mounted;
};

MEMORY_ERROR_VARIANTS(hwpoison);

FIXTURE_SETUP(hwpoison)
{
	ASSERT_EQ(0, access(INJECT, W_OK)) TH_LOG("no %s", INJECT);
	ASSERT_EQ(0, mount_tmp(self->dir, variant->opts))
		TH_LOG("mount dmemfs %s: %s", variant->opts, strerror(errno));
	self->mounted = 1;
}

FIXTURE_TEARDOWN(hwpoison)
{
	if (self->mounted)
		umount2(self->dir, MNT_DETACH);
	rmdir(self->dir);
}

/*
 * Bind to the variant's node, be early-kill with on_sigbus() as handler,
 * and map a new file of @size at *@p with MAGIC ^ offset in every 4 KiB
 * page.  Returns the physical address behind the variant's bad_off.
 */
static uint64_t map_pattern(struct __test_metadata *_metadata, const char *dir,
			    const FIXTURE_VARIANT(hwpoison) *variant, size_t size,
			    int *fd, uint8_t **p)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	char path[128];
	uint64_t phys;
	size_t i;

	ASSERT_EQ(0, bind_to(variant->node)) TH_LOG("set_mempolicy: %s", strerror(errno));
	ASSERT_EQ(0, prctl(PR_MCE_KILL, PR_MCE_KILL_SET, PR_MCE_KILL_EARLY, 0, 0));
	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));
	snprintf(path, sizeof(path), "%s/guest", dir);
	*p = map_new_file(_metadata, path, size, fd);
	for (i = 0; i < size; i += SZ_4K)
		*(uint64_t *)(*p + i) = MAGIC ^ i;
	phys = phys_of(*fd, variant->bad_off);
	ASSERT_NE(0, phys) TH_LOG("FIEMAP gave no physical address");
	return phys;
}

/* memory_failure() on @pfn through hwpoison-inject; the write's result. */
static ssize_t inject(uint64_t pfn)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%#lx\n", pfn), fd = open(INJECT, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, buf, len);
	close(fd);
	return n == len ? 0 : -1;
}

/*
 * A memory error that lands on a dpage after the allocator handed it out
 * and before the fault put it in its file finds no file to mark.  The
 * file must still never map the bad page (a 1G leaf over it): touching it
 * gets SIGBUS BUS_MCEERR_AR, the rest of the dpage works.  Zeroing a GiB
 * keeps the fault in that window for long enough to inject into it; the
 * dpage the fault gets is the one a probe file has just given back.  The
 * injection returning while the fault still runs shows that it found no
 * owner (with one it waits for the fault).  Node 0: the hwpoison
 * fixture's 1G variant needs both of node 1's GiBs, so every test of this
 * fixture leaves its poisoned page on node 0.
 *
 * Both tests of this fixture need allocations that zero (the long window
 * is the zeroing, and the freed probe GiB comes back only to a first-fit
 * allocation): background zeroing is off while they run.
 */

FIXTURE_SETUP(alloc)
{
	ASSERT_EQ(0, access(INJECT, W_OK)) TH_LOG("no %s", INJECT);
	ASSERT_EQ(0, write_str(ZEROING, "0")) TH_LOG("cannot write " ZEROING);
	ASSERT_EQ(0, mount_tmp(self->dir, "pagesize=1G"))
		TH_LOG("mount dmemfs pagesize=1G: %s", strerror(errno));
}

FIXTURE_TEARDOWN(alloc)
{
	write_str(ZEROING, "1");
	umount2(self->dir, MNT_DETACH);
	rmdir(self->dir);
}

TEST_F_TIMEOUT(alloc, poison_while_allocating, 600)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	const size_t bad_off = 7 * SZ_2M + 5 * SZ_4K, good_off = bad_off + SZ_4K;
	uint64_t free0, pois0, phys, val;
	char path[128];
	struct toucher t = { 0 };
	volatile uint64_t *bad;
	int fd, in_window, node;
	pthread_t th;
	uint8_t *p;

	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));
	/* the node that still has a whole GiB: earlier tests poison pages */
	for (node = 0, phys = 0; node < 2 && !phys; node++) {
		ASSERT_EQ(0, bind_to(node));
		phys = try_dirty_gib(self->dir);
	}
	node--;
	ASSERT_NE(0, phys) TH_LOG("no whole free GiB on node 0 or 1");
	free0 = dmem_node_bytes(node, "free");
	pois0 = dmem_node_bytes(node, "poisoned");

	snprintf(path, sizeof(path), "%s/guest", self->dir);
	p = map_new_file(_metadata, path, SZ_1G, &fd);
	t.p = p;
	ASSERT_EQ(0, pthread_create(&th, NULL, touch_first_byte, &t));
	while (!t.started)
		;
	usleep(20000);
	EXPECT_EQ(0, inject((phys + bad_off) / SZ_4K)) TH_LOG("corrupt-pfn: %s", strerror(errno));
	in_window = !t.done;
	pthread_join(th, NULL);
	ASSERT_EQ(phys, phys_of(fd, 0)) TH_LOG("the file got another GiB than the probe's");
	TH_LOG("error at pfn %#lx injected %s the fault finished", (phys + bad_off) / SZ_4K,
	       in_window ? "before" : "after");
	EXPECT_TRUE(in_window) TH_LOG("the fault was done before the injection: not the race");
	EXPECT_EQ(pois0 + SZ_4K, dmem_node_bytes(node, "poisoned"));

	bad = (volatile uint64_t *)(p + bad_off);
	EXPECT_EQ(0, read_or_sigbus((volatile uint64_t *)(p + good_off), &val));
	EXPECT_EQ(0, val);
	EXPECT_EQ(-1, read_or_sigbus(bad, &val)) TH_LOG("the bad page is mapped");
	EXPECT_EQ(BUS_MCEERR_AR, bus_code);
	EXPECT_EQ((void *)bad, bus_addr);

	munmap(p, SZ_1G);
	close(fd);
	unlink(path);
	EXPECT_EQ(free0 - SZ_4K, dmem_node_bytes(node, "free"));
	signal(SIGBUS, SIG_DFL);
}

struct filler {
	int fd, err, node;
	size_t len;
	volatile int started, done;
};

static void *fallocate_on_node(void *arg)
{
	struct filler *f = arg;

	f->err = bind_to(f->node) ? errno : 0;
	f->started = 1;
	if (!f->err && fallocate(f->fd, 0, 0, f->len))
		f->err = errno;
	f->done = 1;
	return NULL;
}

/* @p's first page reads 0; its second gets SIGBUS BUS_MCEERR_AR there */
static void expect_second_page_bad(struct __test_metadata *_metadata, uint8_t *p)
{
	uint64_t val;

	EXPECT_EQ(0, read_or_sigbus((volatile uint64_t *)p, &val));
	EXPECT_EQ(0, val);
	EXPECT_EQ(-1, read_or_sigbus((volatile uint64_t *)(p + SZ_4K), &val))
		TH_LOG("the bad page is mapped");
	EXPECT_EQ(BUS_MCEERR_AR, bus_code);
	EXPECT_EQ((void *)(p + SZ_4K), bus_addr);
}

/*
 * Run @f's fallocate() on its node, which had @free bytes free, and inject
 * an error at @phys once two dpages of it are out of the pool, when it
 * holds the file's invalidate lock: whether the injection came back before
 * the fallocate() ended.
 */
static int inject_during_fill(struct __test_metadata *_metadata, struct filler *f,
			      uint64_t phys, uint64_t free)
{
	pthread_t th;
	int in_window;

	if (pthread_create(&th, NULL, fallocate_on_node, f)) {
		EXPECT_EQ(0, errno) TH_LOG("pthread_create");
		return 0;
	}
	while (!f->done && dmem_node_bytes(f->node, "free") + 2 * SZ_2M > free)
		;
	EXPECT_EQ(0, inject(phys / SZ_4K)) TH_LOG("corrupt-pfn: %s", strerror(errno));
	in_window = !f->done;
	pthread_join(th, NULL);
	EXPECT_EQ(0, f->err) TH_LOG("fallocate of %zu bytes on node%d: %s", f->len, f->node,
				    strerror(f->err));
	return in_window;
}

/*
 * memory_failure() runs under one host-wide mutex.  Its search for the
 * owner of a bad page must not wait for the files it passes: a long
 * fallocate() of another tenant's file (which holds that file's
 * invalidate lock) would stall every memory error on the host.  The busy
 * file, on node 1 in a 2M instance, is filled while an error lands in a
 * 4K file on node 0 of an instance mounted earlier (the search visits the
 * busy one first).  The injection must return while the fallocate()
 * still runs, and the bad page must be marked: reading it gets SIGBUS.
 */
TEST_F_TIMEOUT(alloc, search_passes_busy_files, 600)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	char busy_dir[64], bad_dir[64], busy[96], bad[96];
	uint64_t free1, pois0, phys;
	struct filler f = { .node = 1 };
	int fd, in_window;
	uint8_t *p;

	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));
	/* iterate_supers_type() visits the newest instance first */
	ASSERT_EQ(0, mount_tmp(bad_dir, "pagesize=4K")) TH_LOG("mount 4K: %s", strerror(errno));
	ASSERT_EQ(0, mount_tmp(busy_dir, "pagesize=2M")) TH_LOG("mount 2M: %s", strerror(errno));
	snprintf(busy, sizeof(busy), "%s/busy", busy_dir);
	snprintf(bad, sizeof(bad), "%s/victim", bad_dir);
	free1 = dmem_node_bytes(1, "free");
	pois0 = dmem_node_bytes(0, "poisoned");
	f.len = (free1 < SZ_1G ? free1 : SZ_1G) & ~(SZ_2M - 1);
	ASSERT_LE(64 * SZ_2M, f.len) TH_LOG("node1: %lu bytes free", free1);

	ASSERT_EQ(0, bind_to(0));
	fd = open(bad, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fallocate(fd, 0, 0, 2 * SZ_4K));
	phys = phys_of(fd, SZ_4K);
	ASSERT_NE(0, phys);

	f.fd = open(busy, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, f.fd);
	in_window = inject_during_fill(_metadata, &f, phys, free1);
	TH_LOG("error at pfn %#lx handled %s the %zu MiB fallocate ended", phys / SZ_4K,
	       in_window ? "before" : "after", f.len >> 20);
	EXPECT_TRUE(in_window) TH_LOG("the memory error waited for another file's fallocate");
	EXPECT_EQ(pois0 + SZ_4K, dmem_node_bytes(0, "poisoned"));

	p = mmap(NULL, 2 * SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	expect_second_page_bad(_metadata, p);
	munmap(p, 2 * SZ_4K);
	close(fd);
	close(f.fd);
	unlink(bad);
	unlink(busy);
	EXPECT_EQ(free1, dmem_node_bytes(1, "free"));
	umount(bad_dir);
	umount(busy_dir);
	rmdir(bad_dir);
	rmdir(busy_dir);
	signal(SIGBUS, SIG_DFL);
}

/*
 * The same for the owner itself: the error lands in the first dpage of a
 * file that another thread is filling with fallocate(), which holds the
 * file's invalidate lock exclusively for the whole range.  Marking the bad
 * dpage must not wait for it (memory_failure() holds the host-wide
 * mf_mutex meanwhile), and the mark must still hold: the bad page gets
 * SIGBUS, its neighbour in the dpage reads back.
 */
TEST_F_TIMEOUT(alloc, owner_busy_fallocating, 600)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint64_t free0, pois0, phys;
	struct filler f = { .node = 0 };
	char dir[64], path[96];
	int in_window;
	uint8_t *p;

	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));
	ASSERT_EQ(0, mount_tmp(dir, "pagesize=2M")) TH_LOG("mount 2M: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/owner", dir);
	pois0 = dmem_node_bytes(0, "poisoned");
	ASSERT_EQ(0, bind_to(0));
	f.fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, f.fd);
	ASSERT_EQ(0, fallocate(f.fd, 0, 0, SZ_2M));
	phys = phys_of(f.fd, SZ_4K);
	ASSERT_NE(0, phys);
	free0 = dmem_node_bytes(0, "free");
	f.len = ((free0 < SZ_1G ? free0 : SZ_1G) & ~(SZ_2M - 1)) + SZ_2M;
	ASSERT_LE(64 * SZ_2M, f.len) TH_LOG("node0: %lu bytes free", free0);

	in_window = inject_during_fill(_metadata, &f, phys, free0);
	TH_LOG("error at pfn %#lx handled %s the owner's %zu MiB fallocate ended",
	       phys / SZ_4K, in_window ? "before" : "after", f.len >> 20);
	EXPECT_TRUE(in_window) TH_LOG("the memory error waited for its owner's fallocate");
	EXPECT_EQ(pois0 + SZ_4K, dmem_node_bytes(0, "poisoned"));

	p = mmap(NULL, SZ_2M, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	expect_second_page_bad(_metadata, p);
	munmap(p, SZ_2M);
	close(f.fd);
	unlink(path);
	/* all but the bad 4 KiB page back, the first dpage's others too */
	EXPECT_EQ(free0 + SZ_2M - SZ_4K, dmem_node_bytes(0, "free"));
	umount(dir);
	rmdir(dir);
	signal(SIGBUS, SIG_DFL);
}

/*
 * A hang guard, not a time limit: refilling a node with 4K dpages takes
 * minutes on a KASAN kernel under TCG (the harness default is 30 s).
 */
TEST_F_TIMEOUT(hwpoison, sigbus_and_quarantine, 900)
{
	size_t size = variant->bad_off - variant->bad_off % variant->ps + variant->ps;
	uint64_t free0, pois0, phys, pfn, extents[1], want_free, val;
	size_t good_off = variant->bad_off + SZ_4K;
	volatile uint64_t *bad, *good;
	char path[128], byte;
	int fd, mem, hit;
	uint8_t *p;

	if (variant->ps == SZ_4K)
		good_off = variant->bad_off - SZ_4K;	/* a neighbour dpage */
	free0 = dmem_node_bytes(variant->node, "free");
	pois0 = dmem_node_bytes(variant->node, "poisoned");
	ASSERT_NE(UINT64_MAX, pois0) TH_LOG("no poisoned_bytes in sysfs");
	ASSERT_LE(size, free0) TH_LOG("node%d: %lu bytes free", variant->node, free0);
	phys = map_pattern(_metadata, self->dir, variant, size, &fd, &p);
	snprintf(path, sizeof(path), "%s/guest", self->dir);
	pfn = phys / SZ_4K;
	TH_LOG("%s: file offset %#zx -> pfn %#lx, node%d", variant->opts,
	       variant->bad_off, pfn, variant->node);

	/* memory_failure(), action optional: we are early-kill */
	bus_count = 0;
	EXPECT_EQ(0, inject(pfn)) TH_LOG("corrupt-pfn: %s", strerror(errno));
	bad = (volatile uint64_t *)(p + variant->bad_off);
	good = (volatile uint64_t *)(p + good_off);
	EXPECT_EQ(1, bus_count);
	EXPECT_EQ(BUS_MCEERR_AO, bus_code);
	EXPECT_EQ((void *)bad, bus_addr) TH_LOG("SIGBUS at %p, error at %p", bus_addr, bad);
	EXPECT_EQ(12, bus_lsb);
	TH_LOG("AO SIGBUS: si_addr %p (map %p + %#zx), lsb %d", bus_addr, p,
	       (size_t)((uint8_t *)bus_addr - p), (int)bus_lsb);
	EXPECT_EQ(pois0 + SZ_4K, dmem_node_bytes(variant->node, "poisoned"));
	EXPECT_EQ(1, listed_poisoned(pfn));

	/* the poisoned page: action required at its address */
	EXPECT_EQ(-1, read_or_sigbus(bad, &val));
	EXPECT_EQ(1, bus_count);
	EXPECT_EQ(BUS_MCEERR_AR, bus_code);
	EXPECT_EQ((void *)bad, bus_addr);
	/* the rest of the dpage keeps its data */
	EXPECT_EQ(0, read_or_sigbus(good, &val));
	EXPECT_EQ(MAGIC ^ good_off, val);
	EXPECT_EQ(0, bus_count);

	/* /proc/self/mem: ->access skips the poisoned page */
	mem = open("/proc/self/mem", O_RDONLY);
	ASSERT_LE(0, mem);
	EXPECT_EQ(-1, pread(mem, &byte, 1, (off_t)(uintptr_t)bad));
	EXPECT_EQ(1, pread(mem, &byte, 1, (off_t)(uintptr_t)good));
	close(mem);

	/* a second injection is refused as already poisoned */
	EXPECT_EQ(-1, inject(pfn));

	munmap(p, size);
	close(fd);
	unlink(path);
	EXPECT_EQ(free0 - SZ_4K, dmem_node_bytes(variant->node, "free"));

	/*
	 * Never handed out again: take all of the node's pool, which is every
	 * dpage of this size but those with a poisoned page.
	 */
	ASSERT_EQ(0, dmem_node_bytes(variant->node, "used"));
	want_free = (dmem_node_bytes(variant->node, "total") / variant->ps -
		     poisoned_chunks(variant->node, variant->ps)) * variant->ps;
	fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, want_free));
	EXPECT_EQ(0, fallocate(fd, 0, 0, want_free)) TH_LOG("fallocate %lu: %s", want_free, strerror(errno));
	hit = covers_pfn(fd, pfn, extents);
	EXPECT_EQ(0, hit);
	TH_LOG("refilled node%d with %lu bytes in %lu dpages, none over pfn %#lx",
	       variant->node, want_free, extents[0], pfn);
	EXPECT_EQ(want_free / variant->ps, extents[0]);
	close(fd);
	unlink(path);
	EXPECT_EQ(free0 - SZ_4K, dmem_node_bytes(variant->node, "free"));
	signal(SIGBUS, SIG_DFL);
}

/*
 * fallocate() next to a poisoned dpage.  A failing fallocate gives back
 * only the dpages that it added itself, never the poisoned one that the
 * file and its mappings still hold; a succeeding one leaves the poison
 * mark alone, so the bad page is never mapped again, not even by a huge
 * leaf after the mapping is gone and comes back.
 */
TEST_F_TIMEOUT(hwpoison, fallocate_keeps_poison, 900)
{
	size_t size = variant->bad_off - variant->bad_off % variant->ps + variant->ps;
	size_t good_off = variant->bad_off + SZ_4K;
	uint64_t free0, free1, phys, val;
	volatile uint64_t *bad, *good;
	char path[128];
	uint8_t *p;
	int fd, r;

	if (variant->ps == SZ_4K)
		good_off = variant->bad_off - SZ_4K;
	free0 = dmem_node_bytes(variant->node, "free");
	ASSERT_LE(size, free0);
	phys = map_pattern(_metadata, self->dir, variant, size, &fd, &p);
	snprintf(path, sizeof(path), "%s/guest", self->dir);
	ASSERT_EQ(0, inject(phys / SZ_4K)) TH_LOG("corrupt-pfn: %s", strerror(errno));
	bad = (volatile uint64_t *)(p + variant->bad_off);
	good = (volatile uint64_t *)(p + good_off);

	/* fails with ENOSPC after taking the rest of the node */
	free1 = dmem_node_bytes(variant->node, "free");
	r = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, size + free1 + variant->ps);
	EXPECT_EQ(-1, r);
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(free1, dmem_node_bytes(variant->node, "free"))
		TH_LOG("a failed fallocate moved free from %lu to %lu", free1,
		       dmem_node_bytes(variant->node, "free"));
	EXPECT_EQ(phys, phys_of(fd, variant->bad_off))
		TH_LOG("the poisoned dpage left the file");
	EXPECT_EQ(0, read_or_sigbus(good, &val));
	EXPECT_EQ(MAGIC ^ good_off, val);
	EXPECT_EQ(-1, read_or_sigbus(bad, &val));
	EXPECT_EQ(BUS_MCEERR_AR, bus_code);

	/* succeeds, with nothing to add: the mark stays */
	EXPECT_EQ(0, fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, size));
	munmap(p, size);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	bad = (volatile uint64_t *)(p + variant->bad_off);
	good = (volatile uint64_t *)(p + good_off);
	EXPECT_EQ(0, read_or_sigbus(good, &val));
	EXPECT_EQ(MAGIC ^ good_off, val);
	EXPECT_EQ(-1, read_or_sigbus(bad, &val))
		TH_LOG("the poisoned page was mapped again after fallocate");
	EXPECT_EQ(BUS_MCEERR_AR, bus_code);
	EXPECT_EQ((void *)bad, bus_addr);

	munmap(p, size);
	close(fd);
	unlink(path);
	EXPECT_EQ(free0 - SZ_4K, dmem_node_bytes(variant->node, "free"));
	signal(SIGBUS, SIG_DFL);
}

/*
 * A vCPU that reads a poisoned page of its memory, as a guest does that
 * ignored the machine check QEMU injected for the action-optional SIGBUS:
 * KVM faults the page in through the dmemfs mapping, dmemfs answers
 * VM_FAULT_HWPOISON, and KVM must send the vCPU thread SIGBUS
 * BUS_MCEERR_AR at the page's address, from which QEMU injects an
 * action-required machine check that the guest survives.  A KVM_RUN that
 * fails with EFAULT instead makes QEMU stop the whole VM.  The VM then
 * goes on reading the healthy pages of the same dpage.  2M dpages on node
 * 0: the 1G variants above took both of node 1's GiBs.
 */
FIXTURE(kvm) {
	char dir[64];
	int mounted;
	struct kvm_flat k;
};

FIXTURE_SETUP(kvm)
{
	ASSERT_EQ(0, access(INJECT, W_OK)) TH_LOG("no %s", INJECT);
	ASSERT_EQ(0, access("/dev/kvm", R_OK | W_OK)) TH_LOG("/dev/kvm: %s", strerror(errno));
	ASSERT_EQ(0, mount_tmp(self->dir, "pagesize=2M"))
		TH_LOG("mount dmemfs pagesize=2M: %s", strerror(errno));
	self->mounted = 1;
}

FIXTURE_TEARDOWN(kvm)
{
	kvm_flat_close(&self->k);
	if (self->mounted)
		umount2(self->dir, MNT_DETACH);
	rmdir(self->dir);
}

/* One KVM_RUN that reads GPA: 0 and the word; -1 if a SIGBUS jumped back. */
static __attribute__((noinline)) int vcpu_read_or_sigbus(struct kvm_flat *k, uint32_t gpa,
							 uint32_t *val, char *why, size_t wlen)
{
	bus_count = 0;
	if (kvm_flat_reader(k, gpa)) {
		snprintf(why, wlen, "KVM_SET_REGS: %s", strerror(errno));
		return 1;
	}
	if (sigsetjmp(bus_env, 1)) {
		alarm(0);
		return -1;
	}
	return kvm_flat_out(k, val, why, wlen) ? 1 : 0;
}

TEST_F_TIMEOUT(kvm, vcpu_gets_mceerr_ar, 900)
{
	const FIXTURE_VARIANT(hwpoison) v = {
		.opts = "pagesize=2M", .ps = SZ_2M, .node = 0, .bad_off = SZ_2M + 7 * SZ_4K,
	};
	size_t size = 2 * SZ_2M, good_off = v.bad_off + SZ_4K;
	uint32_t gpa = 4 << 20, val = 0;
	uint64_t free0, phys;
	char path[128], why[160] = "";
	const char *what;
	uint8_t *p;
	int fd, r;

	free0 = dmem_node_bytes(v.node, "free");
	ASSERT_LE(size, free0);
	phys = map_pattern(_metadata, self->dir, &v, size, &fd, &p);
	snprintf(path, sizeof(path), "%s/guest", self->dir);
	ASSERT_EQ(0, kvm_flat_create(&self->k, &what)) TH_LOG("%s: %s", what, strerror(errno));
	ASSERT_EQ(0, kvm_flat_slot(&self->k, 1, gpa, p, size))
		TH_LOG("dmem memslot: %s", strerror(errno));
	r = vcpu_read_or_sigbus(&self->k, gpa + v.bad_off, &val, why, sizeof(why));
	ASSERT_EQ(0, r) TH_LOG("before the error: %s", why);
	EXPECT_EQ((uint32_t)(MAGIC ^ v.bad_off), val);

	/* the error: action optional, this process is early-kill (QEMU is) */
	bus_count = 0;
	ASSERT_EQ(0, inject(phys / SZ_4K)) TH_LOG("corrupt-pfn: %s", strerror(errno));
	EXPECT_EQ(1, bus_count);
	EXPECT_EQ(BUS_MCEERR_AO, bus_code);

	/* the guest reads it anyway */
	r = vcpu_read_or_sigbus(&self->k, gpa + v.bad_off, &val, why, sizeof(why));
	TH_LOG("vCPU read of the poisoned page: %s", r < 0 ? "SIGBUS" : r ? why : "a value");
	EXPECT_EQ(-1, r);
	EXPECT_EQ(1, bus_count);
	EXPECT_EQ(BUS_MCEERR_AR, bus_code);
	EXPECT_EQ((void *)(p + v.bad_off), bus_addr)
		TH_LOG("SIGBUS at %p, the page at %p", bus_addr, p + v.bad_off);
	EXPECT_EQ(12, bus_lsb);

	/* the VM goes on over the healthy pages of that dpage */
	r = vcpu_read_or_sigbus(&self->k, gpa + good_off, &val, why, sizeof(why));
	EXPECT_EQ(0, r) TH_LOG("a healthy page after the error: %s", r < 0 ? "SIGBUS" : why);
	EXPECT_EQ((uint32_t)(MAGIC ^ good_off), val);

	kvm_flat_close(&self->k);
	munmap(p, size);
	close(fd);
	unlink(path);
	EXPECT_EQ(free0 - SZ_4K, dmem_node_bytes(v.node, "free"));
	signal(SIGBUS, SIG_DFL);
}

/* --pfn FILE OFFSET: print the pfn behind OFFSET of a dmemfs FILE. */
static int print_pfn(const char *path, const char *off)
{
	int fd = open(path, O_RDONLY);
	uint64_t phys;

	if (fd < 0) {
		perror(path);
		return 1;
	}
	phys = phys_of(fd, strtoull(off, NULL, 0));
	close(fd);
	if (!phys) {
		fprintf(stderr, "%s: no dpage at offset %s\n", path, off);
		return 1;
	}
	printf("%#lx\n", phys / SZ_4K);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return harness_list_tests();
	if (argc == 4 && !strcmp(argv[1], "--pfn"))
		return print_pfn(argv[2], argv[3]);
	harness_filter_env();
	return test_harness_run(argc, argv);
}
