// SPDX-License-Identifier: GPL-2.0
/*
 * dmem-bench: populate benchmark of dmemfs against hugetlbfs, anonymous THP
 * and memfd (shmem), and a measurement of hugetlb's vmemmap optimisation
 * (HVO).  Runs inside L1 (nested-test/l1/bench/l1-bench.sh); prints machine-readable lines
 * on stdout that bench/report.sh turns into the report.  Not a test: it
 * measures and never judges.
 *
 *   dmem-bench [--mib N] [--reps R] [--budget S] [--dmem4k DIR]
 *              [--dmem2m DIR] [--dmem1g DIR] [--huge2m DIR] [--huge1g DIR]
 *       time every variant R times (round robin), N MiB each; stop
 *       starting new rounds after S seconds (one round always completes)
 *   dmem-bench --hvo [--mib N] [--reps R]
 *       allocate N MiB of 2M and of 1G hugetlb pages R times each with
 *       vm.hugetlb_optimize_vmemmap off, then once with it on (those stay
 *       in the pool); report MemFree/MemTotal deltas (the vmemmap HVO
 *       gives back)
 *   dmem-bench --list
 *       the variant names
 *
 * Output (one line each):
 *   BENCH variant=V backing=B pagesize=P method=M mib=N rep=R ns=T
 *         after_ns=T release_ns=T pt_kb=K slab_kb=K free_kb=K anonhuge_kb=K
 *         dmem_used_kb=K
 *   SKIP variant=V reason=WORDS
 *   HVO size=2M|1G hvo=0|1 pages=N want=N free_drop_kb=K total_rise_kb=K
 *   HVOSKIP size=2M|1G reason=WORDS
 *   ZERORATE mib=N memset_ns=T zeroer_ns=T dirty_left=B
 *         (background zeroers against memset, with --dmem2m)
 *
 * dmem variants start from a pool that the background zeroers cleaned;
 * *-zeroing-off variants run with /sys/kernel/mm/dmem/background_zeroing=0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif

#define MIB (1UL << 20)
#define TOUCH_STRIDE 4096UL

enum kind { DMEM4K, DMEM2M, DMEM1G, HUGE2M, HUGE1G, THP, MEMFD, NKINDS };
enum method { TOUCH, POPULATE, FALLOCATE };

static const struct {
	const char *name, *backing, *pagesize;
} kinds[NKINDS] = {
	[DMEM4K] = { "dmem-4K", "dmemfs", "4K" },
	[DMEM2M] = { "dmem-2M", "dmemfs", "2M" },
	[DMEM1G] = { "dmem-1G", "dmemfs", "1G" },
	[HUGE2M] = { "hugetlb-2M", "hugetlbfs", "2M" },
	[HUGE1G] = { "hugetlb-1G", "hugetlbfs", "1G" },
	[THP] = { "thp", "anon-THP", "2M" },
	[MEMFD] = { "memfd", "shmem", "4K" },
};
static const char *const methods[] = { "touch", "populate", "fallocate" };

/*
 * dmem runs start from a pool the background zeroers have cleaned, as on a
 * host with some idle time; the zeroing_off ones turn background zeroing
 * off for the run, so that every allocation zeroes (the allocator as it
 * was before).
 */
static const struct variant {
	enum kind kind;
	enum method method;
	int zeroing_off;
} variants[] = {
	{ DMEM4K, TOUCH, 0 }, { DMEM4K, POPULATE, 0 }, { DMEM4K, FALLOCATE, 0 },
	{ DMEM2M, TOUCH, 0 }, { DMEM2M, POPULATE, 0 }, { DMEM2M, FALLOCATE, 0 },
	{ DMEM1G, TOUCH, 0 }, { DMEM1G, POPULATE, 0 }, { DMEM1G, FALLOCATE, 0 },
	{ DMEM2M, POPULATE, 1 }, { DMEM2M, FALLOCATE, 1 }, { DMEM1G, FALLOCATE, 1 },
	{ HUGE2M, TOUCH, 0 }, { HUGE2M, POPULATE, 0 },
	{ HUGE1G, TOUCH, 0 }, { HUGE1G, POPULATE, 0 },
	{ THP, TOUCH, 0 },	   { THP, POPULATE, 0 },
	{ MEMFD, TOUCH, 0 },  { MEMFD, POPULATE, 0 },
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

static const char *dirs[NKINDS];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A /proc/meminfo field in kB, -1 if absent. */
static long meminfo(const char *field)
{
	char line[256];
	size_t n = strlen(field);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static long read_long(const char *path)
{
	char buf[64];
	long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%ld\n", v) > 0;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* WHAT_bytes of dmem summed over all nodes; -1 when no node has the file. */
static long dmem_sum(const char *what)
{
	char path[96];
	long t = -1, v;

	for (int n = 0; n < 64; n++) {
		snprintf(path, sizeof(path), "/sys/kernel/mm/dmem/node%d/%s_bytes", n, what);
		v = read_long(path);
		if (v >= 0)
			t = (t < 0 ? 0 : t) + v;
	}
	return t;
}

/* dmem in use on all nodes, kB (0 without dmem). */
static long dmem_used_kb(void)
{
	long used = dmem_sum("used");

	return used > 0 ? used >> 10 : 0;
}

struct snap {
	long pt, slab, free, anonhuge, dmem;
};

static void snapshot(struct snap *s)
{
	s->pt = meminfo("PageTables");
	s->slab = meminfo("SUnreclaim");
	s->free = meminfo("MemFree");
	s->anonhuge = meminfo("AnonHugePages");
	s->dmem = dmem_used_kb();
}

/* A pool that runs dry mid-run raises SIGBUS: turn it into a SKIP. */
static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(bus_jmp, sig);
}

static void touch(char *p, size_t len)
{
	for (size_t off = 0; off < len; off += TOUCH_STRIDE)
		((volatile char *)p)[off] = 1;
}

#define ZEROING "/sys/kernel/mm/dmem/background_zeroing"

static const char *zsuffix(const struct variant *v)
{
	return v->zeroing_off ? "-zeroing-off" : "";
}

/* dirty (not yet zeroed) free dmem on all nodes, bytes; -1 without the file */
static long dmem_dirty(void)
{
	return dmem_sum("dirty");
}

/* Wait up to @secs for the zeroers to clean the pool; ns waited, or 0. */
static uint64_t wait_clean(int secs)
{
	uint64_t t0 = now_ns();

	while (dmem_dirty() > 0 && now_ns() - t0 < (uint64_t)secs * 1000000000ULL)
		usleep(1000);
	return dmem_dirty() > 0 ? 0 : now_ns() - t0;
}

static void skip(const struct variant *v, const char *why)
{
	printf("SKIP variant=%s-%s%s reason=%s\n", kinds[v->kind].name, methods[v->method],
	       zsuffix(v), why);
	fflush(stdout);
}

/*
 * Populate LEN bytes at P (file FD) by METHOD; the time in *NS, and for
 * fallocate the faults that then map it in *AFTER_NS.  -1 with WHY set on
 * failure, SIGBUS included.
 */
static int populate(enum method m, int fd, char *p, size_t len, uint64_t *ns, uint64_t *after_ns,
		    char *why, size_t whylen)
{
	int err = 0;

	if (sigsetjmp(bus_jmp, 1)) {
		snprintf(why, whylen, "SIGBUS(pool-empty)");
		return -1;
	}
	*ns = now_ns();
	switch (m) {
	case TOUCH:
		touch(p, len);
		break;
	case POPULATE:
		err = madvise(p, len, MADV_POPULATE_WRITE);
		break;
	case FALLOCATE:
		err = fallocate(fd, 0, 0, (off_t)len);
		break;
	}
	if (err) {
		snprintf(why, whylen, "%s:%s", m == POPULATE ? "MADV_POPULATE_WRITE" : "fallocate",
			 strerror(errno));
		return -1;
	}
	*ns = now_ns() - *ns;
	if (m == FALLOCATE) {
		*after_ns = now_ns();
		touch(p, len);
		*after_ns = now_ns() - *after_ns;
	}
	return 0;
}

/*
 * One run: map LEN bytes of the variant's memory, populate them the
 * variant's way, read the counters while populated, release.  Returns 0,
 * or -1 after printing a SKIP line.
 */
static int run_one(const struct variant *v, size_t len, int rep)
{
	char path[512] = "", why[160];
	int fd = -1;
	char *p, *map;
	size_t maplen = len;
	uint64_t ns = 0, after_ns = 0, t3, t4;
	struct snap a, b;
	enum kind k = v->kind;

	if (k == THP) {
		/* 6.1 does not align anonymous mappings to 2M: do it here. */
		maplen = len + (2 * MIB);
		map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (map == MAP_FAILED) {
			snprintf(why, sizeof(why), "mmap:%s", strerror(errno));
			skip(v, why);
			return -1;
		}
		p = (char *)(((uintptr_t)map + 2 * MIB - 1) & ~(2 * MIB - 1));
		madvise(p, len, MADV_HUGEPAGE);
	} else {
		if (k == MEMFD) {
			fd = memfd_create("dmem-bench", 0);
		} else {
			if (!dirs[k]) {
				skip(v, "not-mounted");
				return -1;
			}
			snprintf(path, sizeof(path), "%s/dmem-bench.%d", dirs[k], (int)getpid());
			fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		}
		/* hugetlbfs files are whole pages: round a smaller run up. */
		if (k == HUGE1G || k == HUGE2M)
			maplen = (len + (k == HUGE1G ? 1024 : 2) * MIB - 1) &
				 ~((k == HUGE1G ? 1024 : 2) * MIB - 1);
		if (fd < 0 || ftruncate(fd, (off_t)maplen)) {
			snprintf(why, sizeof(why), "open/ftruncate:%s", strerror(errno));
			goto fail;
		}
		map = p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			snprintf(why, sizeof(why), "mmap:%s", strerror(errno));
			goto fail;
		}
	}
	if (v->zeroing_off && write_long(ZEROING, 0)) {
		snprintf(why, sizeof(why), "no-" ZEROING);
		munmap(map, maplen);
		goto fail;
	}
	if (k <= DMEM1G && !v->zeroing_off)
		wait_clean(120);
	snapshot(&a);
	if (populate(v->method, fd, p, len, &ns, &after_ns, why, sizeof(why))) {
		munmap(map, maplen);
		if (v->zeroing_off)
			write_long(ZEROING, 1);
		goto fail;
	}
	snapshot(&b);
	if (v->zeroing_off)
		write_long(ZEROING, 1);
	t3 = now_ns();
	munmap(map, maplen);
	if (fd >= 0)
		close(fd);
	if (path[0])
		unlink(path);
	t4 = now_ns();
	printf("BENCH variant=%s-%s%s backing=%s pagesize=%s method=%s mib=%zu rep=%d ns=%llu "
	       "after_ns=%llu release_ns=%llu pt_kb=%ld slab_kb=%ld free_kb=%ld anonhuge_kb=%ld "
	       "dmem_used_kb=%ld\n",
	       kinds[k].name, methods[v->method], zsuffix(v), kinds[k].backing, kinds[k].pagesize,
	       methods[v->method], len / MIB, rep, (unsigned long long)ns,
	       (unsigned long long)after_ns, (unsigned long long)(t4 - t3),
	       b.pt - a.pt, b.slab - a.slab, a.free - b.free, b.anonhuge - a.anonhuge,
	       b.dmem - a.dmem);
	fflush(stdout);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (path[0])
		unlink(path);
	skip(v, why);
	return -1;
}

static void drop_caches(void)
{
	sync();
	write_long("/proc/sys/vm/drop_caches", 3);
}

/* Wait (up to 10 s) until MemFree stops moving: hugetlb frees HVO pages from a workqueue. */
static void settle(void)
{
	long prev = -1, cur;

	for (int i = 0; i < 50; i++) {
		drop_caches();
		usleep(200000);
		cur = meminfo("MemFree");
		if (prev >= 0 && labs(cur - prev) <= 256)
			return;
		prev = cur;
	}
}

/*
 * HVO: allocate MIB worth of SIZE_KB hugetlb pages at run time, REPS times
 * with vm.hugetlb_optimize_vmemmap off (freeing them after each), then once
 * with it on, and print what MemFree lost and MemTotal gained.  Without HVO
 * MemFree drops by exactly the pages; with it, by the pages less the vmemmap
 * handed back.  Pool pages the boot made are freed first, so that their
 * (1G-aligned) ranges are free for the run-time allocation.
 *
 * The pages allocated with HVO on stay in the pool: nothing here frees an
 * optimised page.  Freeing an optimised 2M page prints "BUG: Bad page state
 * ... corrupted mapping in tail page" (update_and_free_pages_bulk) on Debian's
 * 6.12.118 in our L1, with and without the dmem series, and the bench then
 * runs out of memory.  l1-bench.sh runs this last, when no later step shrinks
 * a pool.
 */
static void hvo(const char *size, long size_kb, size_t mib, long reps)
{
	char nr_path[128];
	const char *sysctl = "/proc/sys/vm/hugetlb_optimize_vmemmap";
	long want = (long)(mib * 1024 / (size_t)size_kb), n0, base, got, orig;

	if (want < 1)
		want = 1;
	snprintf(nr_path, sizeof(nr_path), "/sys/kernel/mm/hugepages/hugepages-%ldkB/nr_hugepages",
		 size_kb);
	n0 = read_long(nr_path);
	orig = read_long(sysctl);
	if (n0 < 0 || orig < 0) {
		printf("HVOSKIP size=%s reason=%s\n", size, n0 < 0 ? "no-hstate" : "no-sysctl");
		return;
	}
	base = n0 > want ? n0 - want : 0;
	write_long(nr_path, base);
	for (long i = 0; i <= reps; i++) {
		int on = i == reps;
		long free0, total0;

		if (write_long(sysctl, on)) {
			printf("HVOSKIP size=%s reason=sysctl-write:%s\n", size, strerror(errno));
			break;
		}
		settle();
		free0 = meminfo("MemFree");
		total0 = meminfo("MemTotal");
		write_long(nr_path, base + want);
		got = read_long(nr_path) - base;
		usleep(200000);
		printf("HVO size=%s hvo=%d pages=%ld want=%ld free_drop_kb=%ld total_rise_kb=%ld\n", size,
		       on, got, want, free0 - meminfo("MemFree"), meminfo("MemTotal") - total0);
		fflush(stdout);
		if (!on)
			write_long(nr_path, base);
	}
	write_long(sysctl, orig);
	settle();
	/* grow back to what the boot made; never shrink past an optimised page */
	if (read_long(nr_path) < n0)
		write_long(nr_path, n0);
}

static void usage(void)
{
	fprintf(stderr, "usage: dmem-bench [--mib N] [--reps R] [--budget S] [--dmem4k DIR] [--dmem2m DIR]\n"
			"                  [--dmem1g DIR] [--huge2m DIR] [--huge1g DIR]\n"
			"       dmem-bench --hvo [--mib N] [--reps R]\n"
			"       dmem-bench --list\n");
	exit(2);
}

/*
 * The background zeroers' rate against a plain memset of the same size:
 * write @len bytes of a 2M dmem file (timed: memset), free them, and time
 * until no node has dirty free dmem.  One line:
 *   ZERORATE mib=N memset_ns=T zeroer_ns=T
 */
static void zero_rate(size_t len)
{
	char path[512];
	uint64_t t0, t1, t2;
	char *p;
	int fd;

	if (!wait_clean(120)) {
		printf("ZEROSKIP reason=pool-not-clean-after-120s\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/zero-rate.%d", dirs[DMEM2M], (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)len) || fallocate(fd, 0, 0, (off_t)len)) {
		printf("ZEROSKIP reason=fallocate:%s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(path);
		return;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		printf("ZEROSKIP reason=mmap:%s\n", strerror(errno));
		close(fd);
		unlink(path);
		return;
	}
	t0 = now_ns();
	memset(p, 0xa5, len);
	t1 = now_ns();
	munmap(p, len);
	close(fd);
	unlink(path);
	t2 = now_ns();
	while (dmem_dirty() > 0 && now_ns() - t2 < 300 * 1000000000ULL)
		usleep(200);
	printf("ZERORATE mib=%zu memset_ns=%llu zeroer_ns=%llu dirty_left=%ld\n", len / MIB,
	       (unsigned long long)(t1 - t0), (unsigned long long)(now_ns() - t2), dmem_dirty());
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t mib = 1024;
	long reps = 3, budget = 0;
	int do_hvo = 0;
	uint64_t start;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		static const char *const dir_opts[NKINDS] = {
			[DMEM4K] = "--dmem4k", [DMEM2M] = "--dmem2m", [DMEM1G] = "--dmem1g",
			[HUGE2M] = "--huge2m", [HUGE1G] = "--huge1g",
		};
		int k, used = 1;

		if (!strcmp(a, "--list")) {
			for (size_t v = 0; v < NVARIANTS; v++)
				printf("%s-%s%s\n", kinds[variants[v].kind].name,
				       methods[variants[v].method], zsuffix(&variants[v]));
			return 0;
		} else if (!strcmp(a, "--hvo")) {
			do_hvo = 1;
			used = 0;
		} else if (!val) {
			usage();
		} else if (!strcmp(a, "--mib")) {
			mib = strtoul(val, NULL, 10);
		} else if (!strcmp(a, "--reps")) {
			reps = strtol(val, NULL, 10);
		} else if (!strcmp(a, "--budget")) {
			budget = strtol(val, NULL, 10);
		} else {
			for (k = 0; k < NKINDS; k++)
				if (dir_opts[k] && !strcmp(a, dir_opts[k]))
					break;
			if (k == NKINDS)
				usage();
			dirs[k] = val;
		}
		i += used;
	}
	if (mib < 1 || reps < 1)
		usage();
	if (do_hvo) {
		hvo("2M", 2048, mib, reps);
		hvo("1G", 1048576, mib, reps);
		return 0;
	}
	signal(SIGBUS, on_sigbus);
	if (dirs[DMEM2M])
		zero_rate(mib * MIB);
	start = now_ns();
	for (long r = 0; r < reps; r++) {
		if (r && budget && (now_ns() - start) / 1000000000ULL >= (uint64_t)budget) {
			printf("# budget of %lds spent after %ld rounds\n", budget, r);
			break;
		}
		for (size_t v = 0; v < NVARIANTS; v++) {
			/* Unmounted backings are said once, not every round. */
			if (r && variants[v].kind != THP && variants[v].kind != MEMFD &&
			    !dirs[variants[v].kind])
				continue;
			run_one(&variants[v], mib * MIB, (int)r);
		}
	}
	return 0;
}
