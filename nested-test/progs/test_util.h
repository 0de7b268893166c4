/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the in-L1 test programs of nested-test/.
 */
#ifndef DMEMFS_TEST_UTIL_H
#define DMEMFS_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>	/* the series' uapi headers: DMEMFS_MAGIC */
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <unistd.h>

/*
 * Whether the running kernel is @major.@minor or later: where the 6.1 and
 * the 6.12 series differ on purpose (kernel/PORT-6.12.md), a test checks
 * the behaviour of the series it runs on.  An unreadable release is old.
 */
static inline int kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma, mi;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return 0;
	return ma > major || (ma == major && mi >= minor);
}

/* Read one number (strtoull @base) from a sysfs or debugfs file. */
static inline int read_num(const char *path, int base, uint64_t *val)
{
	char buf[64];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	*val = strtoull(buf, NULL, base);
	return 0;
}

static inline int read_u64(const char *path, uint64_t *val)
{
	return read_num(path, 10, val);
}

/*
 * The dmem pool's counters: $DMEMFS_SYSFS_ROOT, by default
 * /sys/kernel/mm/dmem, has node<N>/<what>_bytes for each node with dmem.
 * The nodes are read from the directory, so no node limit of our own can
 * disagree with the kernel's (or the library's DMEM_MAX_NODES).
 */

static inline const char *dmem_sysfs(void)
{
	const char *r = getenv("DMEMFS_SYSFS_ROOT");

	return r && *r ? r : "/sys/kernel/mm/dmem";
}

/* node @n's @what_bytes: 0, or -1 when the node has no such counter */
static inline int dmem_node_stat(int n, const char *what, uint64_t *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/node%d/%s_bytes", dmem_sysfs(), n, what);
	return read_u64(path, val);
}

/* node @n's @what_bytes, or UINT64_MAX when it has none */
static inline uint64_t dmem_node_bytes(int n, const char *what)
{
	uint64_t v;

	return dmem_node_stat(n, what, &v) ? UINT64_MAX : v;
}

/* The id of the next node<N> directory of @d, or -1 at its end. */
static inline int dmem_next_node(DIR *d)
{
	struct dirent *e;
	char end;
	int n;

	while (d && (e = readdir(d)))
		if (sscanf(e->d_name, "node%d%c", &n, &end) == 1)
			return n;
	return -1;
}

/*
 * Whether every node<N> directory has N below @max: the tests that keep
 * per-node arrays refuse to run (rather than miss a node) when not.
 */
static inline int dmem_nodes_below(int max)
{
	DIR *d = opendir(dmem_sysfs());
	int n, ok = 1;

	while ((n = dmem_next_node(d)) >= 0)
		if (n >= max)
			ok = 0;
	if (d)
		closedir(d);
	return ok;
}

/* @what_bytes summed over the nodes, or -1 when no node has it */
static inline int64_t dmem_pool_sum(const char *what)
{
	DIR *d = opendir(dmem_sysfs());
	int64_t sum = 0;
	int n, found = 0;
	uint64_t v;

	while ((n = dmem_next_node(d)) >= 0) {
		if (dmem_node_stat(n, what, &v))
			continue;
		sum += v;
		found++;
	}
	if (d)
		closedir(d);
	return found ? sum : -1;
}

/*
 * The persisted= address /proc/mounts shows for the dmemfs mount (source
 * "none") at @dir, 0 when none.
 */
static inline uint64_t persisted(const char *dir)
{
	char line[512], *at;
	uint64_t addr = 0;
	size_t n = strlen(dir);
	FILE *f = fopen("/proc/mounts", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "none ", 5) && !strncmp(line + 5, dir, n) &&
		    line[5 + n] == ' ' && (at = strstr(line, ",persisted=")))
			addr = strtoull(at + 11, NULL, 0);
	fclose(f);
	return addr;
}

/*
 * The least a persisted table holds: two 4 KiB pages, so that a memory
 * error in one still leaves the other to wipe (dmemfs.rst).
 */
#define TABLE_MIN	(2 * 4096UL)

/*
 * A zeroed FIEMAP request @name with room for @n extents: fm_extents[] is a
 * flexible array, which C (and clang's -Werror) allows only at the end of
 * a struct, so the request lives in a buffer of its own.
 */
#define FIEMAP_REQ(name, n)							\
	uint64_t name##_buf[(sizeof(struct fiemap) +				\
			     (n) * sizeof(struct fiemap_extent)) / 8] = { 0 };	\
	struct fiemap *name = (struct fiemap *)name##_buf

/* Physical address behind file offset @off, from FIEMAP; 0 if none. */
static inline uint64_t phys_of(int fd, uint64_t off)
{
	FIEMAP_REQ(fm, 1);
	struct fiemap_extent *fe = &fm->fm_extents[0];

	fm->fm_start = off;
	fm->fm_length = 1;
	fm->fm_extent_count = 1;
	if (ioctl(fd, FS_IOC_FIEMAP, fm) || fm->fm_mapped_extents != 1 ||
	    fe->fe_flags & FIEMAP_EXTENT_UNKNOWN)
		return 0;
	return fe->fe_physical + (off - fe->fe_logical);
}

#define TRACING		"/sys/kernel/tracing"

/* Write @s to @path (truncating); 0 or -1. */
static inline int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/*
 * Turn the trace event dmem/@event on (emptying the trace buffer first)
 * or off; tracefs is mounted when it is not yet.  0 or -1.
 */
static inline int dmem_trace(const char *event, int on)
{
	char path[128];

	if (access(TRACING "/trace", F_OK))
		mount("tracefs", TRACING, "tracefs", 0, NULL);
	snprintf(path, sizeof(path), TRACING "/events/dmem/%s/enable", event);
	if (on && write_str(TRACING "/trace", ""))
		return -1;
	return write_str(path, on ? "1" : "0");
}

/*
 * Call @fn(line, @arg) for each line of the trace buffer that records the
 * dmem trace event @event.  Return how many there were, or -1 when the
 * buffer cannot be read.
 */
static inline long dmem_trace_each(const char *event, void (*fn)(const char *, void *),
				   void *arg)
{
	char line[512], want[64];
	long n = 0;
	FILE *f;

	snprintf(want, sizeof(want), " %s: ", event);
	f = fopen(TRACING "/trace", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, want)) {
			n++;
			fn(line, arg);
		}
	}
	fclose(f);
	return n;
}

/*
 * What the background zeroers and the allocations did, from the trace
 * lines of dmem_zero_batch ("nr=" pages a batch) and dmem_alloc_dpage
 * ("zeroed_now=0|1"): pass as the @fn of dmem_trace_each().
 */
struct dmem_zero_count {
	long batches, pages, zeroed_before, zeroed_now;
};

static inline void dmem_zero_count_line(const char *line, void *arg)
{
	struct dmem_zero_count *c = arg;
	const char *nr = strstr(line, " nr=");

	if (strstr(line, " dmem_zero_batch: ")) {
		c->batches++;
		c->pages += nr ? strtol(nr + 4, NULL, 10) : 0;
	} else if (strstr(line, " ret=0 ")) {
		if (strstr(line, "zeroed_now=1"))
			c->zeroed_now++;
		else
			c->zeroed_before++;
	}
}

/*
 * A thread that punches [0, len) out of fd until ->stop: for tests that
 * race a punch hole against KVM or VFIO faulting the range back in.
 */
struct puncher {
	int fd;
	size_t len;
	volatile int stop;
	long punches;
	int err;		/* errno of the punch that failed, or 0 */
};

static inline void *punch_loop(void *arg)
{
	struct puncher *p = arg;

	while (!p->stop) {
		if (fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, p->len)) {
			p->err = errno;
			break;
		}
		p->punches++;
	}
	return NULL;
}

#ifdef __KSELFTEST_HARNESS_H
/*
 * --list: the names the harness runs (fixture.variant.test), for the
 * runner's expected-results set.  Include after kselftest_harness.h.
 */
static inline int harness_list_tests(void)
{
	struct __fixture_variant_metadata no_variant = { .name = "" };
	struct __fixture_variant_metadata *v;
	struct __fixture_metadata *f;
	struct __test_metadata *t;

	for (f = __fixture_list; f; f = f->next)
		for (v = f->variant ?: &no_variant; v; v = v->next)
			for (t = f->tests; t; t = t->next)
				printf("%s%s%s.%s\n", f->name, v->name[0] ? "." : "",
				       v->name, t->name);
	return 0;
}


/*
 * TEST_FILTER=GLOB[:GLOB...] in the environment: run only the tests
 * whose fixture.variant.test name matches one (fnmatch), for a quick
 * rerun of one test.  A fixture keeps the variants and tests that match
 * in some combination.  Call before test_harness_run().
 */
#define HARNESS_RELINK(head, item)				\
	do {							\
		(item)->next = NULL;				\
		if (!(head)) {					\
			(head) = (item);			\
			(item)->prev = (item);			\
		} else {					\
			(item)->prev = (head)->prev;		\
			(head)->prev->next = (item);		\
			(head)->prev = (item);			\
		}						\
	} while (0)

/* @globs: one or more patterns, separated by ':' */
static inline int harness_name_matches(const char *globs, const char *f,
				       const char *v, const char *t)
{
	char name[256], pat[256];
	const char *g, *end;

	snprintf(name, sizeof(name), "%s%s%s.%s", f, v[0] ? "." : "", v, t);
	for (g = globs; *g; g = *end ? end + 1 : end) {
		end = strchrnul(g, ':');
		snprintf(pat, sizeof(pat), "%.*s", (int)(end - g), g);
		if (!fnmatch(pat, name, 0))
			return 1;
	}
	return 0;
}

static inline void harness_filter_env(void)
{
	struct __fixture_variant_metadata no_variant = { .name = "" };
	struct __fixture_variant_metadata *v, *vnext, *vkeep;
	struct __test_metadata *t, *tnext, *tkeep;
	const char *glob = getenv("TEST_FILTER");
	struct __fixture_metadata *f;

	if (!glob || !*glob)
		return;
	for (f = __fixture_list; f; f = f->next) {
		vkeep = NULL;
		tkeep = NULL;
		for (t = f->tests; t; t = tnext) {
			tnext = t->next;
			for (v = f->variant ?: &no_variant; v; v = v->next)
				if (harness_name_matches(glob, f->name, v->name, t->name))
					break;
			if (v)
				HARNESS_RELINK(tkeep, t);
		}
		for (v = f->variant; v; v = vnext) {
			vnext = v->next;
			for (t = tkeep; t; t = t->next)
				if (harness_name_matches(glob, f->name, v->name, t->name))
					break;
			if (t)
				HARNESS_RELINK(vkeep, v);
		}
		f->tests = (f->variant && !vkeep) ? NULL : tkeep;
		if (f->variant)
			f->variant = vkeep;
	}
}

#endif /* __KSELFTEST_HARNESS_H */

#endif
