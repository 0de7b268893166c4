/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of the kernel's headers to build the dmem= parser of
 * mm/dmem_reserve.c in user space (kernel/fuzz/fuzz-dmem-param.c).  The
 * parser itself is copied out of the patched tree at build time, so the
 * fuzzer always runs the code that boots.
 */
#ifndef KSHIM_H
#define KSHIM_H

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t u64;
typedef uint64_t phys_addr_t;

#define U64_MAX			UINT64_MAX
#define BIT_ULL(n)		(1ULL << (n))
#define PA_SECTION_SHIFT	27	/* x86_64: 128 MiB sections */
#define IS_ALIGNED(x, a)	(((x) & ((typeof(x))(a) - 1)) == 0)

static inline bool is_power_of_2(unsigned long long n)
{
	return n != 0 && (n & (n - 1)) == 0;
}

/* lib/kstrtox.c: base 0 as the kernel does it, one trailing newline, no sign */
static inline int kstrtoull(const char *s, unsigned int base, u64 *res)
{
	unsigned long long v;
	char *end;

	if (!isxdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, (int)base);
	if (end == s)
		return -EINVAL;
	if (*end == '\n')
		end++;
	if (*end)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*res = v;
	return 0;
}

#endif
