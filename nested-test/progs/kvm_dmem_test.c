// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_dmem_test: KVM guest memory on dmemfs, with the raw KVM API (no
 * selftest library) and the kselftest harness.  Runs inside L1.
 *
 * Each test builds a VM (kvm_flat.h) with two memslots:
 *   slot 0  64 KiB of anonymous memory at GPA 0: the guest code at 0x1000
 *   slot 1  one dpage (2 MiB at GPA 2 MiB, or 1 GiB at GPA 1 GiB) backed by
 *           a MAP_SHARED mapping of a dmemfs file, GPA and host VA both
 *           aligned to the dpage size
 * and one vCPU in flat 32-bit protected mode (no paging) looping over
 *     mov eax, [DATA_GPA]; mov edx, 0x10; out dx, eax; jmp loop
 * so every KVM_RUN returns a KVM_EXIT_IO carrying the 32-bit value the guest
 * read from the first word of the dpage.
 *
 * The variants take their file from $DMEMFS_2M_MOUNT / $DMEMFS_1G_MOUNT
 * (a missing or non-dmemfs mount fails the test), the pool counters from
 * $DMEMFS_SYSFS_ROOT (default /sys/kernel/mm/dmem).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "test_util.h"
#include "kvm_flat.h"

#define SZ_2M		(2UL << 20)
#define SZ_1G		(1UL << 30)

/* ---- KVM binary statistics (KVM_GET_STATS_FD on the VM fd) */

/* value of the VM statistic NAME, or -1 */
static int64_t vm_stat(int vm_fd, const char *name)
{
	struct kvm_stats_header h;
	size_t dsz;
	char *descs = NULL;
	int64_t val = -1;
	uint32_t i;
	int fd;

	fd = ioctl(vm_fd, KVM_GET_STATS_FD, NULL);
	if (fd < 0)
		return -1;
	if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
		goto out;
	dsz = sizeof(struct kvm_stats_desc) + h.name_size;
	descs = calloc(h.num_desc, dsz);
	if (!descs ||
	    pread(fd, descs, h.num_desc * dsz, h.desc_offset) != (ssize_t)(h.num_desc * dsz))
		goto out;
	for (i = 0; i < h.num_desc; i++) {
		struct kvm_stats_desc *d = (struct kvm_stats_desc *)(descs + i * dsz);
		uint64_t v;

		if (strncmp(d->name, name, h.name_size))
			continue;
		if (d->size >= 1 &&
		    pread(fd, &v, sizeof(v), h.data_offset + d->offset) == sizeof(v))
			val = (int64_t)v;
		break;
	}
out:
	free(descs);
	close(fd);
	return val;
}

/* ---- the fixture: one VM, one vCPU, the code slot and the dmem slot */

FIXTURE(kvm_dmem) {
	int64_t free0;		/* pool free bytes before anything was made */
	char path[256];
	int fd;
	struct kvm_flat k;	/* the VM: kvm_flat.h */
	volatile uint32_t *data;	/* host view of the first word of the dpage */
	size_t ps;
	uint64_t gpa;
	/* whole_view: a second file, its own memslot right after the first */
	char path2[256];
	int fd2;
	uint32_t *data2;
};

FIXTURE_VARIANT(kvm_dmem) {
	const char *env;	/* mount point from the environment */
	size_t ps;
};

FIXTURE_VARIANT_ADD(kvm_dmem, 2M) { .env = "DMEMFS_2M_MOUNT", .ps = SZ_2M };
FIXTURE_VARIANT_ADD(kvm_dmem, 1G) { .env = "DMEMFS_1G_MOUNT", .ps = SZ_1G };

/* mmap the file over exactly LEN bytes at a LEN-aligned address */
static void *mmap_aligned(int fd, size_t len)
{
	uint8_t *res, *al;

	res = mmap(NULL, 2 * len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return MAP_FAILED;
	al = (uint8_t *)(((uintptr_t)res + len - 1) & ~(uintptr_t)(len - 1));
	if (al > res)
		munmap(res, al - res);
	if (res + 2 * len > al + len)
		munmap(al + len, res + 2 * len - (al + len));
	return mmap(al, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
}

/*
 * Create MNT/STEM.<pid> (its name into PATH, PLEN bytes), LEN bytes long, and
 * map it whole at a LEN-aligned address (*FD open on it): the mapping, or
 * MAP_FAILED with errno and *WHAT naming the step that failed.
 */
static void *dpage_file(const char *mnt, const char *stem, size_t len, char *path, size_t plen,
			int *fd, const char **what)
{
	snprintf(path, plen, "%s/%s.%d", mnt, stem, getpid());
	*what = "open";
	*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (*fd < 0)
		return MAP_FAILED;
	*what = "ftruncate";
	if (ftruncate(*fd, len))
		return MAP_FAILED;
	*what = "mmap";
	return mmap_aligned(*fd, len);
}

/* unmap MAP (LEN bytes), close *FD and unlink PATH, as far as they exist */
static void drop_file(void *map, size_t len, int *fd, char *path)
{
	if (map && map != MAP_FAILED)
		munmap(map, len);
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	if (path[0])
		unlink(path);
	path[0] = 0;
}

/* undo everything the setup made; safe to call twice */
static void vm_close(FIXTURE_DATA(kvm_dmem) *self)
{
	kvm_flat_close(&self->k);
	drop_file((void *)self->data, self->ps, &self->fd, self->path);
	self->data = NULL;
	drop_file(self->data2, self->ps, &self->fd2, self->path2);
	self->data2 = NULL;
}

FIXTURE_SETUP(kvm_dmem)
{
	const char *mnt = getenv(variant->env);
	struct statfs sfs;
	const char *what;

	memset(self, 0, sizeof(*self));
	self->fd = self->fd2 = -1;
	self->ps = variant->ps;
	self->gpa = variant->ps;	/* 2 MiB or 1 GiB: aligned to the dpage */
	self->free0 = dmem_pool_sum("free");
	ASSERT_GE(self->free0, (int64_t)self->ps) TH_LOG("dmem pool free %lld B under %s",
							 (long long)self->free0, dmem_sysfs());

	ASSERT_NE(NULL, mnt) TH_LOG("$%s is not set", variant->env);
	ASSERT_EQ(0, statfs(mnt, &sfs)) TH_LOG("statfs %s: %s", mnt, strerror(errno));
	ASSERT_EQ(DMEMFS_MAGIC, (unsigned long)sfs.f_type) TH_LOG("%s is not dmemfs", mnt);
	self->data = dpage_file(mnt, "kvm_dmem_test", self->ps, self->path, sizeof(self->path),
				&self->fd, &what);
	ASSERT_NE(MAP_FAILED, (void *)self->data)
		TH_LOG("%s %s: %s", what, self->path, strerror(errno));
	ASSERT_EQ(0, (uintptr_t)self->data & (self->ps - 1));

	ASSERT_EQ(0, kvm_flat_create(&self->k, &what)) TH_LOG("%s: %s", what, strerror(errno));
	ASSERT_EQ(KVM_API_VERSION, ioctl(self->k.kvm_fd, KVM_GET_API_VERSION, NULL));
	ASSERT_LT(0, ioctl(self->k.kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_BINARY_STATS_FD));
	ASSERT_EQ(0, kvm_flat_slot(&self->k, 1, self->gpa, (void *)self->data, self->ps))
		TH_LOG("dmem memslot: %s", strerror(errno));
	ASSERT_EQ(0, kvm_flat_reader(&self->k, (uint32_t)self->gpa));
}

FIXTURE_TEARDOWN(kvm_dmem)
{
	vm_close(self);
}

/*
 * One KVM_RUN, bounded by a 60 s alarm (kvm_flat_out()).  Returns 0 and
 * the value the guest read for an IO exit on our port, else -1 with *why
 * set (errno of KVM_RUN or the exit reason).
 */
static int guest_read(FIXTURE_DATA(kvm_dmem) *self, uint32_t *val, char *why, size_t wlen)
{
	return kvm_flat_out(&self->k, val, why, wlen);
}

#define GUEST_READS(expect)                                                          \
	do {                                                                         \
		uint32_t _v = 0;                                                     \
		char _why[160] = "";                                                 \
		ASSERT_EQ(0, guest_read(self, &_v, _why, sizeof(_why))) TH_LOG("%s", _why); \
		ASSERT_EQ((uint32_t)(expect), _v)                                    \
			TH_LOG("guest read 0x%08x, want 0x%08x", _v, (uint32_t)(expect)); \
	} while (0)

/* (a) the guest sees what the host wrote through its mapping */
TEST_F_TIMEOUT(kvm_dmem, host_write, 300)
{
	self->data[0] = 0x11223344;
	GUEST_READS(0x11223344);
	self->data[0] = 0x55667788;
	/* the same huge mapping: no new fault needed to see the update */
	GUEST_READS(0x55667788);
}

/* (b) KVM's stats show the dpage mapped as one huge NPT/EPT leaf */
TEST_F_TIMEOUT(kvm_dmem, stats, 300)
{
	int64_t p4k, p2m, p1g;

	self->data[0] = 0xcafe0001;
	GUEST_READS(0xcafe0001);
	p4k = vm_stat(self->k.vm_fd, "pages_4k");
	p2m = vm_stat(self->k.vm_fd, "pages_2m");
	p1g = vm_stat(self->k.vm_fd, "pages_1g");
	TH_LOG("%s variant: pages_4k=%lld pages_2m=%lld pages_1g=%lld",
	       self->ps == SZ_1G ? "1G" : "2M", (long long)p4k, (long long)p2m, (long long)p1g);
	ASSERT_LE(0, p4k) TH_LOG("no pages_4k in the VM's binary stats");
	ASSERT_LE(0, p2m) TH_LOG("no pages_2m in the VM's binary stats");
	ASSERT_LE(0, p1g) TH_LOG("no pages_1g in the VM's binary stats");
	if (self->ps == SZ_1G) {
		ASSERT_LE(1, p1g);
	} else {
		ASSERT_LE(1, p2m);
	}
}

/* (c) punch hole: the mmu notifier zaps the guest mapping, the guest refaults */
TEST_F_TIMEOUT(kvm_dmem, punch_hole, 300)
{
	int64_t before, after;

	self->data[0] = 0xdead0001;
	GUEST_READS(0xdead0001);
	before = dmem_pool_sum("free");
	ASSERT_EQ(0, fallocate(self->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, self->ps))
		TH_LOG("punch hole: %s", strerror(errno));
	after = dmem_pool_sum("free");
	/* the dpage went back to the pool: the hole is real */
	ASSERT_EQ(before + (int64_t)self->ps, after);
	/* a stale NPT entry would still show 0xdead0001 */
	GUEST_READS(0);
	self->data[0] = 0xdead0002;
	GUEST_READS(0xdead0002);
	TH_LOG("after refault: pages_2m=%lld pages_1g=%lld",
	       (long long)vm_stat(self->k.vm_fd, "pages_2m"),
	       (long long)vm_stat(self->k.vm_fd, "pages_1g"));
}

/* (d) truncate: the guest must not reach the freed dpage, nor hang */
TEST_F_TIMEOUT(kvm_dmem, truncate, 300)
{
	uint32_t v = 0;
	char why[160] = "";
	int ret;

	self->data[0] = 0xbeef0001;
	GUEST_READS(0xbeef0001);
	ASSERT_EQ(0, ftruncate(self->fd, 0));
	ASSERT_EQ(self->free0, dmem_pool_sum("free")) TH_LOG("truncate to 0 did not free the dpage");
	ret = guest_read(self, &v, why, sizeof(why));
	TH_LOG("KVM_RUN with the file truncated: %s", ret ? why : "IO exit");
	ASSERT_NE(0, ret) TH_LOG("guest read 0x%08x from a truncated file", v);
	ASSERT_EQ(NULL, strstr(why, "hung"));
	ASSERT_EQ(0, ftruncate(self->fd, self->ps));
	GUEST_READS(0);
	self->data[0] = 0xbeef0002;
	GUEST_READS(0xbeef0002);
}

/* (e) every dpage goes back to the pool once the VM and the file are gone */
TEST_F_TIMEOUT(kvm_dmem, freed_after_close, 300)
{
	int64_t during;

	self->data[0] = 0x0f0f0f0f;
	GUEST_READS(0x0f0f0f0f);
	during = dmem_pool_sum("free");
	ASSERT_EQ(self->free0 - (int64_t)self->ps, during)
		TH_LOG("pool free %lld B while running, %lld B before", (long long)during,
		       (long long)self->free0);
	vm_close(self);
	ASSERT_EQ(self->free0, dmem_pool_sum("free")) TH_LOG("pool free %lld B after close, %lld B before",
						   (long long)dmem_pool_sum("free"), (long long)self->free0);
}

/*
 * (f) punches racing the guest's refaults.  Each punch zaps the mapping;
 * the guest's next read faults the file in again through KVM, which looks
 * the pfn up, faults the page in when it is not mapped, and looks again.
 * A punch that lands between that fault and the second look must make KVM
 * retry, not fail KVM_RUN with EFAULT (which kills the VM in QEMU).
 */
TEST_F_TIMEOUT(kvm_dmem, punch_race, 300)
{
	struct puncher p = { .fd = self->fd, .len = self->ps };
	char why[160] = "";
	long reads = 0, nonzero = 0;
	int failed = 0;
	pthread_t t;
	time_t end;

	GUEST_READS(0);
	ASSERT_EQ(0, pthread_create(&t, NULL, punch_loop, &p));
	end = time(NULL) + 8;
	while (time(NULL) < end) {
		uint32_t v = 0;

		if (guest_read(self, &v, why, sizeof(why))) {
			failed = 1;
			break;
		}
		nonzero += v != 0;
		reads++;
	}
	p.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("%ld guest reads against %ld punches", reads, p.punches);
	ASSERT_EQ(0, failed) TH_LOG("guest read %ld, after %ld punches: %s", reads + 1,
				    p.punches, why);
	ASSERT_EQ(0, p.err) TH_LOG("punch hole: %s", strerror(p.err));
	ASSERT_EQ(0, nonzero) TH_LOG("%ld reads of a punched file were not zero", nonzero);
	ASSERT_LT(0, p.punches);
	/* the VM still runs on the file's dpage */
	self->data[0] = 0x5a5a0001;
	GUEST_READS(0x5a5a0001);
}

/*
 * (g) the guest's view of every 4 KiB page is the host's, both ways, over
 * two dpages of two files in two memslots (as QEMU lays out two NUMA
 * cells): the host tags each page with its GPA, the guest checks every
 * tag and writes back its complement, the host checks every answer.  A
 * huge leaf that maps the wrong pfn, or an offset lost inside a dpage,
 * shows here as pages that differ, not as a guest that hangs later.
 */
TEST_F_TIMEOUT(kvm_dmem, whole_view, 600)
{
	static const uint8_t walk[] = {
		0xbe, 0, 0, 0, 0,		/* mov esi, BASE (patched at 1) */
		0x31, 0xdb,			/* xor ebx, ebx: pages that differ */
		0xbf, 0xff, 0xff, 0xff, 0xff,	/* mov edi, -1: the first of them */
		/* loop: */
		0x8b, 0x06,			/* mov eax, [esi] */
		0x39, 0xf0,			/* cmp eax, esi */
		0x74, 0x08,			/* je ok */
		0x43,				/* inc ebx */
		0x83, 0xff, 0xff,		/* cmp edi, -1 */
		0x75, 0x02,			/* jne ok */
		0x89, 0xf7,			/* mov edi, esi */
		/* ok: */
		0x89, 0xf0,			/* mov eax, esi */
		0xf7, 0xd0,			/* not eax */
		0x89, 0x46, 0x04,		/* mov [esi + 4], eax */
		0x81, 0xc6, 0x00, 0x10, 0, 0,	/* add esi, 4096 */
		0x81, 0xfe, 0, 0, 0, 0,		/* cmp esi, END (patched at 41) */
		0x72, 0xdd,			/* jb loop */
		0x89, 0xd8,			/* mov eax, ebx */
		0xba, KVM_FLAT_PORT, 0, 0, 0,	/* mov edx, KVM_FLAT_PORT */
		0xef,				/* out dx, eax */
		0x89, 0xf8,			/* mov eax, edi */
		0xef,				/* out dx, eax */
		0xf4,				/* hlt */
	};
	const char *mnt = getenv(variant->env), *what;
	uint32_t base = (uint32_t)self->gpa, end = (uint32_t)(self->gpa + 2 * self->ps);
	uint32_t bad = 0, first = 0, wrong = 0, firstw = 0;
	uint8_t code[sizeof(walk)];
	char why[160] = "";
	int64_t p2m, p1g;
	size_t off;

	self->data2 = dpage_file(mnt, "kvm_dmem_test2", self->ps, self->path2, sizeof(self->path2),
				 &self->fd2, &what);
	ASSERT_NE(MAP_FAILED, (void *)self->data2)
		TH_LOG("%s %s: %s", what, self->path2, strerror(errno));
	ASSERT_EQ(0, kvm_flat_slot(&self->k, 2, self->gpa + self->ps, self->data2, self->ps))
		TH_LOG("second dmem memslot: %s", strerror(errno));

	for (off = 0; off < self->ps; off += 4096) {
		self->data[off / 4] = base + off;
		self->data2[off / 4] = base + self->ps + off;
	}
	memcpy(code, walk, sizeof(walk));
	memcpy(code + 1, &base, sizeof(base));
	memcpy(code + 41, &end, sizeof(end));
	ASSERT_EQ(0, kvm_flat_code(&self->k, code, sizeof(code)));
	ASSERT_EQ(0, guest_read(self, &bad, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, guest_read(self, &first, why, sizeof(why))) TH_LOG("%s", why);
	for (off = 0; off < self->ps; off += 4096) {
		uint32_t g1 = base + off, g2 = base + self->ps + off;

		if (self->data[off / 4 + 1] != ~g1 && !wrong++)
			firstw = g1;
		if (self->data2[off / 4 + 1] != ~g2 && !wrong++)
			firstw = g2;
	}
	p2m = vm_stat(self->k.vm_fd, "pages_2m");
	p1g = vm_stat(self->k.vm_fd, "pages_1g");
	TH_LOG("%u pages walked: guest saw %u differ (first GPA 0x%x), host saw %u answers differ (first GPA 0x%x); pages_2m=%lld pages_1g=%lld",
	       (unsigned int)(2 * self->ps / 4096), bad, first, wrong, firstw,
	       (long long)p2m, (long long)p1g);
	ASSERT_EQ(0, bad);
	ASSERT_EQ(0, wrong);
	if (self->ps == SZ_1G) {
		ASSERT_LE(2, p1g);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return harness_list_tests();
	return test_harness_run(argc, argv);
}
