// SPDX-License-Identifier: GPL-2.0
/*
 * vfio_dmem_test: VFIO type1 on dmemfs memory, inside L1 (kselftest harness).
 *
 * L1 has a vIOMMU and the QEMU "edu" device (PCI 1234:11e8), which the
 * caller (nested-test/l1/tests/l1-vfio.sh) binds to vfio-pci.  The tests map
 * dmemfs files into the device's IOMMU domain with VFIO_IOMMU_MAP_DMA and
 * watch the pin accounting of the dmem pool:
 *
 *   /sys/kernel/mm/dmem/node<N>/pinned_bytes   4K pages pinned x 4096
 *   /sys/kernel/mm/dmem/node<N>/{free,used}_bytes
 *   /sys/kernel/debug/dmem/pins                "node head_pfn order
 *                                              pinned_pages orphaned", one
 *                                              line per pinned dpage
 *
 * A dmemfs file truncated or unlinked while pinned must keep its dpages
 * (used, not free, "orphaned") until the last unpin; UNMAP_DMA and the close
 * of the container drop the pins and give the dpages back.
 *
 *   vfio_dmem_test                 run all tests (TAP on stdout)
 *   vfio_dmem_test --list          print the test names, one a line
 *   vfio_dmem_test --bench [--mib N] [--reps R] [--dmem-2M DIR]
 *       [--dmem-1G DIR] [--huge-2M DIR] [--huge-1G DIR]
 *       time MAP_DMA + UNMAP_DMA of N MiB (default 1024) on each backing
 *       (dmemfs, anonymous memory 4K and THP, hugetlbfs), one line per
 *       round: "VFIOBENCH variant=V backing=B pagesize=P mib=N rep=R
 *       map_ns=T unmap_ns=T pinned_bytes=B" or "VFIOSKIP variant=V reason=R".
 *
 * Environment: VFIO_BDF (the device; default: the first 1234:11e8 in sysfs),
 * DMEMFS_2M_MOUNT, DMEMFS_1G_MOUNT (dmemfs mounts to use; a private mount
 * is made when unset or not dmemfs; the 4K variant always mounts its own).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/dma-heap.h>
#include <linux/falloc.h>
#include <linux/vfio.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "test_util.h"

#define SZ_4K		(4096UL)
#define SZ_2M		(2UL << 20)
#define SZ_1G		(1UL << 30)
#define MAX_NODES	64
#define STATS_DIR	"/sys/kernel/mm/dmem"
#define PINS_FILE	"/sys/kernel/debug/dmem/pins"
#define EDU_VENDOR	0x1234
#define EDU_DEVICE	0x11e8
#define IOVA_BASE	(1ULL << 32)	/* 1G-aligned, above the MSI window */

/* ---- dmem pool and pin accounting */

struct dstats {
	int nr;				/* node<N> directories: 0..nr-1 */
	int have_pinned;		/* every node has pinned_bytes */
	uint64_t free[MAX_NODES];
	uint64_t used[MAX_NODES];
	uint64_t pinned[MAX_NODES];
	uint64_t free_all, used_all, pinned_all;
};

/* Summary of the debugfs pins file. */
struct pins {
	int ok;				/* the file was readable and well formed */
	long lines;			/* pinned dpages */
	long pages;			/* sum of pinned_pages */
	long orphaned;			/* lines with orphaned=1 */
	long bad_order;			/* lines whose order is not the expected one */
	long partial;			/* lines with pinned_pages != 1 << order */
	long misaligned;		/* head_pfn not aligned to its order */
	long dup;			/* the same head_pfn twice */
};

static int read_stats(struct dstats *s)
{
	uint64_t t;
	int n, found = 0;

	memset(s, 0, sizeof(*s));
	s->have_pinned = 1;
	if (!dmem_nodes_below(MAX_NODES))
		return -1;	/* a node the arrays cannot hold */
	for (n = 0; n < MAX_NODES; n++) {
		if (dmem_node_stat(n, "total", &t))
			continue;
		found++;
		if (dmem_node_stat(n, "free", &s->free[n]) ||
		    dmem_node_stat(n, "used", &s->used[n]))
			return -1;
		if (dmem_node_stat(n, "pinned", &s->pinned[n]))
			s->have_pinned = 0;
		s->free_all += s->free[n];
		s->used_all += s->used[n];
		s->pinned_all += s->pinned[n];
		s->nr = n + 1;
	}
	return found ? 0 : -1;
}

static int cmp_ul(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* want_order < 0: do not check the order. */
static void read_pins(struct pins *p, int want_order)
{
	unsigned long pfn, pages, *pfns = NULL;
	int node, order, orphaned;
	size_t cap = 0;
	char line[256];
	FILE *f;
	long i;

	memset(p, 0, sizeof(*p));
	f = fopen(PINS_FILE, "r");
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f) || strncmp(line, "node", 4)) {
		fclose(f);
		return;
	}
	p->ok = 1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%d %lx %d %lu %d", &node, &pfn, &order, &pages, &orphaned) != 5) {
			p->ok = 0;
			continue;
		}
		if ((size_t)p->lines == cap) {
			cap = cap ? 2 * cap : 1024;
			pfns = realloc(pfns, cap * sizeof(*pfns));
			if (!pfns) {
				p->ok = 0;
				break;
			}
		}
		pfns[p->lines++] = pfn;
		p->pages += pages;
		p->orphaned += orphaned != 0;
		if (want_order >= 0 && order != want_order)
			p->bad_order++;
		if (order < 0 || order > 30 || pages != 1UL << order)
			p->partial++;
		if (order >= 0 && order <= 30 && (pfn & ((1UL << order) - 1)))
			p->misaligned++;
	}
	fclose(f);
	if (pfns) {
		qsort(pfns, p->lines, sizeof(*pfns), cmp_ul);
		for (i = 1; i < p->lines; i++)
			p->dup += pfns[i] == pfns[i - 1];
		free(pfns);
	}
}

static int log2_ul(unsigned long v)
{
	int r = 0;

	while (v > 1) {
		v >>= 1;
		r++;
	}
	return r;
}

/* ---- VFIO type1 */

struct vfio {
	int container, group;
	char bdf[64], grp[16];
};

/* The device: $VFIO_BDF or the first edu in sysfs. */
static int find_edu(char *bdf, size_t n)
{
	const char *env = getenv("VFIO_BDF");
	uint64_t ven, dev;
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (env && *env) {
		snprintf(bdf, n, "%.63s", env);
		return 0;
	}
	d = opendir("/sys/bus/pci/devices");
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", de->d_name);
		if (read_num(path, 16, &ven))
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", de->d_name);
		if (read_num(path, 16, &dev))
			continue;
		if (ven == EDU_VENDOR && dev == EDU_DEVICE) {
			snprintf(bdf, n, "%.63s", de->d_name);
			closedir(d);
			return 0;
		}
	}
	closedir(d);
	return -1;
}

/* Opens a type1v2 container with the device's group; why gets the reason. */
static int vfio_open(struct vfio *v, char *why, size_t wn)
{
	struct vfio_group_status st = { .argsz = sizeof(st) };
	char path[PATH_MAX], link[PATH_MAX], *b;
	ssize_t n;

	v->container = v->group = -1;
	if (find_edu(v->bdf, sizeof(v->bdf))) {
		snprintf(why, wn, "no PCI device %04x:%04x in sysfs (no -device edu?)", EDU_VENDOR, EDU_DEVICE);
		return -1;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", v->bdf);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	b = strrchr(link, '/');
	if (!b || strcmp(b + 1, "vfio-pci")) {
		snprintf(why, wn, "%s is bound to '%.64s', not vfio-pci", v->bdf, b ? b + 1 : "nothing");
		return -1;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", v->bdf);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0) {
		snprintf(why, wn, "%s has no iommu_group (no vIOMMU / intel_iommu=on?)", v->bdf);
		return -1;
	}
	link[n] = 0;
	snprintf(v->grp, sizeof(v->grp), "%s", strrchr(link, '/') + 1);
	v->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (v->container < 0) {
		snprintf(why, wn, "open /dev/vfio/vfio: %s", strerror(errno));
		return -1;
	}
	if (ioctl(v->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION ||
	    ioctl(v->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) <= 0) {
		snprintf(why, wn, "container: no VFIO API %d with type1v2", VFIO_API_VERSION);
		goto err;
	}
	v->group = open(strcat(strcpy(path, "/dev/vfio/"), v->grp), O_RDWR | O_CLOEXEC);
	if (v->group < 0) {
		snprintf(why, wn, "open /dev/vfio/%s: %s", v->grp, strerror(errno));
		goto err;
	}
	if (ioctl(v->group, VFIO_GROUP_GET_STATUS, &st) || !(st.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		snprintf(why, wn, "group %s not viable (flags %#x)", v->grp, st.flags);
		goto err;
	}
	if (ioctl(v->group, VFIO_GROUP_SET_CONTAINER, &v->container)) {
		snprintf(why, wn, "VFIO_GROUP_SET_CONTAINER: %s", strerror(errno));
		goto err;
	}
	if (ioctl(v->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)) {
		snprintf(why, wn, "VFIO_SET_IOMMU type1v2: %s", strerror(errno));
		goto err;
	}
	return 0;
err:
	if (v->group >= 0)
		close(v->group);
	close(v->container);
	v->container = v->group = -1;
	return -1;
}

static void vfio_close(struct vfio *v)
{
	if (v->group >= 0)
		close(v->group);
	if (v->container >= 0)
		close(v->container);
	v->container = v->group = -1;
}

static int dma_map(struct vfio *v, void *vaddr, uint64_t iova, uint64_t size)
{
	struct vfio_iommu_type1_dma_map m = {
		.argsz = sizeof(m),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = (uintptr_t)vaddr,
		.iova = iova,
		.size = size,
	};

	return ioctl(v->container, VFIO_IOMMU_MAP_DMA, &m) ? -errno : 0;
}

/* Returns the bytes unmapped, or -errno. */
static int64_t dma_unmap(struct vfio *v, uint64_t iova, uint64_t size)
{
	struct vfio_iommu_type1_dma_unmap u = {
		.argsz = sizeof(u),
		.iova = iova,
		.size = size,
	};

	return ioctl(v->container, VFIO_IOMMU_UNMAP_DMA, &u) ? -errno : (int64_t)u.size;
}

static int is_dmemfs(const char *dir)
{
	struct statfs sf;

	return dir && *dir && !statfs(dir, &sf) && (unsigned long)sf.f_type == DMEMFS_MAGIC;
}

/* ---- the tests */

FIXTURE(vfio_dmem) {
	struct vfio v;
	char mnt[64];			/* private mount, or "" */
	char dir[256];			/* where the test file lives */
	char path[320];
	int fd;
	char *p;
	size_t size;
	int order;
	struct dstats base;
	int step;
};

FIXTURE_VARIANT(vfio_dmem) {
	const char *opts;		/* mount options of a private mount */
	const char *env;		/* mount to use, if it is dmemfs */
	size_t ps;
	size_t size;			/* mapped per test: an even number of dpages */
};

FIXTURE_VARIANT_ADD(vfio_dmem, 4K) { .opts = "pagesize=4K", .env = NULL, .ps = SZ_4K, .size = 8UL << 20 };
FIXTURE_VARIANT_ADD(vfio_dmem, 2M) { .opts = "pagesize=2M", .env = "DMEMFS_2M_MOUNT", .ps = SZ_2M, .size = 64UL << 20 };
FIXTURE_VARIANT_ADD(vfio_dmem, 1G) { .opts = "pagesize=1G", .env = "DMEMFS_1G_MOUNT", .ps = SZ_1G, .size = 2UL << 30 };

FIXTURE_SETUP(vfio_dmem)
{
	const char *env = variant->env ? getenv(variant->env) : NULL;
	char why[256];
	size_t off;

	self->fd = -1;
	self->p = MAP_FAILED;
	self->mnt[0] = 0;
	self->size = variant->size;
	self->order = log2_ul(variant->ps / SZ_4K);
	ASSERT_EQ(0, read_stats(&self->base)) TH_LOG("no dmem pool in " STATS_DIR);
	ASSERT_LE(self->size, self->base.free_all)
		TH_LOG("pool free %llu B, the test needs %zu B", (unsigned long long)self->base.free_all, self->size);

	if (is_dmemfs(env)) {
		snprintf(self->dir, sizeof(self->dir), "%s", env);
	} else {
		snprintf(self->mnt, sizeof(self->mnt), "/tmp/vfio-dmem-XXXXXX");
		ASSERT_NE(NULL, mkdtemp(self->mnt));
		ASSERT_EQ(0, mount("none", self->mnt, "dmemfs", 0, variant->opts))
			TH_LOG("mount -t dmemfs -o %s: %s", variant->opts, strerror(errno));
		snprintf(self->dir, sizeof(self->dir), "%s", self->mnt);
	}
	snprintf(self->path, sizeof(self->path), "%s/vfio-dmem-%d", self->dir, getpid());
	self->fd = open(self->path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ASSERT_LE(0, self->fd) TH_LOG("create %s: %s", self->path, strerror(errno));
	ASSERT_EQ(0, ftruncate(self->fd, self->size));
	self->p = mmap(NULL, self->size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->p) TH_LOG("mmap %zu B of %s: %s", self->size, self->path, strerror(errno));
	/* Allocate every dpage now: MAP_DMA must pin, not allocate. */
	for (off = 0; off < self->size; off += variant->ps)
		self->p[off] = 1;

	ASSERT_EQ(0, vfio_open(&self->v, why, sizeof(why))) TH_LOG("%s", why);
}

FIXTURE_TEARDOWN(vfio_dmem)
{
	vfio_close(&self->v);
	if (self->p != MAP_FAILED)
		munmap(self->p, self->size);
	if (self->fd >= 0)
		close(self->fd);
	unlink(self->path);
	if (self->mnt[0]) {
		umount(self->mnt);
		rmdir(self->mnt);
	}
}

/* One line of the refcount trace: pinned_bytes and the pool at STEP. */
static void trace(struct __test_metadata *_metadata, FIXTURE_DATA(vfio_dmem) *self, const char *step)
{
	struct dstats s;
	struct pins p;

	read_stats(&s);
	read_pins(&p, -1);
	if (!s.have_pinned)
		TH_LOG("trace %d %-26s pinned_bytes: (no sysfs file) pins: %s; free %+lld MiB vs start",
		       ++self->step, step, p.ok ? "" : "(no debugfs file)",
		       ((long long)s.free_all - (long long)self->base.free_all) >> 20);
	else
		TH_LOG("trace %d %-26s pinned_bytes %llu (%llu MiB), pins %ld dpages / %ld pages, %ld orphaned; free %+lld MiB vs start",
		       ++self->step, step, (unsigned long long)s.pinned_all,
		       (unsigned long long)s.pinned_all >> 20, p.lines, p.pages, p.orphaned,
		       ((long long)s.free_all - (long long)self->base.free_all) >> 20);
}

/*
 * The pins are exactly BYTES of this test's dpages: pinned_bytes (per node:
 * equal to the dpages this test holds on that node), the pins file (one
 * line per dpage of the variant's order, fully pinned, aligned, no
 * duplicates), and ORPHANED of them orphaned (-1: do not check).
 */
static void expect_pins(struct __test_metadata *_metadata, FIXTURE_DATA(vfio_dmem) *self,
			const char *when, uint64_t bytes, long orphaned, int per_node)
{
	long dpages = bytes >> (self->order + 12);
	struct dstats s;
	struct pins p;
	int n;

	ASSERT_EQ(0, read_stats(&s));
	read_pins(&p, self->order);
	EXPECT_TRUE(s.have_pinned) TH_LOG("%s: no " STATS_DIR "/node<N>/pinned_bytes", when);
	EXPECT_TRUE(p.ok) TH_LOG("%s: no (or malformed) " PINS_FILE, when);
	if (!s.have_pinned || !p.ok)
		return;
	EXPECT_EQ(bytes, s.pinned_all) TH_LOG("%s: pinned_bytes %llu, want %llu", when,
					       (unsigned long long)s.pinned_all, (unsigned long long)bytes);
	EXPECT_EQ(dpages, p.lines) TH_LOG("%s: %ld pinned dpages in %s, want %ld", when, p.lines, PINS_FILE, dpages);
	EXPECT_EQ((long)(bytes >> 12), p.pages) TH_LOG("%s: %ld pinned pages, want %llu", when, p.pages,
						       (unsigned long long)bytes >> 12);
	EXPECT_EQ(0, p.bad_order) TH_LOG("%s: %ld pins of another order than %d", when, p.bad_order, self->order);
	EXPECT_EQ(0, p.partial) TH_LOG("%s: %ld dpages not pinned whole", when, p.partial);
	EXPECT_EQ(0, p.misaligned) TH_LOG("%s: %ld head_pfn not aligned to the order", when, p.misaligned);
	EXPECT_EQ(0, p.dup) TH_LOG("%s: %ld head_pfn listed twice", when, p.dup);
	if (orphaned >= 0)
		EXPECT_EQ(orphaned, p.orphaned) TH_LOG("%s: %ld pins orphaned, want %ld", when, p.orphaned, orphaned);
	/* Everything this test holds is pinned: per node, pinned == used delta. */
	for (n = 0; per_node && n < s.nr; n++)
		EXPECT_EQ(s.used[n] - self->base.used[n], s.pinned[n])
			TH_LOG("%s: node %d pinned %llu B, but the test holds %llu B there", when, n,
			       (unsigned long long)s.pinned[n],
			       (unsigned long long)(s.used[n] - self->base.used[n]));
}

/* The pool as at the start, less what the file still holds (HELD bytes). */
static void expect_free(struct __test_metadata *_metadata, FIXTURE_DATA(vfio_dmem) *self,
			const char *when, uint64_t held)
{
	struct dstats s;

	ASSERT_EQ(0, read_stats(&s));
	EXPECT_EQ(self->base.free_all - held, s.free_all)
		TH_LOG("%s: pool free %llu B, want %llu (start %llu, held %llu)", when,
		       (unsigned long long)s.free_all, (unsigned long long)(self->base.free_all - held),
		       (unsigned long long)self->base.free_all, (unsigned long long)held);
	EXPECT_EQ(self->base.used_all + held, s.used_all)
		TH_LOG("%s: pool used %llu B, want %llu", when, (unsigned long long)s.used_all,
		       (unsigned long long)(self->base.used_all + held));
}

/* Drop the file: munmap, close, unlink. */
static void drop_file(FIXTURE_DATA(vfio_dmem) *self)
{
	munmap(self->p, self->size);
	self->p = MAP_FAILED;
	close(self->fd);
	self->fd = -1;
	unlink(self->path);
}

/* VmLck of /proc/self/status (the mm's locked_vm) in bytes; -1 if none. */
static long long vm_locked(void)
{
	char line[128];
	long long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

static void map_all(struct __test_metadata *_metadata, FIXTURE_DATA(vfio_dmem) *self)
{
	struct timespec t0, t1;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = dma_map(&self->v, self->p, IOVA_BASE, self->size);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ASSERT_EQ(0, r) TH_LOG("VFIO_IOMMU_MAP_DMA of %zu B of dmemfs: %s", self->size, strerror(-r));
	TH_LOG("MAP_DMA %zu MiB in %.1f ms (group %s, device %s)", self->size >> 20,
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6, self->v.grp, self->v.bdf);
}

static void unmap(struct __test_metadata *_metadata, FIXTURE_DATA(vfio_dmem) *self,
		  uint64_t off, uint64_t size)
{
	int64_t r = dma_unmap(&self->v, IOVA_BASE + off, size);

	ASSERT_EQ((int64_t)size, r) TH_LOG("VFIO_IOMMU_UNMAP_DMA at +%llu of %llu B: %lld",
					   (unsigned long long)off, (unsigned long long)size, (long long)r);
}

/*
 * The dmem:dmem_pin (or dmem_unpin) events in the trace buffer: how many,
 * and the pages they covered (their nr= fields added up).  -1 if the
 * buffer cannot be read.
 */
static void add_nr(const char *line, void *arg)
{
	const char *nr = strstr(line, " nr=");

	if (nr)
		*(long *)arg += strtol(nr + 4, NULL, 10);
}

static long count_pin_events(const char *event, long *pages)
{
	*pages = 0;
	return dmem_trace_each(event, add_nr, pages);
}

/*
 * MAP_DMA takes the run of pfns behind each leaf in one step: every pin
 * covers a whole dpage (a 1G dpage: one pin of 262144 pages, not 262144
 * pins).  Where two dpages are not physically contiguous, type1 drops the
 * leaf it had looked ahead at and pins it again for the next IOMMU
 * mapping, so there are between 1 and 2 pins a dpage, never one a page.
 * UNMAP_DMA drops contiguous runs at once, never more than one unpin per
 * dpage.
 */
TEST_F_TIMEOUT(vfio_dmem, one_pin_per_dpage, 300)
{
	long dpages = self->size >> (self->order + 12), n, pages;

	ASSERT_EQ(0, dmem_trace("dmem_pin", 1)) TH_LOG("no dmem:dmem_pin trace event");
	map_all(_metadata, self);
	dmem_trace("dmem_pin", 0);
	n = count_pin_events("dmem_pin", &pages);
	TH_LOG("MAP_DMA of %ld dpages: %ld pins of %ld pages", dpages, n, pages);
	EXPECT_LE(dpages, n);
	EXPECT_GT(2 * dpages, n);
	EXPECT_EQ(n << self->order, pages) TH_LOG("a pin that is not a whole dpage");
	expect_pins(_metadata, self, "after MAP_DMA", self->size, 0, 1);

	ASSERT_EQ(0, dmem_trace("dmem_unpin", 1));
	unmap(_metadata, self, 0, self->size);
	dmem_trace("dmem_unpin", 0);
	n = count_pin_events("dmem_unpin", &pages);
	TH_LOG("UNMAP_DMA of %ld dpages: %ld unpins", dpages, n);
	EXPECT_LE(1, n);
	EXPECT_GE(dpages, n);
	EXPECT_EQ((long)(self->size >> 12), pages);
	expect_pins(_metadata, self, "after UNMAP_DMA", 0, 0, 0);
	drop_file(self);
	expect_free(_metadata, self, "file removed", 0);
}

TEST_F_TIMEOUT(vfio_dmem, map_unmap, 300)
{
	long long locked0 = vm_locked();

	ASSERT_LE(0, locked0) TH_LOG("no VmLck in /proc/self/status");
	trace(_metadata, self, "file populated");
	expect_pins(_metadata, self, "before MAP_DMA", 0, 0, 0);
	map_all(_metadata, self);
	trace(_metadata, self, "after MAP_DMA");
	expect_pins(_metadata, self, "after MAP_DMA", self->size, 0, 1);
	expect_free(_metadata, self, "after MAP_DMA", self->size);
	/* pinned dmem is locked memory of the mapper, like pinned pages */
	EXPECT_EQ(locked0 + (long long)self->size, vm_locked())
		TH_LOG("VmLck %lld B after MAP_DMA of %zu B, %lld before", vm_locked(),
		       self->size, locked0);
	unmap(_metadata, self, 0, self->size);
	trace(_metadata, self, "after UNMAP_DMA");
	expect_pins(_metadata, self, "after UNMAP_DMA", 0, 0, 0);
	EXPECT_EQ(locked0, vm_locked()) TH_LOG("VmLck after UNMAP_DMA");
	expect_free(_metadata, self, "after UNMAP_DMA", self->size);
	drop_file(self);
	trace(_metadata, self, "file removed");
	expect_free(_metadata, self, "file removed", 0);
}

/*
 * No table of the mount's files (mount -o remount,persist, for a kexec)
 * while a device pins one of its dpages: the IOMMU's mappings would not
 * survive the kexec.  Unmapped, it works; the next change of the files
 * (here the unlink) drops the table, whose page the instance keeps until
 * it is unmounted (so that no tenant is given a page a loaded kexec may
 * name); then the pool is exactly back.  On an instance of its own: a
 * persist of one the other tests share would hold that page for them.
 */
TEST_F_TIMEOUT(vfio_dmem, persist_refused_while_pinned, 300)
{
	char mnt[] = "/tmp/vfio-persist-XXXXXX";
	size_t off;

	drop_file(self);
	expect_free(_metadata, self, "the fixture's file removed", 0);
	ASSERT_NE(NULL, mkdtemp(mnt));
	ASSERT_EQ(0, mount("none", mnt, "dmemfs", 0, variant->opts))
		TH_LOG("mount -t dmemfs -o %s: %s", variant->opts, strerror(errno));
	snprintf(self->path, sizeof(self->path), "%s/persist", mnt);
	self->fd = open(self->path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ftruncate(self->fd, self->size));
	self->p = mmap(NULL, self->size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->p);
	for (off = 0; off < self->size; off += variant->ps)
		self->p[off] = 1;

	map_all(_metadata, self);
	EXPECT_EQ(-1, mount("none", mnt, NULL, MS_REMOUNT, "persist"))
		TH_LOG("persist of %s worked with %zu B pinned", mnt, self->size);
	EXPECT_EQ(EBUSY, errno) TH_LOG("persist while pinned: %s", strerror(errno));
	unmap(_metadata, self, 0, self->size);
	EXPECT_EQ(0, mount("none", mnt, NULL, MS_REMOUNT, "persist"))
		TH_LOG("persist after UNMAP_DMA: %s", strerror(errno));
	drop_file(self);
	expect_free(_metadata, self, "file removed, table dropped, its pages held", TABLE_MIN);
	EXPECT_EQ(0, umount(mnt)) TH_LOG("umount %s: %s", mnt, strerror(errno));
	rmdir(mnt);
	expect_free(_metadata, self, "unmounted", 0);
}

/*
 * MAP_DMA racing punches of the dpage it maps.  VFIO finds the range
 * unmapped, faults it in, and looks again; a punch in between must make it
 * retry, not fail the map with EFAULT.  Every map pins what it found, the
 * punched dpages wait out of the pool for the unmap, and at the end nothing
 * is pinned and the pool holds exactly what the file still has.
 */
TEST_F_TIMEOUT(vfio_dmem, punch_race, 300)
{
	struct puncher p = { .fd = self->fd, .len = 1UL << (self->order + 12) };
	long maps = 0;
	pthread_t t;
	time_t end;
	struct stat st;
	int r = 0;

	ASSERT_EQ(0, pthread_create(&t, NULL, punch_loop, &p));
	end = time(NULL) + 5;
	while (time(NULL) < end) {
		r = dma_map(&self->v, self->p, IOVA_BASE, p.len);
		if (r)
			break;
		if (dma_unmap(&self->v, IOVA_BASE, p.len) != (int64_t)p.len) {
			r = -EIO;
			break;
		}
		maps++;
	}
	p.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("%ld MAP_DMA + UNMAP_DMA of the first %zu KiB against %ld punches", maps,
	       p.len >> 10, p.punches);
	ASSERT_EQ(0, r) TH_LOG("MAP_DMA %ld: %s", maps + 1, strerror(-r));
	ASSERT_EQ(0, p.err) TH_LOG("punch hole: %s", strerror(p.err));
	ASSERT_LT(0, p.punches);
	trace(_metadata, self, "after the race");
	expect_pins(_metadata, self, "after the race", 0, 0, 0);
	ASSERT_EQ(0, fstat(self->fd, &st));
	expect_free(_metadata, self, "after the race", (uint64_t)st.st_blocks * 512);
	drop_file(self);
	expect_free(_metadata, self, "file removed", 0);
}

/*
 * Without CAP_IPC_LOCK, MAP_DMA of dmem is held to RLIMIT_MEMLOCK, as QEMU
 * is under libvirt: refused (ENOMEM, nothing left pinned) below the
 * mapping's size, taken at it.  In a child, whose mm the mapping charges.
 */
TEST_F_TIMEOUT(vfio_dmem, memlock_limit, 300)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct cap[2];
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = self->size / 2, .rlim_max = RLIM_INFINITY };
		int r;

		/* fork does not copy a dmemfs mapping: map the file here */
		self->p = mmap(NULL, self->size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
		if (self->p == MAP_FAILED)
			_exit(19);
		if (syscall(SYS_capget, &hdr, cap))
			_exit(10);
		cap[CAP_IPC_LOCK / 32].effective &= ~(1U << (CAP_IPC_LOCK % 32));
		if (syscall(SYS_capset, &hdr, cap) || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(11);
		r = dma_map(&self->v, self->p, IOVA_BASE, self->size);
		if (r != -ENOMEM)
			fprintf(stderr, "# memlock_limit child: MAP_DMA of %zu B under RLIMIT_MEMLOCK %zu B: %s\n",
				self->size, self->size / 2, strerror(-r));
		if (r != -ENOMEM)
			_exit(r ? 12 : 13);	/* 13: mapped past the limit */
		if (vm_locked() != 0 || read_stats(&self->base) || self->base.pinned_all)
			_exit(14);		/* something stayed pinned */
		rl.rlim_cur = self->size;
		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(11);
		if (dma_map(&self->v, self->p, IOVA_BASE, self->size))
			_exit(15);
		if (vm_locked() != (long long)self->size)
			_exit(16);
		if (dma_unmap(&self->v, IOVA_BASE, self->size) != (int64_t)self->size)
			_exit(17);
		_exit(vm_locked() == 0 ? 0 : 18);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child died of signal %d", WTERMSIG(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child: 19 mmap, 10/11 capabilities or rlimit, 12 MAP_DMA failed otherwise, 13 MAP_DMA past RLIMIT_MEMLOCK, 14 pins left after the refusal, 15 MAP_DMA at the limit failed, 16 VmLck wrong, 17 UNMAP_DMA, 18 VmLck after unmap");
	expect_pins(_metadata, self, "after the child", 0, 0, 0);
}

/* Two MAP_DMA of half each (type1v2 does not split a mapping), unmap one. */
TEST_F_TIMEOUT(vfio_dmem, unmap_half, 300)
{
	uint64_t half = self->size / 2;
	int r;

	r = dma_map(&self->v, self->p, IOVA_BASE, half);
	ASSERT_EQ(0, r) TH_LOG("MAP_DMA first half: %s", strerror(-r));
	r = dma_map(&self->v, self->p + half, IOVA_BASE + half, half);
	ASSERT_EQ(0, r) TH_LOG("MAP_DMA second half: %s", strerror(-r));
	trace(_metadata, self, "after 2 x MAP_DMA");
	expect_pins(_metadata, self, "after 2 x MAP_DMA", self->size, 0, 1);
	unmap(_metadata, self, half, half);
	trace(_metadata, self, "after UNMAP_DMA 2nd half");
	expect_pins(_metadata, self, "after UNMAP_DMA of the second half", half, 0, 0);
	expect_free(_metadata, self, "after UNMAP_DMA of the second half", self->size);
	unmap(_metadata, self, 0, half);
	trace(_metadata, self, "after UNMAP_DMA 1st half");
	expect_pins(_metadata, self, "after UNMAP_DMA of both halves", 0, 0, 0);
	drop_file(self);
	expect_free(_metadata, self, "file removed", 0);
}

/* Truncate while pinned: the dpages stay used (orphaned) until UNMAP_DMA. */
TEST_F_TIMEOUT(vfio_dmem, truncate_pinned, 300)
{
	map_all(_metadata, self);
	trace(_metadata, self, "after MAP_DMA");
	ASSERT_EQ(0, ftruncate(self->fd, 0));
	trace(_metadata, self, "after ftruncate(0)");
	expect_free(_metadata, self, "truncated while pinned", self->size);
	expect_pins(_metadata, self, "truncated while pinned", self->size, self->size >> (self->order + 12), 1);
	unmap(_metadata, self, 0, self->size);
	trace(_metadata, self, "after UNMAP_DMA");
	expect_pins(_metadata, self, "after UNMAP_DMA", 0, 0, 0);
	expect_free(_metadata, self, "after UNMAP_DMA of the truncated file", 0);
	drop_file(self);
	expect_free(_metadata, self, "file removed", 0);
}

/* Unlink (and unmap, close) while pinned: only the pins keep the dpages. */
TEST_F_TIMEOUT(vfio_dmem, unlink_pinned, 300)
{
	map_all(_metadata, self);
	trace(_metadata, self, "after MAP_DMA");
	drop_file(self);
	trace(_metadata, self, "after munmap+close+unlink");
	expect_free(_metadata, self, "unlinked while pinned", self->size);
	expect_pins(_metadata, self, "unlinked while pinned", self->size, self->size >> (self->order + 12), 1);
	unmap(_metadata, self, 0, self->size);
	trace(_metadata, self, "after UNMAP_DMA");
	expect_pins(_metadata, self, "after UNMAP_DMA", 0, 0, 0);
	expect_free(_metadata, self, "after UNMAP_DMA of the unlinked file", 0);
}

/* Closing the container (and group) without UNMAP_DMA drops every pin. */
TEST_F_TIMEOUT(vfio_dmem, close_container, 300)
{
	map_all(_metadata, self);
	trace(_metadata, self, "after MAP_DMA");
	vfio_close(&self->v);
	trace(_metadata, self, "after close(container)");
	expect_pins(_metadata, self, "container closed", 0, 0, 0);
	expect_free(_metadata, self, "container closed", self->size);
	drop_file(self);
	expect_free(_metadata, self, "file removed", 0);
}

/* The same with the file already gone: the close frees the orphans. */
TEST_F_TIMEOUT(vfio_dmem, close_container_orphaned, 300)
{
	map_all(_metadata, self);
	drop_file(self);
	trace(_metadata, self, "after unlink, pinned");
	expect_free(_metadata, self, "unlinked while pinned", self->size);
	vfio_close(&self->v);
	trace(_metadata, self, "after close(container)");
	expect_pins(_metadata, self, "container closed", 0, 0, 0);
	expect_free(_metadata, self, "container closed with the file gone", 0);
}

/*
 * size= holds for dpages a device still pins after the file let go of
 * them: they are out of the pool until the last unpin.  On an instance of
 * two dpages, map a dpage into the IOMMU at a new IOVA and punch it out of
 * the file, again and again: the second orphan must leave no room for a
 * new dpage (before the fix the pool lost one dpage per turn), remount
 * cannot go below what the orphans hold, and UNMAP_DMA gives the room
 * back.  Then the same orphan outlives the unmount, and its unpin gives
 * the pool back whole (KASAN: the count it holds is freed once).
 */
TEST_F_TIMEOUT(vfio_dmem, orphans_count_against_size, 300)
{
	char mnt[] = "/tmp/vfio-size-XXXXXX", opts[96], path[64];
	size_t ps = variant->ps;
	int fd, k, err = 0;
	char *p;

	drop_file(self);
	ASSERT_NE(NULL, mkdtemp(mnt));
	snprintf(opts, sizeof(opts), "%s,size=%zu", variant->opts, 2 * ps);
	ASSERT_EQ(0, mount("none", mnt, "dmemfs", 0, opts)) TH_LOG("mount -o %s: %s", opts, strerror(errno));
	snprintf(path, sizeof(path), "%s/f", mnt);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, ps));
	p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, fallocate(fd, 0, 0, ps));
	for (k = 0; k < 2; k++) {
		p[0] = 1;
		ASSERT_EQ(0, dma_map(&self->v, p, IOVA_BASE + k * ps, ps)) TH_LOG("MAP_DMA %d", k);
		ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, ps));
		err = fallocate(fd, 0, 0, ps) ? errno : 0;
		TH_LOG("orphan %d: a new dpage in the file: %s", k + 1, err ? strerror(err) : "yes");
		if (k == 0)
			ASSERT_EQ(0, err) TH_LOG("one orphan and no file dpage: room for one");
	}
	EXPECT_EQ(ENOSPC, err) TH_LOG("two orphans on size=2 dpages, and still a third dpage");
	expect_pins(_metadata, self, "two orphans", 2 * ps, 2, 0);
	snprintf(opts, sizeof(opts), "size=%zu", ps);
	EXPECT_EQ(-1, mount("none", mnt, NULL, MS_REMOUNT, opts)) TH_LOG("remount below what orphans hold");
	unmap(_metadata, self, 0, ps);
	unmap(_metadata, self, ps, ps);
	EXPECT_EQ(0, fallocate(fd, 0, 0, ps)) TH_LOG("after UNMAP_DMA: %s", strerror(errno));
	EXPECT_EQ(0, fallocate(fd, 0, ps, ps)) TH_LOG("the second dpage after UNMAP_DMA: %s", strerror(errno));
	expect_free(_metadata, self, "the file holds its two dpages", 2 * ps);

	/* an orphan that outlives its instance */
	ASSERT_EQ(0, dma_map(&self->v, p, IOVA_BASE, ps));
	munmap(p, ps);
	close(fd);
	unlink(path);
	EXPECT_EQ(0, umount(mnt)) TH_LOG("umount with an orphan: %s", strerror(errno));
	rmdir(mnt);
	expect_free(_metadata, self, "unmounted, one orphan", ps);
	unmap(_metadata, self, 0, ps);
	expect_pins(_metadata, self, "unpinned", 0, 0, 0);
	expect_free(_metadata, self, "the last unpin", 0);
}

/* nr_foll_pin_{acquired,released} of /proc/vmstat, per-cpu deltas folded in. */
static int foll_pins(uint64_t *acquired, uint64_t *released)
{
	char name[64];
	unsigned long long v;
	int fd, found = 0;
	FILE *f;

	fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	f = fopen("/proc/vmstat", "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %llu", name, &v) == 2) {
		if (!strcmp(name, "nr_foll_pin_acquired"))
			*acquired = v, found++;
		else if (!strcmp(name, "nr_foll_pin_released"))
			*released = v, found++;
	}
	fclose(f);
	return found == 2 ? 0 : -1;
}

/*
 * MAP_DMA of a VM_PFNMAP mapping of ordinary RAM is refused with EFAULT, as
 * before dmem, and unpins nothing, since nothing was pinned.  The mapping:
 * a dma-buf of the system heap, whose buddy pages 6.1 maps with remap_pfn_range().
 * An unpin there would drop a reference of the page that VFIO never took;
 * the FOLL_PIN counters of /proc/vmstat tell.
 */
TEST(pfnmap_of_ram_refused_without_unpin)
{
	struct vfio_iommu_type1_dma_map m = {
		.argsz = sizeof(m), .flags = VFIO_DMA_MAP_FLAG_READ,
		.iova = IOVA_BASE, .size = SZ_4K,
	};
	/* a dma-buf of the system heap: buddy pages mapped with remap_pfn_range() */
	struct dma_heap_allocation_data a = {
		.len = SZ_4K, .fd_flags = O_RDWR | O_CLOEXEC,
	};
	const char *heap = "/dev/dma_heap/system";
	uint64_t acq0, rel0, acq1, rel1;
	char why[256];
	struct vfio v;
	int hfd, fd, r;
	void *p;

	hfd = open(heap, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, hfd) TH_LOG("%s: %s (CONFIG_DMABUF_HEAPS_SYSTEM?)", heap, strerror(errno));
	ASSERT_EQ(0, ioctl(hfd, DMA_HEAP_IOCTL_ALLOC, &a)) TH_LOG("DMA_HEAP_IOCTL_ALLOC: %s",
								   strerror(errno));
	close(hfd);
	fd = a.fd;
	p = mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap of a system-heap dma-buf: %s", strerror(errno));
	ASSERT_EQ(0, vfio_open(&v, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, foll_pins(&acq0, &rel0)) TH_LOG("no FOLL_PIN counters in /proc/vmstat");
	m.vaddr = (uintptr_t)p;
	r = ioctl(v.container, VFIO_IOMMU_MAP_DMA, &m) ? -errno : 0;
	ASSERT_EQ(0, foll_pins(&acq1, &rel1));
	EXPECT_EQ(-EFAULT, r) TH_LOG("MAP_DMA of a system-heap dma-buf: %s", strerror(-r));
	TH_LOG("FOLL_PIN across MAP_DMA: acquired +%llu, released +%llu",
	       (unsigned long long)(acq1 - acq0), (unsigned long long)(rel1 - rel0));
	EXPECT_EQ(acq1 - acq0, rel1 - rel0) TH_LOG("VFIO released a pin it never took");
	if (!r)
		dma_unmap(&v, IOVA_BASE, SZ_4K);
	vfio_close(&v);
	munmap(p, SZ_4K);
	close(fd);
}

/* ---- --bench: MAP_DMA + UNMAP_DMA time per backing */

static uint64_t ns_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

struct bench_opts {
	size_t mib;
	int reps;
	const char *dmem2m, *dmem1g, *huge2m, *huge1g;
};

enum bkind { B_FILE, B_ANON_4K, B_ANON_THP };

static void bench_one(struct vfio *v, const struct bench_opts *o, const char *name,
		      const char *backing, const char *psz, enum bkind kind, const char *dir)
{
	size_t size = o->mib << 20, ps = 4096, off;
	char path[PATH_MAX] = "";
	uint64_t t0, t1, t2;
	struct dstats s;
	int fd = -1, r, rep;
	int64_t u;
	char *p;

	if (kind == B_FILE) {
		if (!dir || !*dir) {
			printf("VFIOSKIP variant=%s reason=no_mount\n", name);
			return;
		}
		snprintf(path, sizeof(path), "%s/vfio-bench-%d", dir, getpid());
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, size)) {
			printf("VFIOSKIP variant=%s reason=create:%s\n", name, strerror(errno));
			goto out;
		}
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
		ps = !strcmp(psz, "1G") ? SZ_1G : !strcmp(psz, "2M") ? SZ_2M : SZ_4K;
	} else {
		/* THP wants a 2M-aligned start: over-allocate and trim. */
		p = mmap(NULL, size + SZ_2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED) {
			char *a = (char *)(((uintptr_t)p + SZ_2M - 1) & ~(SZ_2M - 1));

			if (a > p)
				munmap(p, a - p);
			munmap(a + size, p + SZ_2M - a);
			p = a;
			madvise(p, size, kind == B_ANON_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		}
	}
	if (p == MAP_FAILED) {
		printf("VFIOSKIP variant=%s reason=mmap:%s\n", name, strerror(errno));
		goto out;
	}
	for (off = 0; off < size; off += ps)	/* populate (MAP_POPULATE for files) */
		p[off] = 1;
	for (rep = 1; rep <= o->reps; rep++) {
		t0 = ns_now();
		r = dma_map(v, p, IOVA_BASE, size);
		t1 = ns_now();
		if (r) {
			printf("VFIOSKIP variant=%s reason=MAP_DMA:%s\n", name, strerror(-r));
			break;
		}
		read_stats(&s);
		t2 = ns_now();
		u = dma_unmap(v, IOVA_BASE, size);
		t2 = ns_now() - t2;
		if (u != (int64_t)size) {
			printf("VFIOSKIP variant=%s reason=UNMAP_DMA:%lld\n", name, (long long)u);
			break;
		}
		printf("VFIOBENCH variant=%s backing=%s pagesize=%s mib=%zu rep=%d map_ns=%llu unmap_ns=%llu pinned_bytes=%llu\n",
		       name, backing, psz, o->mib, rep, (unsigned long long)(t1 - t0),
		       (unsigned long long)t2, s.have_pinned ? (unsigned long long)s.pinned_all : 0ULL);
		fflush(stdout);
	}
	munmap(p, size);
out:
	if (fd >= 0)
		close(fd);
	if (path[0])
		unlink(path);
}

static int bench(int argc, char **argv)
{
	struct bench_opts o = { .mib = 1024, .reps = 3 };
	char why[256];
	struct vfio v;
	int i;

	for (i = 2; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val) {
			fprintf(stderr, "vfio_dmem_test: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--mib"))
			o.mib = strtoul(val, NULL, 0);
		else if (!strcmp(a, "--reps"))
			o.reps = atoi(val);
		else if (!strcmp(a, "--dmem-2M"))
			o.dmem2m = val;
		else if (!strcmp(a, "--dmem-1G"))
			o.dmem1g = val;
		else if (!strcmp(a, "--huge-2M"))
			o.huge2m = val;
		else if (!strcmp(a, "--huge-1G"))
			o.huge1g = val;
		else {
			fprintf(stderr, "vfio_dmem_test: unknown option %s\n", a);
			return 2;
		}
	}
	if (vfio_open(&v, why, sizeof(why))) {
		printf("VFIOSKIP variant=all reason=%s\n", why);
		return 1;
	}
	printf("# vfio bench: device %s, group %s, %zu MiB, %d rounds\n", v.bdf, v.grp, o.mib, o.reps);
	fflush(stdout);
	bench_one(&v, &o, "dmem-2M", "dmemfs", "2M", B_FILE, o.dmem2m);
	bench_one(&v, &o, "dmem-1G", "dmemfs", "1G", B_FILE, o.dmem1g);
	bench_one(&v, &o, "anon-4K", "anon", "4K", B_ANON_4K, NULL);
	bench_one(&v, &o, "anon-THP", "anon", "2M", B_ANON_THP, NULL);
	bench_one(&v, &o, "hugetlb-2M", "hugetlbfs", "2M", B_FILE, o.huge2m);
	bench_one(&v, &o, "hugetlb-1G", "hugetlbfs", "1G", B_FILE, o.huge1g);
	vfio_close(&v);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return harness_list_tests();
	if (argc > 1 && !strcmp(argv[1], "--bench"))
		return bench(argc, argv);
	harness_filter_env();
	return test_harness_run(argc, argv);
}
