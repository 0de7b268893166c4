// SPDX-License-Identifier: GPL-2.0
/*
 * dmemfs_stress: random operations of several tenants on one dmem pool,
 * inside L1, checked after every step.
 *
 * Each worker process is a tenant with dmemfs instances of its own (4K and
 * 2M dpages, worker 0 also 1G), each limited with size= so that all of
 * them fit in the pool together.  A worker runs a random sequence of
 * operations on two files per instance, drawn from its seed:
 *
 *   write / read   a tagged word at the start of a random 4 KiB page,
 *                  through a mapping (faults at 4K, 2M and 1G leaves)
 *   procmem        the same read through /proc/self/mem
 *   truncate       to a random, unaligned size
 *   punch          a random, unaligned hole
 *   fallocate      a random range, with or without KEEP_SIZE (ENOSPC at
 *                  the instance's limit is expected and checked)
 *   remap          munmap + mmap the file again
 *   recreate       unlink the file and create it again
 *   vfio           (worker 0, with the edu device on vfio-pci) MAP_DMA of
 *                  part of a 2M file, held over later steps, then UNMAP
 *   poison         (worker 1, once per seed) a memory error injected into
 *                  an allocated page through hwpoison/corrupt-pfn
 *
 * while a second thread of the worker faults random pages of the same
 * files and checks that what it reads is zero or the worker's own tag.
 *
 * Checked after every step: the page read holds exactly what the model of
 * the file says (zero for memory the file never wrote: a word of another
 * tenant there is a cross-tenant leak); the instance's statfs use equals
 * the dpages its files hold (st_blocks; FIEMAP shows as many extents),
 * plus those the VFIO map still pins after the files let them go;
 * no extent of any file covers the poisoned page except the dpage that
 * held it when it was hit.  The nodes' background zeroers clean freed
 * dpages meanwhile: the seed fails unless they ran batches and the
 * workers were handed dpages they had zeroed.  After each seed: every worker unmounted its
 * instances, the pool is back to where it started less the poisoned page,
 * and the kernel log has no warning.
 *
 *   dmemfs_stress [--seeds 1,2,3] [--seconds 40] [--workers 3]
 *                 [--no-vfio] [--no-poison]
 *
 * Output: "PASS: stress.seed-N: ..." or "FAIL: stress.seed-N: ..." per
 * seed, and for a failure the worker, step and operation, with the
 * command line that replays it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/vfio.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define SZ_4K		4096UL
#define SZ_2M		(2UL << 20)
#define SZ_1G		(1UL << 30)
#define INJECT		"/sys/kernel/debug/hwpoison/corrupt-pfn"
#define NFILES		2
#define MAX_INST	3
#define TAG_MAGIC	0xd5ULL
#define IOVA		(1ULL << 32)

static int opt_seconds = 40, opt_workers = 3, opt_vfio = 1, opt_poison = 1;

/* ---- pool statistics */

struct pool {
	uint64_t free, used, poisoned;
};

static int read_pool(struct pool *p)
{
	int64_t free = dmem_pool_sum("free"), used = dmem_pool_sum("used");
	int64_t poisoned = dmem_pool_sum("poisoned");

	memset(p, 0, sizeof(*p));
	if (free < 0)
		return -1;
	p->free = free;
	p->used = used > 0 ? used : 0;
	p->poisoned = poisoned > 0 ? poisoned : 0;
	return 0;
}

/* ---- a deterministic generator per worker (xorshift64*) */

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 0x2545f4914f6cdd1dULL;
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* ---- one worker's state */

struct file {
	char path[160];
	int fd;
	char *map;		/* maps max_size bytes */
	uint64_t size;		/* the model's i_size */
	uint64_t *word;		/* the model: first word of each 4K page */
	long poisoned_page;	/* page index with the memory error, or -1 */
};

struct inst {
	char dir[64];
	size_t ps;
	uint64_t max_size;	/* per file */
	uint64_t limit;		/* size= */
	struct file f[NFILES];
};

static struct inst inst[MAX_INST];
static int ninst, worker, seed;
static long step;
static const char *op = "setup";
/*
 * The reader thread holds it shared for each access; the main thread holds
 * it exclusively to replace a mapping and while it compares the files'
 * use with the instance's, which the reader's faults would change.
 * Truncate, punch and the rest race with the reader's faults on purpose.
 */
static pthread_rwlock_t maps_lock;
static volatile int stop_reader;
static uint64_t poisoned_pfn;	/* this worker's injected page, or 0 */

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("# worker %d seed %d step %ld op %s: %s\n", worker, seed, step, op, msg);
	printf("WORKER-FAIL %d: step %ld op %s: %s\n", worker, step, op, msg);
	fflush(stdout);
	_exit(1);
}

static uint64_t tag(void)
{
	static uint64_t n;

	return TAG_MAGIC << 56 | (uint64_t)worker << 48 | (uint64_t)(seed & 0xff) << 40 |
	       (++n & 0xffffffffffULL);
}

/* Whether a word read anywhere may be there: zero or this worker's. */
static int foreign(uint64_t v)
{
	return v && (v >> 56 != TAG_MAGIC || ((v >> 48) & 0xff) != (uint64_t)worker);
}

/* ---- SIGBUS-guarded access, per thread */

static __thread sigjmp_buf *bus_jmp;
static __thread volatile int bus_code;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	bus_code = si->si_code;
	if (bus_jmp)
		siglongjmp(*bus_jmp, 1);
	abort();
}

/*
 * Read the word at @p into *@v, or write *@v there: 0, or -1 with bus_code
 * set when that raised SIGBUS.
 */
static __attribute__((noinline)) int guarded(volatile uint64_t *p, uint64_t *v, int write)
{
	sigjmp_buf env;

	bus_code = 0;
	bus_jmp = &env;
	if (sigsetjmp(env, 1)) {
		bus_jmp = NULL;
		return -1;
	}
	if (write)
		*p = *v;
	else
		*v = *p;
	bus_jmp = NULL;
	return 0;
}

/* ---- accounting checks */

/* Extents (dpages) of @fd with FIEMAP; whether one covers @pfn in *@hit. */
static long extents(int fd, uint64_t pfn, uint64_t *hit_logical)
{
	enum { N = 256 };
	static uint64_t q_buf[(sizeof(struct fiemap) + N * sizeof(struct fiemap_extent)) / 8];
	struct fiemap *fm = (struct fiemap *)q_buf;
	uint64_t start = 0;
	long n = 0;
	int last = 0;

	*hit_logical = UINT64_MAX;
	while (!last) {
		unsigned int i;

		memset(fm, 0, sizeof(*fm));
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_extent_count = N;
		if (ioctl(fd, FS_IOC_FIEMAP, fm))
			return -1;
		if (!fm->fm_mapped_extents)
			break;
		for (i = 0; i < fm->fm_mapped_extents; i++) {
			struct fiemap_extent *e = &fm->fm_extents[i];

			if (pfn && pfn * SZ_4K >= e->fe_physical &&
			    pfn * SZ_4K < e->fe_physical + e->fe_length)
				*hit_logical = e->fe_logical + (pfn * SZ_4K - e->fe_physical);
			last = e->fe_flags & FIEMAP_EXTENT_LAST;
			start = e->fe_logical + e->fe_length;
			n++;
		}
	}
	return n;
}

/* worker 0's VFIO map: what it pins, held over later steps */
static struct vfio_state {
	int container, group, mapped;
	struct inst *in;
	struct file *f;
	uint64_t len;
	uint64_t pfn[4];	/* the first pfn of each pinned 2M dpage */
	int npfn;
} vf = { .container = -1, .group = -1 };

/*
 * Dpages of @in that the VFIO map pins but no file holds any more: they
 * stay out of the pool, and in the instance's size= count, until UNMAP.
 */
static uint64_t orphans(struct inst *in)
{
	uint64_t n = 0, hit;
	int k, i, held;

	if (!vf.mapped || vf.in != in)
		return 0;
	for (k = 0; k < vf.npfn; k++) {
		for (i = 0, held = 0; i < NFILES && !held; i++)
			held = extents(in->f[i].fd, vf.pfn[k], &hit) >= 0 && hit != UINT64_MAX;
		n += !held;
	}
	return n;
}

static void check_accounting(struct inst *in)
{
	uint64_t held = 0, hit;
	struct statfs sf;
	struct stat st;
	int i;

	for (i = 0; i < NFILES; i++) {
		struct file *f = &in->f[i];
		long n;

		if (fstat(f->fd, &st))
			die("fstat %s: %s", f->path, strerror(errno));
		if ((uint64_t)st.st_size != f->size)
			die("%s: i_size %lld, the model says %llu", f->path,
			    (long long)st.st_size, (unsigned long long)f->size);
		n = extents(f->fd, poisoned_pfn, &hit);
		if (n < 0)
			die("FIEMAP %s: %s", f->path, strerror(errno));
		if ((uint64_t)n * in->ps != (uint64_t)st.st_blocks * 512)
			die("%s: FIEMAP %ld dpages, st_blocks %lld", f->path, n, (long long)st.st_blocks);
		if (hit != UINT64_MAX && (f->poisoned_page < 0 ||
					  hit / SZ_4K != (uint64_t)f->poisoned_page))
			die("%s: the poisoned pfn %#llx is mapped at offset %#llx", f->path,
			    (unsigned long long)poisoned_pfn, (unsigned long long)hit);
		held += st.st_blocks * 512ULL;
	}
	if (statfs(in->dir, &sf))
		die("statfs %s: %s", in->dir, strerror(errno));
	/* what a device pinned after the files let it go counts too */
	if ((uint64_t)(sf.f_blocks - sf.f_bfree) * in->ps != held + orphans(in) * in->ps)
		die("%s: statfs uses %llu dpages, the files hold %llu B, the VFIO map %llu orphans",
		    in->dir, (unsigned long long)(sf.f_blocks - sf.f_bfree),
		    (unsigned long long)held, (unsigned long long)orphans(in));
}

/* ---- the model */

/* Zero the bytes [@lo, @hi) of the file in the model (first words only). */
static void model_zero(struct file *f, uint64_t lo, uint64_t hi)
{
	uint64_t pg;

	for (pg = lo / SZ_4K; pg * SZ_4K < hi && pg < f->size / SZ_4K + 1; pg++) {
		uint64_t w0 = pg * SZ_4K, a = lo > w0 ? lo - w0 : 0, b = hi - w0;

		if (a >= 8)
			continue;
		if (b > 8)
			b = 8;
		/* little endian: byte k of the word is bits 8k..8k+7 */
		for (; a < b; a++)
			f->word[pg] &= ~(0xffULL << (8 * a));
	}
}

static void expect_word(struct file *f, uint64_t pg, const char *how)
{
	volatile uint64_t *p = (volatile uint64_t *)(f->map + pg * SZ_4K);
	uint64_t v;
	int r = guarded(p, &v, 0);

	if (pg * SZ_4K >= f->size) {
		if (!r)
			die("%s %s page %llu past EOF %llu read %#llx, no SIGBUS", how, f->path,
			    (unsigned long long)pg, (unsigned long long)f->size, (unsigned long long)v);
		return;
	}
	if ((long)pg == f->poisoned_page) {
		if (!r || bus_code != BUS_MCEERR_AR)
			die("%s %s: the poisoned page %llu was readable (r %d code %d)", how,
			    f->path, (unsigned long long)pg, r, bus_code);
		return;
	}
	if (r) {
		/*
		 * A fault that could not allocate: only at the instance's
		 * limit.  (1G: also when no whole GiB of the pool is free.)
		 */
		struct statfs sf;

		if (statfs(f->path, &sf))
			die("statfs: %s", strerror(errno));
		if (sf.f_bfree && sf.f_bsize != SZ_1G)
			die("%s %s page %llu: SIGBUS (code %d) with %llu dpages free", how, f->path,
			    (unsigned long long)pg, bus_code, (unsigned long long)sf.f_bfree);
		return;
	}
	if (foreign(v))
		die("%s %s page %llu: another tenant's word %#llx", how, f->path,
		    (unsigned long long)pg, (unsigned long long)v);
	if (v != f->word[pg])
		die("%s %s page %llu: %#llx, the model says %#llx", how, f->path,
		    (unsigned long long)pg, (unsigned long long)v, (unsigned long long)f->word[pg]);
}

/* ---- operations */

static void file_open(struct inst *in, struct file *f, int i)
{
	snprintf(f->path, sizeof(f->path), "%s/f%d", in->dir, i);
	f->fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (f->fd < 0)
		die("create %s: %s", f->path, strerror(errno));
	f->size = rnd_below(in->max_size / SZ_4K) * SZ_4K + rnd_below(SZ_4K);
	if (ftruncate(f->fd, f->size))
		die("ftruncate %s: %s", f->path, strerror(errno));
	f->map = mmap(NULL, in->max_size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	if (f->map == MAP_FAILED)
		die("mmap %s: %s", f->path, strerror(errno));
	if (!f->word)
		f->word = calloc(in->max_size / SZ_4K + 1, sizeof(uint64_t));
	else
		memset(f->word, 0, (in->max_size / SZ_4K + 1) * sizeof(uint64_t));
	if (!f->word)
		die("out of memory");
	f->poisoned_page = -1;
}

static void file_close(struct inst *in, struct file *f)
{
	munmap(f->map, in->max_size);
	close(f->fd);
}

static uint64_t pick_page(struct inst *in, struct file *f)
{
	/* mostly inside the file, sometimes just past its end */
	uint64_t pages = (f->size + SZ_4K - 1) / SZ_4K;

	if (!pages || rnd_below(8) == 0)
		return rnd_below(in->max_size / SZ_4K);
	return rnd_below(pages);
}

/* The dpages in [lo, hi) that the file does not hold yet, from FIEMAP. */
static uint64_t missing_dpages(struct inst *in, struct file *f, uint64_t lo, uint64_t hi)
{
	uint64_t d, n = 0;

	for (d = lo / in->ps; d * in->ps < hi; d++) {
		FIEMAP_REQ(fm, 1);

		fm->fm_start = d * in->ps;
		fm->fm_length = 1;
		fm->fm_extent_count = 1;
		if (ioctl(f->fd, FS_IOC_FIEMAP, fm))
			die("FIEMAP: %s", strerror(errno));
		n += !fm->fm_mapped_extents;
	}
	return n;
}

static int vfio_setup(void)
{
	const char *grp = getenv("VFIO_GROUP");
	char path[64];

	if (!grp || !*grp)
		return -1;
	snprintf(path, sizeof(path), "/dev/vfio/%s", grp);
	vf.container = open("/dev/vfio/vfio", O_RDWR);
	vf.group = open(path, O_RDWR);
	if (vf.container < 0 || vf.group < 0 ||
	    ioctl(vf.group, VFIO_GROUP_SET_CONTAINER, &vf.container) ||
	    ioctl(vf.container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		die("VFIO setup with group %s: %s", grp, strerror(errno));
	return 0;
}

static void op_vfio(void)
{
	struct vfio_iommu_type1_dma_map m = { .argsz = sizeof(m),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE, .iova = IOVA };
	struct vfio_iommu_type1_dma_unmap u = { .argsz = sizeof(u), .iova = IOVA };
	int i;

	if (vf.mapped) {
		u.size = vf.len;
		if (ioctl(vf.container, VFIO_IOMMU_UNMAP_DMA, &u) || u.size != vf.len)
			die("UNMAP_DMA of %llu B: %s", (unsigned long long)vf.len, strerror(errno));
		vf.mapped = 0;
		return;
	}
	for (i = 0; i < ninst && inst[i].ps != SZ_2M; i++)
		;
	if (i == ninst)
		return;
	vf.in = &inst[i];
	vf.f = &inst[i].f[rnd_below(NFILES)];
	vf.len = (1 + rnd_below(4)) * SZ_2M;
	if (vf.f->size < vf.len)
		return;
	/* pins, does not allocate: the range must be there */
	if (missing_dpages(vf.in, vf.f, 0, vf.len) > 0 &&
	    fallocate(vf.f->fd, FALLOC_FL_KEEP_SIZE, 0, vf.len))
		return;		/* the instance is full: nothing to pin */
	m.vaddr = (uintptr_t)vf.f->map;
	m.size = vf.len;
	if (ioctl(vf.container, VFIO_IOMMU_MAP_DMA, &m))
		die("MAP_DMA of %llu B of %s: %s", (unsigned long long)vf.len, vf.f->path,
		    strerror(errno));
	vf.mapped = 1;
	/* the dpages pinned: the map holds them, whatever the file does */
	for (vf.npfn = 0; vf.npfn < (int)(vf.len / SZ_2M); vf.npfn++) {
		vf.pfn[vf.npfn] = phys_of(vf.f->fd, vf.npfn * SZ_2M) / SZ_4K;
		if (!vf.pfn[vf.npfn])
			die("MAP_DMA of %s: a hole at %d MiB", vf.f->path, 2 * vf.npfn);
	}
}

static void op_poison(struct inst *in, struct file *f)
{
	uint64_t pg = pick_page(in, f), phys;
	char buf[32];
	int fd, len;

	if (pg * SZ_4K >= f->size || f->poisoned_page >= 0)
		return;
	phys = phys_of(f->fd, pg * SZ_4K);
	if (!phys)
		return;		/* a hole: nothing to hit */
	poisoned_pfn = phys / SZ_4K;
	len = snprintf(buf, sizeof(buf), "%#llx\n", (unsigned long long)poisoned_pfn);
	fd = open(INJECT, O_WRONLY);
	if (fd < 0 || write(fd, buf, len) != len)
		die("corrupt-pfn %#llx: %s", (unsigned long long)poisoned_pfn, strerror(errno));
	close(fd);
	f->poisoned_page = pg;
	printf("# worker %d step %ld: poisoned pfn %#llx, page %llu of %s\n", worker, step,
	       (unsigned long long)poisoned_pfn, (unsigned long long)pg, f->path);
}

/* The poisoned dpage leaves @f over [lo, hi) (truncate, punch, unlink). */
static void drop_poison(struct inst *in, struct file *f, uint64_t lo, uint64_t hi)
{
	uint64_t d;

	if (f->poisoned_page < 0)
		return;
	d = f->poisoned_page * SZ_4K / in->ps;
	if (d * in->ps >= lo && (d + 1) * in->ps <= hi)
		f->poisoned_page = -1;
}

static void one_step(int can_poison)
{
	struct inst *in = &inst[rnd_below(ninst)];
	struct file *f = &in->f[rnd_below(NFILES)];
	uint64_t pg, lo, hi, t;
	int r, k = rnd_below(100);

	if (k < 30) {
		op = "write";
		pg = pick_page(in, f);
		/* not the poisoned page, nor a word that EOF cuts */
		if ((long)pg == f->poisoned_page ||
		    (pg * SZ_4K < f->size && pg * SZ_4K + 8 > f->size))
			return;
		t = tag();
		r = guarded((volatile uint64_t *)(f->map + pg * SZ_4K), &t, 1);
		if (!r && pg * SZ_4K >= f->size)
			die("write to page %llu past EOF %llu: no SIGBUS", (unsigned long long)pg,
			    (unsigned long long)f->size);
		if (!r)
			f->word[pg] = t;
		expect_word(f, pg, "write+read");
	} else if (k < 50) {
		op = "read";
		expect_word(f, pick_page(in, f), "read");
	} else if (k < 58) {
		op = "procmem";
		pg = pick_page(in, f);
		if (pg * SZ_4K < f->size && (long)pg != f->poisoned_page) {
			int mem = open("/proc/self/mem", O_RDONLY);
			uint64_t v;

			if (mem < 0)
				die("open /proc/self/mem: %s", strerror(errno));
			r = pread(mem, &v, 8, (off_t)(uintptr_t)(f->map + pg * SZ_4K));
			close(mem);
			if (r == 8 && foreign(v))
				die("/proc/self/mem page %llu: another tenant's word %#llx",
				    (unsigned long long)pg, (unsigned long long)v);
			if (r == 8 && v != f->word[pg] && pg * SZ_4K + 8 <= f->size)
				die("/proc/self/mem page %llu: %#llx, the model says %#llx",
				    (unsigned long long)pg, (unsigned long long)v,
				    (unsigned long long)f->word[pg]);
		}
	} else if (k < 68) {
		op = "truncate";
		t = rnd_below(in->max_size + 1);
		if (ftruncate(f->fd, t))
			die("ftruncate %s to %llu: %s", f->path, (unsigned long long)t, strerror(errno));
		if (t < f->size) {
			model_zero(f, t, f->size);
			drop_poison(in, f, (t + in->ps - 1) / in->ps * in->ps, UINT64_MAX);
		}
		f->size = t;
	} else if (k < 78) {
		op = "punch";
		if (!f->size)
			return;
		lo = rnd_below(f->size);
		hi = lo + 1 + rnd_below(f->size - lo);
		if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, lo, hi - lo))
			die("punch [%llu, %llu) of %s: %s", (unsigned long long)lo,
			    (unsigned long long)hi, f->path, strerror(errno));
		model_zero(f, lo, hi);
		drop_poison(in, f, (lo + in->ps - 1) / in->ps * in->ps, hi / in->ps * in->ps);
	} else if (k < 88) {
		int keep = rnd_below(2);
		struct statfs sf;
		uint64_t need;

		op = "fallocate";
		lo = rnd_below(in->max_size);
		hi = lo + 1 + rnd_below(in->max_size - lo);
		/* the reader's faults would change need and f_bfree meanwhile */
		pthread_rwlock_wrlock(&maps_lock);
		need = missing_dpages(in, f, lo, hi);
		if (statfs(in->dir, &sf))
			die("statfs: %s", strerror(errno));
		r = fallocate(f->fd, keep ? FALLOC_FL_KEEP_SIZE : 0, lo, hi - lo);
		if (r)
			r = errno;
		pthread_rwlock_unlock(&maps_lock);
		if (r && r != ENOSPC)
			die("fallocate [%llu, %llu): %s", (unsigned long long)lo,
			    (unsigned long long)hi, strerror(r));
		if (r && need <= sf.f_bfree && in->ps != SZ_1G)
			die("fallocate [%llu, %llu): ENOSPC for %llu dpages with %llu free",
			    (unsigned long long)lo, (unsigned long long)hi,
			    (unsigned long long)need, (unsigned long long)sf.f_bfree);
		if (!r && need > sf.f_bfree)
			die("fallocate [%llu, %llu) took %llu dpages with %llu free",
			    (unsigned long long)lo, (unsigned long long)hi,
			    (unsigned long long)need, (unsigned long long)sf.f_bfree);
		if (!r && !keep && hi > f->size)
			f->size = hi;
	} else if (k < 92) {
		op = "remap";
		pthread_rwlock_wrlock(&maps_lock);
		munmap(f->map, in->max_size);
		f->map = mmap(NULL, in->max_size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
		pthread_rwlock_unlock(&maps_lock);
		if (f->map == MAP_FAILED)
			die("mmap: %s", strerror(errno));
	} else if (k < 96) {
		op = "recreate";
		pthread_rwlock_wrlock(&maps_lock);
		file_close(in, f);
		if (unlink(f->path))
			die("unlink %s: %s", f->path, strerror(errno));
		file_open(in, f, f - in->f);
		pthread_rwlock_unlock(&maps_lock);
	} else if (k < 98) {
		op = "vfio";
		if (vf.container >= 0)
			op_vfio();
	} else {
		op = "poison";
		if (can_poison && !poisoned_pfn && in->ps == SZ_2M)
			op_poison(in, f);
	}
	pthread_rwlock_wrlock(&maps_lock);
	for (r = 0; r < ninst; r++)
		check_accounting(&inst[r]);
	pthread_rwlock_unlock(&maps_lock);
}

/* The second thread: faults random pages, never sees another tenant. */
static void *reader(void *arg)
{
	uint64_t state = *(uint64_t *)arg, v;
	long n = 0;

	while (!stop_reader) {
		struct inst *in;
		struct file *f;
		uint64_t pg;

		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		in = &inst[state % ninst];
		f = &in->f[(state >> 8) % NFILES];
		pg = (state >> 16) % (in->max_size / SZ_4K);
		pthread_rwlock_rdlock(&maps_lock);
		if (!guarded((volatile uint64_t *)(f->map + pg * SZ_4K), &v, 0) && foreign(v)) {
			op = "reader";
			die("reader thread: %s page %llu holds another tenant's word %#llx",
			    f->path, (unsigned long long)pg, (unsigned long long)v);
		}
		pthread_rwlock_unlock(&maps_lock);
		n++;
	}
	return (void *)n;
}

static void add_inst(const char *opts, size_t ps, uint64_t limit, uint64_t max_size)
{
	struct inst *in = &inst[ninst];
	char o[96];
	int i;

	snprintf(in->dir, sizeof(in->dir), "/tmp/dmemfs-stress.%d.%d.XXXXXX", seed, worker);
	if (!mkdtemp(in->dir))
		die("mkdtemp: %s", strerror(errno));
	snprintf(o, sizeof(o), "%s,size=%llu", opts, (unsigned long long)limit);
	if (mount("none", in->dir, "dmemfs", 0, o))
		die("mount -t dmemfs -o %s: %s", o, strerror(errno));
	in->ps = ps;
	in->limit = limit;
	in->max_size = max_size;
	ninst++;
	for (i = 0; i < NFILES; i++)
		file_open(in, &in->f[i], i);
}

static int run_worker(int w)
{
	time_t end = time(NULL) + opt_seconds;
	uint64_t rs;
	pthread_t t;
	void *reads;
	int i, j;

	worker = w;
	rnd_state = 0x9e3779b97f4a7c15ULL * (seed * 64 + w + 1);
	add_inst("pagesize=4K", SZ_4K, 8UL << 20, 4UL << 20);
	add_inst("pagesize=2M", SZ_2M, 48UL << 20, 32UL << 20);
	if (w == 0)
		add_inst("pagesize=1G", SZ_1G, SZ_1G, 2 * SZ_1G);
	if (w == 0 && opt_vfio)
		vfio_setup();
	rs = rnd() | 1;
	if (pthread_create(&t, NULL, reader, &rs))
		die("pthread_create");
	for (step = 1; time(NULL) < end && step < 200000; step++)
		one_step(w == 1 && opt_poison);
	stop_reader = 1;
	pthread_join(t, &reads);
	op = "teardown";
	if (vf.mapped)
		op_vfio();
	if (vf.container >= 0) {
		close(vf.group);
		close(vf.container);
	}
	for (i = 0; i < ninst; i++) {
		for (j = 0; j < NFILES; j++)
			file_close(&inst[i], &inst[i].f[j]);
		/* umount with the files still there: it frees them */
		if (umount(inst[i].dir))
			die("umount %s: %s", inst[i].dir, strerror(errno));
		rmdir(inst[i].dir);
	}
	printf("WORKER-DONE %d: %ld steps, %ld reader faults, poisoned pfn %#llx\n", w, step - 1,
	       (long)reads, (unsigned long long)poisoned_pfn);
	fflush(stdout);
	return 0;
}

/* Kernel log lines since @fd was opened that carry a warning; NULL if none. */
static char *kmsg_bad(int fd)
{
	static char rec[8192];
	ssize_t n;

	for (;;) {
		char *msg;

		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;
		if (n <= 0)
			return NULL;
		rec[n] = 0;
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		msg[strcspn(msg, "\n")] = 0;
		if (strstr(msg, "WARNING:") || strstr(msg, "BUG:") || strstr(msg, "Oops") ||
		    strstr(msg, "Call Trace") || strstr(msg, "general protection"))
			return msg;
	}
}

static int run_seed(int s)
{
	struct dmem_zero_count zc = { 0 };
	struct pool p0, p1;
	int w, status, failed = 0, kfd;
	char *bad;
	pid_t pid;

	seed = s;
	if (read_pool(&p0)) {
		printf("FAIL: stress.seed-%d: no dmem pool in sysfs\n", s);
		return 1;
	}
	kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kfd >= 0)
		lseek(kfd, 0, SEEK_END);
	printf("# seed %d: %d workers for %d s, pool free %llu B\n", s, opt_workers, opt_seconds,
	       (unsigned long long)p0.free);
	if (dmem_trace("dmem_zero_batch", 1) || dmem_trace("dmem_alloc_dpage", 1)) {
		printf("FAIL: stress.seed-%d: cannot trace dmem_zero_batch and dmem_alloc_dpage\n", s);
		return 1;
	}
	write_str(TRACING "/trace", "");
	fflush(stdout);
	for (w = 0; w < opt_workers; w++) {
		pid = fork();
		if (pid == 0)
			_exit(run_worker(w));
		if (pid < 0)
			failed = 1;
	}
	while ((pid = wait(&status)) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("# a worker (pid %d) ended with status %#x\n", pid, status);
			failed = 1;
		}
	read_pool(&p1);
	dmem_trace("dmem_zero_batch", 0);
	dmem_trace("dmem_alloc_dpage", 0);
	dmem_trace_each("dmem_zero_batch", dmem_zero_count_line, &zc);
	dmem_trace_each("dmem_alloc_dpage", dmem_zero_count_line, &zc);
	printf("# seed %d: the zeroers ran %ld batches (%ld pages) among the workers; %ld dpages were handed out zeroed before, %ld zeroed when allocated\n",
	       s, zc.batches, zc.pages, zc.zeroed_before, zc.zeroed_now);
	if (!zc.batches || !zc.zeroed_before) {
		printf("FAIL: stress.seed-%d: background zeroing did not race the workers (%ld batches, %ld dpages from zeroed memory)\n",
		       s, zc.batches, zc.zeroed_before);
		return 1;
	}
	if (p1.used != p0.used || p1.free + (p1.poisoned - p0.poisoned) != p0.free) {
		printf("# pool: used %llu -> %llu B, free %llu -> %llu B, poisoned %llu -> %llu B\n",
		       (unsigned long long)p0.used, (unsigned long long)p1.used,
		       (unsigned long long)p0.free, (unsigned long long)p1.free,
		       (unsigned long long)p0.poisoned, (unsigned long long)p1.poisoned);
		printf("FAIL: stress.seed-%d: the pool is not back after the workers unmounted\n", s);
		return 1;
	}
	bad = kfd >= 0 ? kmsg_bad(kfd) : "cannot read /dev/kmsg";
	if (kfd >= 0)
		close(kfd);
	if (bad) {
		printf("FAIL: stress.seed-%d: kernel log: %.300s\n", s, bad);
		return 1;
	}
	if (failed) {
		printf("FAIL: stress.seed-%d: a worker failed (WORKER-FAIL above); replay: dmemfs_stress --seeds %d --seconds %d --workers %d\n",
		       s, s, opt_seconds, opt_workers);
		return 1;
	}
	printf("PASS: stress.seed-%d: %d workers, %d s, pool back to baseline (poisoned +%llu B)\n", s,
	       opt_workers, opt_seconds, (unsigned long long)(p1.poisoned - p0.poisoned));
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO | SA_NODEFER };
	char seeds[128] = "1,2,3", *tok, *save;
	pthread_rwlockattr_t ra;
	int i, rc = 0, list = 0;

	/* the reader re-takes the lock at once: let the main thread in */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&maps_lock, &ra);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
			snprintf(seeds, sizeof(seeds), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			opt_seconds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			opt_workers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-vfio"))
			opt_vfio = 0;
		else if (!strcmp(argv[i], "--no-poison"))
			opt_poison = 0;
		else if (!strcmp(argv[i], "--list"))
			list = 1;
		else {
			fprintf(stderr, "dmemfs_stress: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	if (list) {
		for (tok = strtok_r(seeds, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			printf("stress.seed-%d\n", atoi(tok));
		return 0;
	}
	if (opt_workers < 2 || opt_workers > 8) {
		fprintf(stderr, "dmemfs_stress: --workers must be 2..8\n");
		return 2;
	}
	sigaction(SIGBUS, &sa, NULL);
	for (tok = strtok_r(seeds, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		rc |= run_seed(atoi(tok));
	return rc;
}
