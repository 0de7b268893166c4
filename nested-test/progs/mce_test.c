// SPDX-License-Identifier: GPL-2.0
/*
 * mce_test: machine checks on dmem raised for real, inside an L1 booted
 * with an Intel CPU model (nested-test/l1/mce-l1.sh; kselftest harness).
 *
 * The legacy injector (CONFIG_X86_MCE_INJECT with CONFIG_X86_MCELOG_LEGACY)
 * takes a struct mce written to /dev/mcelog and, with MCJ_EXCEPTION |
 * MCJ_CTX_PROCESS, runs do_machine_check() in the writing task on the CPU
 * it names: the same handler, severity grading, kill_me_maybe(),
 * memory_failure() and set_mce_nospec() as a real error.  The field values
 * are those of ../shared/research/srar-injection.md (LMCES: a local
 * error; RIPV: memory_failure() rather than a plain SIGBUS).
 *
 *  srar.{4K,2M,1G}.data_load
 *      an action-required data-load error on a page of a mapped dmemfs
 *      file, injected from the task's own context: SIGBUS BUS_MCEERR_AR at
 *      that 4 KiB page with si_addr_lsb 12, graded AR in /dev/mcelog, the
 *      page quarantined; the neighbouring page keeps its data, the bad one
 *      gets SIGBUS when read and an error through /proc/self/mem; the same
 *      error again gets a second BUS_MCEERR_AR (the repeated error).
 *  srao.while_allocating
 *      an action-optional (patrol scrub) error on a page of a 1G dpage that
 *      a fault is clearing: the machine-check code unmaps the page from
 *      the direct map once memory_failure() returns, so the allocation
 *      must not store to it afterwards (an oops before the fix).  The page
 *      is quarantined and never mapped; the rest of the dpage is zero.
 *  srao.while_background_zeroing
 *      the same on a free 1G dpage that the background zeroer is clearing
 *      (node 1: the tests before leave no whole GiB of node 0 healthy).
 *  srao_on_table.persist_table_page
 *      an action-optional error on a page of a persisted table: the table
 *      goes without a write to that page, a change to the files does not
 *      oops, and the next persist uses another page.
 *
 *   mce_test          run all tests (TAP on stdout)
 *   mce_test --list   print the test names, one a line, and exit
 */
#define _GNU_SOURCE
#include <asm/mce.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "test_util.h"
#include "memory_error.h"

#define MCELOG		"/dev/mcelog"
#define MAGIC		0x6d63655f74657374ULL
/* arch/x86/include/asm/mce.h, not uapi */
#define MCG_RIPV	(1ULL << 0)
#define MCG_EIPV	(1ULL << 1)
#define MCG_MCIP	(1ULL << 2)
#define MCG_LMCES	(1ULL << 3)
#define MCI_VAL		(1ULL << 63)
#define MCI_UC		(1ULL << 61)
#define MCI_EN		(1ULL << 60)
#define MCI_MISCV	(1ULL << 59)
#define MCI_ADDRV	(1ULL << 58)
#define MCI_S		(1ULL << 56)
#define MCI_AR		(1ULL << 55)
#define MCACOD_DATA	0x0134	/* data load */
#define MCACOD_SCRUB	0x00c0	/* patrol scrub */
#define MISC_PHYS_LSB12	((2ULL << 6) | 12)	/* physical address, lsb 12 */
#define MCJ_CTX_PROCESS	0x1
#define MCJ_EXCEPTION	0x8
/* arch/x86/kernel/cpu/mce/internal.h: enum severity_level */
#define SEV_AO		4
#define SEV_AR		6

/* Run on CPU @cpu only; the injector raises #MC on the CPU it names. */
static int pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/*
 * Raise a machine check for the 4 KiB page at physical @phys in this task,
 * pinned to @cpu: action required (a data load) or optional (a patrol
 * scrub).  The write's result; an AR error's SIGBUS jumps to bus_env.
 */
static int raise_mce(uint64_t phys, int cpu, int action_required)
{
	struct mce m = {
		.status = MCI_VAL | MCI_UC | MCI_EN | MCI_MISCV | MCI_ADDRV | MCI_S |
			  (action_required ? MCI_AR | MCACOD_DATA : MCACOD_SCRUB),
		.misc = MISC_PHYS_LSB12,
		.addr = phys,
		.mcgstatus = MCG_RIPV | MCG_EIPV | MCG_MCIP | MCG_LMCES,
		.ip = (uintptr_t)raise_mce,
		.cs = 0x33,	/* user mode */
		.bank = 1,
		.cpu = cpu,
		.extcpu = cpu,
		.inject_flags = MCJ_EXCEPTION | MCJ_CTX_PROCESS,
	};
	int fd = open(MCELOG, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, &m, sizeof(m));
	close(fd);
	return n == sizeof(m) ? 0 : -1;
}

/*
 * The severity /dev/mcelog logged for @phys, or -1 when it logged none;
 * reading takes every record out of the log.
 */
static int logged_severity(uint64_t phys)
{
	int fd = open(MCELOG, O_RDONLY), len = 0, sev = -1;
	struct mce *log;
	ssize_t n, i;

	if (fd < 0 || ioctl(fd, MCE_GET_LOG_LEN, &len) || len <= 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	log = calloc(len, sizeof(*log));
	n = log ? read(fd, log, len * sizeof(*log)) : -1;
	for (i = 0; i < n / (ssize_t)sizeof(*log); i++)
		if (log[i].addr == phys)
			sev = log[i].severity;
	free(log);
	close(fd);
	return sev;
}

/*
 * The severity /dev/mcelog logged for @phys, waiting up to @s seconds: the
 * log's notifier runs after memory_failure() returns (which waits an RCU
 * grace period for dmem), so a page counted poisoned may not be logged yet.
 * The reads take the other records out of the log.
 */
static int wait_logged(uint64_t phys, int s)
{
	int i, sev = -1;

	for (i = 0; i < s * 100 && sev < 0; i++) {
		sev = logged_severity(phys);
		if (sev < 0)
			usleep(10000);
	}
	return sev;
}

/* Wait up to @s seconds for node @node's poisoned_bytes to reach @want. */
static int wait_poisoned(int node, uint64_t want, int s)
{
	int i;

	for (i = 0; i < s * 100; i++) {
		if (dmem_node_bytes(node, "poisoned") >= want)
			return 0;
		usleep(10000);
	}
	return -1;
}

FIXTURE(srar) {
	char dir[64];
	int mounted;
};

MEMORY_ERROR_VARIANTS(srar);

FIXTURE_SETUP(srar)
{
	ASSERT_EQ(0, access(MCELOG, W_OK)) TH_LOG("no %s", MCELOG);
	ASSERT_EQ(0, mount_tmp(self->dir, variant->opts))
		TH_LOG("mount dmemfs %s: %s", variant->opts, strerror(errno));
	self->mounted = 1;
	logged_severity(0);	/* an empty log */
}

FIXTURE_TEARDOWN(srar)
{
	if (self->mounted)
		umount2(self->dir, MNT_DETACH);
	rmdir(self->dir);
}

/* Raise an AR error on @phys; 0 if it brought a SIGBUS that jumped back. */
static __attribute__((noinline)) int raise_ar(uint64_t phys, int cpu)
{
	bus_count = 0;
	if (sigsetjmp(bus_env, 1))
		return 0;
	raise_mce(phys, cpu, 1);
	return -1;
}

TEST_F_TIMEOUT(srar, data_load, 600)
{
	/* two dpages, the bad page in the second: a neighbour for 4K */
	size_t size = variant->bad_off - variant->bad_off % variant->ps + variant->ps;
	size_t good_off = variant->ps == SZ_4K ? variant->bad_off - SZ_4K : variant->bad_off + SZ_4K;
	volatile uint64_t *bad, *good;
	uint64_t pois0, phys, val;
	char path[128], byte;
	int fd, mem, cpu = 0;
	size_t i;
	uint8_t *p;

	pois0 = dmem_node_bytes(variant->node, "poisoned");
	ASSERT_NE(UINT64_MAX, pois0) TH_LOG("no poisoned_bytes in sysfs");
	ASSERT_EQ(0, bind_to(variant->node)) TH_LOG("set_mempolicy: %s", strerror(errno));
	ASSERT_EQ(0, pin_to(cpu)) TH_LOG("sched_setaffinity: %s", strerror(errno));
	ASSERT_EQ(0, catch_sigbus());
	snprintf(path, sizeof(path), "%s/guest", self->dir);
	p = map_new_file(_metadata, path, size, &fd);
	for (i = 0; i < size; i += SZ_4K)
		*(uint64_t *)(p + i) = MAGIC ^ i;
	phys = phys_of(fd, variant->bad_off);
	ASSERT_NE(0, phys) TH_LOG("FIEMAP gave no physical address");
	bad = (volatile uint64_t *)(p + variant->bad_off);
	good = (volatile uint64_t *)(p + good_off);
	TH_LOG("%s: file offset %#zx at %#lx, node%d, CPU %d", variant->opts,
	       variant->bad_off, phys, variant->node, cpu);

	/* the task consumed the error: it gets the signal, now */
	EXPECT_EQ(0, raise_ar(phys, cpu)) TH_LOG("no SIGBUS from an AR machine check");
	EXPECT_EQ(1, bus_count);
	EXPECT_EQ(BUS_MCEERR_AR, bus_code);
	EXPECT_EQ((void *)bad, bus_addr) TH_LOG("SIGBUS at %p, error at %p", bus_addr, bad);
	EXPECT_EQ(12, bus_lsb);
	EXPECT_EQ(SEV_AR, wait_logged(phys, 10)) TH_LOG("not graded action required");
	EXPECT_EQ(pois0 + SZ_4K, dmem_node_bytes(variant->node, "poisoned"));

	/* the neighbour keeps its data; the bad page is never mapped again */
	EXPECT_EQ(0, read_or_sigbus(good, &val));
	EXPECT_EQ(MAGIC ^ good_off, val);
	EXPECT_EQ(-1, read_or_sigbus(bad, &val)) TH_LOG("the bad page is mapped");
	EXPECT_EQ(BUS_MCEERR_AR, bus_code);
	EXPECT_EQ((void *)bad, bus_addr);

	/* /proc/self/mem: an error for the bad page, never a machine check */
	mem = open("/proc/self/mem", O_RDONLY);
	ASSERT_LE(0, mem);
	errno = 0;
	EXPECT_EQ(-1, pread(mem, &byte, 1, (off_t)(uintptr_t)bad));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(1, pread(mem, &byte, 1, (off_t)(uintptr_t)good));
	close(mem);

	/* the repeated error: the same page consumed again, a second signal */
	EXPECT_EQ(0, raise_ar(phys, cpu)) TH_LOG("no SIGBUS for the repeated error");
	EXPECT_EQ(BUS_MCEERR_AR, bus_code);
	EXPECT_EQ((void *)bad, bus_addr);
	EXPECT_EQ(12, bus_lsb);
	EXPECT_EQ(pois0 + SZ_4K, dmem_node_bytes(variant->node, "poisoned"));

	munmap(p, size);
	close(fd);
	unlink(path);
	signal(SIGBUS, SIG_DFL);
}

/*
 * Errors that arrive while a 1G dpage is being cleared.  Both tests need
 * a dpage that a given clearing will reach late: background zeroing is
 * off while a fault clears one, on while the zeroer does.
 */
FIXTURE(srao) {
	char dir[64];
};

FIXTURE_SETUP(srao)
{
	ASSERT_EQ(0, access(MCELOG, W_OK)) TH_LOG("no %s", MCELOG);
	ASSERT_EQ(0, mount_tmp(self->dir, "pagesize=1G"))
		TH_LOG("mount dmemfs pagesize=1G: %s", strerror(errno));
	logged_severity(0);
}

FIXTURE_TEARDOWN(srao)
{
	write_str(ZEROING, "1");
	umount2(self->dir, MNT_DETACH);
	rmdir(self->dir);
}

TEST_F_TIMEOUT(srao, while_allocating, 600)
{
	/* late in the GiB: the fault clears it after the error is handled */
	const size_t bad_off = SZ_1G - 16 * SZ_4K, good_off = bad_off - SZ_4K;
	uint64_t pois0, phys, val;
	struct toucher t = { 0 };
	int fd, in_window, sev;
	char path[128];
	pthread_t th;
	uint8_t *p;

	ASSERT_EQ(0, write_str(ZEROING, "0")) TH_LOG("cannot write " ZEROING);
	ASSERT_EQ(0, bind_to(0));
	ASSERT_EQ(0, catch_sigbus());
	pois0 = dmem_node_bytes(0, "poisoned");
	phys = dirty_gib(_metadata, self->dir);

	snprintf(path, sizeof(path), "%s/guest", self->dir);
	p = map_new_file(_metadata, path, SZ_1G, &fd);
	t.p = p;
	/* the fault on CPU 1 (the thread inherits it), the error raised on 0 */
	ASSERT_EQ(0, pin_to(1));
	ASSERT_EQ(0, pthread_create(&th, NULL, touch_first_byte, &t));
	ASSERT_EQ(0, pin_to(0));
	while (!t.started)
		;
	usleep(20000);
	EXPECT_EQ(0, raise_mce(phys + bad_off, 0, 0)) TH_LOG("%s: %s", MCELOG, strerror(errno));
	/* memory_failure() runs from a work item: the error is handled when counted */
	EXPECT_EQ(0, wait_poisoned(0, pois0 + SZ_4K, 60)) TH_LOG("the error was never handled");
	in_window = !t.done;
	pthread_join(th, NULL);
	sev = wait_logged(phys + bad_off, 10);
	ASSERT_EQ(phys, phys_of(fd, 0)) TH_LOG("the file got another GiB than the probe's");
	TH_LOG("error at %#lx handled %s the fault finished; graded %d", phys + bad_off,
	       in_window ? "before" : "after", sev);
	EXPECT_TRUE(in_window) TH_LOG("the fault was done before the error: not the race");
	EXPECT_EQ(SEV_AO, sev) TH_LOG("not graded action optional");
	EXPECT_EQ(pois0 + SZ_4K, dmem_node_bytes(0, "poisoned"));

	EXPECT_EQ(0, read_or_sigbus((volatile uint64_t *)(p + good_off), &val));
	EXPECT_EQ(0, val) TH_LOG("the page next to the bad one is not zero");
	EXPECT_EQ(-1, read_or_sigbus((volatile uint64_t *)(p + bad_off), &val))
		TH_LOG("the bad page is mapped");
	EXPECT_EQ(BUS_MCEERR_AR, bus_code);

	munmap(p, SZ_1G);
	close(fd);
	unlink(path);
	signal(SIGBUS, SIG_DFL);
}

TEST_F_TIMEOUT(srao, while_background_zeroing, 600)
{
	const size_t bad_off = SZ_1G - 16 * SZ_4K;
	uint64_t pois0, free0, phys, dirty0, dirty;
	int i;

	ASSERT_EQ(0, write_str(ZEROING, "0"));
	ASSERT_EQ(0, bind_to(1));
	ASSERT_EQ(0, pin_to(1));
	pois0 = dmem_node_bytes(1, "poisoned");
	free0 = dmem_node_bytes(1, "free");
	phys = dirty_gib(_metadata, self->dir);
	ASSERT_NE(0, dmem_node_bytes(1, "dirty")) TH_LOG("the GiB came back clean");

	/* the zeroer starts on the dirty GiB; the error lands late in it */
	dirty0 = dmem_node_bytes(1, "dirty");
	ASSERT_EQ(0, write_str(ZEROING, "1"));
	for (i = 0; i < 5000 && dmem_node_bytes(1, "dirty") == dirty0; i++)
		usleep(1000);
	EXPECT_EQ(0, raise_mce(phys + bad_off, 1, 0)) TH_LOG("%s: %s", MCELOG, strerror(errno));
	EXPECT_EQ(0, wait_poisoned(1, pois0 + SZ_4K, 60)) TH_LOG("the error was never handled");
	dirty = dmem_node_bytes(1, "dirty");
	TH_LOG("error at %#lx handled with %lu dirty bytes left on node1", phys + bad_off, dirty);
	EXPECT_NE(0, dirty) TH_LOG("the zeroer was done before the error: not the race");
	EXPECT_EQ(SEV_AO, wait_logged(phys + bad_off, 10));

	/* the zeroer finishes, around the bad page, which stays out */
	for (i = 0; i < 6000 && dmem_node_bytes(1, "dirty"); i++)
		usleep(10000);
	EXPECT_EQ(0, dmem_node_bytes(1, "dirty"));
	EXPECT_EQ(free0 - SZ_4K, dmem_node_bytes(1, "free"));
	EXPECT_EQ(pois0 + SZ_4K, dmem_node_bytes(1, "poisoned"));
}

/*
 * An error on a page of a persisted table, which no file holds: the
 * table goes, without a write to the bad page (the machine-check code
 * took it out of the direct map), so the next change to the files, which
 * would wipe a live table, does not oops (it did before the fix, holding
 * the table lock); and the next persist writes its table elsewhere.
 */
FIXTURE(srao_on_table) {
	char dir[32];
};

FIXTURE_SETUP(srao_on_table)
{
	strcpy(self->dir, "/tmp/mce-table.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
}

FIXTURE_TEARDOWN(srao_on_table)
{
	umount2(self->dir, MNT_DETACH);
	rmdir(self->dir);
}

TEST_F_TIMEOUT(srao_on_table, persist_table_page, 300)
{
	const char *dir = self->dir;
	uint64_t addr, again;
	int64_t pois0;
	char path[96];
	int fd;

	ASSERT_EQ(0, access(MCELOG, W_OK)) TH_LOG("no %s", MCELOG);
	ASSERT_EQ(0, mount("none", dir, "dmemfs", 0, "pagesize=4K"));
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fallocate(fd, 0, 0, SZ_4K));
	close(fd);
	ASSERT_EQ(0, mount("none", dir, NULL, MS_REMOUNT, "persist"))
		TH_LOG("remount persist: %s", strerror(errno));
	addr = persisted(dir);
	ASSERT_NE(0, addr) TH_LOG("no persisted= in /proc/mounts");
	pois0 = dmem_pool_sum("poisoned");
	ASSERT_LE(0, pois0);
	logged_severity(0);
	ASSERT_EQ(0, pin_to(0));
	EXPECT_EQ(0, raise_mce(addr, 0, 0)) TH_LOG("%s: %s", MCELOG, strerror(errno));
	for (int i = 0; i < 6000 && dmem_pool_sum("poisoned") < pois0 + (int64_t)SZ_4K; i++)
		usleep(10000);
	EXPECT_EQ(pois0 + (int64_t)SZ_4K, dmem_pool_sum("poisoned")) TH_LOG("the error was never handled");
	EXPECT_EQ(SEV_AO, wait_logged(addr, 10));
	EXPECT_EQ(0, persisted(dir)) TH_LOG("the table at %#lx is still published", addr);
	/* a change: it would wipe a live table */
	EXPECT_EQ(0, chmod(path, 0640));
	EXPECT_EQ(0, mount("none", dir, NULL, MS_REMOUNT, "persist"))
		TH_LOG("persist after the error: %s", strerror(errno));
	again = persisted(dir);
	EXPECT_NE(0, again);
	EXPECT_NE(addr, again) TH_LOG("the new table is on the bad page");
	TH_LOG("table at %#lx had the error; the next one is at %#lx", addr, again);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return harness_list_tests();
	harness_filter_env();
	return test_harness_run(argc, argv);
}
