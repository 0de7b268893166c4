/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the in-L1 test programs of nested-test/.
 */
#ifndef DMEMFS_TEST_UTIL_H
#define DMEMFS_TEST_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

#endif
