// SPDX-License-Identifier: GPL-2.0
/*
 * dmem_pattern: a seeded pattern in a dmemfs file, and the file's memory
 * policy, for tests that carry files over a kexec (tests/l1-kexec.sh).
 *
 *   dmem_pattern fill FILE SEED [POLICY]  map FILE whole; with POLICY
 *                                       (bind:1, prefer-many:0-1, local,
 *                                       ...) mbind it first; write the
 *                                       pattern into every 4 KiB page
 *   dmem_pattern touch FILE SEED PAGES...  the same, only the given pages
 *   dmem_pattern check FILE SEED [PAGES...]  every page (or the given
 *                                       ones) holds the pattern: exit 0
 *   dmem_pattern scan FILE SEED         print how many pages hold any
 *                                       word of the pattern of SEED
 *   dmem_pattern policy FILE            print the file's policy at offset 0
 *                                       as "MODE NODES" (get_mempolicy)
 *   dmem_pattern phys FILE [OFFSET]     print the physical address of byte
 *                                       OFFSET (default 0) of FILE
 *   dmem_pattern forge FILE SHIFT PFN COUNT good|corrupt
 *                                       write into FILE's first 4 KiB a
 *                                       dmemfs table (Documentation/
 *                                       filesystems/dmemfs.rst, written
 *                                       here from the documented format
 *                                       alone) of one file "forged" that
 *                                       holds COUNT dpages of 1 << SHIFT
 *                                       bytes from PFN; "corrupt" flips a
 *                                       byte after the checksum is made.
 *                                       Prints the table's address.
 *
 * The pattern: words 0 and 256 of page i are SEED * 2^32 + i and its
 * complement; cheap enough to write to GiBs under TCG, and a page of
 * another file, or of another offset, never holds it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096UL
#define MPOL_MODES 7
static const char *const modes[MPOL_MODES] = {
	"default", "prefer", "bind", "interleave", "local", "prefer-many",
};

static void die(const char *what)
{
	fprintf(stderr, "dmem_pattern: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint64_t word(uint64_t seed, uint64_t page)
{
	return (seed << 32) + page;
}

static char *map(const char *path, size_t *len)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDWR);

	if (fd < 0 || fstat(fd, &st))
		die(path);
	*len = st.st_size;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	close(fd);
	return p;
}

/* "MODE[:NODES]" into a mode and a mask of up to 64 nodes */
static int parse_policy(const char *s, unsigned long *mask)
{
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	int mode;

	*mask = 0;
	for (mode = 0; mode < MPOL_MODES; mode++)
		if (modes[mode] && strlen(modes[mode]) == n &&
		    !strncmp(s, modes[mode], n))
			break;
	if (mode == MPOL_MODES) {
		fprintf(stderr, "dmem_pattern: unknown policy %s\n", s);
		exit(2);
	}
	for (s = colon; s && *s; ) {
		char *end;
		unsigned long a = strtoul(s + 1, &end, 10), b = a;

		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		while (a <= b && a < 64)
			*mask |= 1UL << a++;
		s = *end == ',' ? end : NULL;
	}
	return mode;
}

/* Physical address of the dpage at byte @off of @path (FIEMAP, as root). */
static uint64_t phys(const char *path, uint64_t off)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent fe;
	} f = { .fm = { .fm_start = off, .fm_length = 1, .fm_extent_count = 1 } };
	int fd = open(path, O_RDONLY);

	if (fd < 0 || ioctl(fd, FS_IOC_FIEMAP, &f) || f.fm.fm_mapped_extents != 1 ||
	    !f.fe.fe_physical) {
		fprintf(stderr, "dmem_pattern: no dpage at %llu of %s\n",
			(unsigned long long)off, path);
		exit(2);
	}
	close(fd);
	return f.fe.fe_physical + (off - f.fe.fe_logical);
}

/* CRC-32 as the kernel's crc32_le(~0, ...): reflected 0xedb88320, no final xor */
static uint32_t crc32_le(uint32_t crc, const uint8_t *p, size_t len)
{
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	return crc;
}

static uint8_t *rec(uint8_t *at, uint16_t type, uint16_t len)
{
	memcpy(at, &type, 2);
	memcpy(at + 2, &len, 2);
	return at + 4;
}

/* A one-page table at the first 4 KiB of @path (x86: little endian). */
static int forge(const char *path, int argc, char **argv)
{
	uint64_t addr = phys(path, 0), pfn, count, files = 1, v;
	uint32_t shift, u, crc;
	uint8_t *page, *d;
	size_t len;

	if (argc != 4)
		return 2;
	shift = strtoul(argv[0], NULL, 0);
	pfn = strtoull(argv[1], NULL, 0);
	count = strtoull(argv[2], NULL, 0);
	page = (uint8_t *)map(path, &len);
	memset(page, 0, PAGE);
	d = page + 40;
	d = rec(d, 1, 8);			/* mount: shift, nodes unset */
	memcpy(d, &shift, 4);
	d += 8;
	d = rec(d, 3, 24 + 6);			/* file "forged", 0600, root */
	u = 0100600;
	memcpy(d, &u, 4);
	v = count << shift;
	memcpy(d + 16, &v, 8);
	memcpy(d + 24, "forged", 6);
	d += 30;
	d = rec(d, 5, 24);			/* its dpages */
	v = 0;
	memcpy(d, &v, 8);
	memcpy(d + 8, &pfn, 8);
	memcpy(d + 16, &count, 8);
	d += 24;
	d = rec(d, 6, 16);			/* end: 1 file, count dpages */
	memcpy(d, &files, 8);
	memcpy(d + 8, &count, 8);
	d += 16;
	v = 0x31424154534d4444ULL;		/* header */
	memcpy(page, &v, 8);
	u = 1;
	memcpy(page + 8, &u, 4);
	memcpy(page + 16, &addr, 8);
	u = d - page - 40;
	memcpy(page + 36, &u, 4);
	crc = crc32_le(~0U, page, PAGE);
	memcpy(page + 12, &crc, 4);
	if (!strcmp(argv[3], "corrupt"))
		page[100] ^= 0xff;
	else if (strcmp(argv[3], "good"))
		return 2;
	if (msync(page, PAGE, MS_SYNC))
		die("msync");
	printf("%#llx\n", (unsigned long long)addr);
	return 0;
}

static void put(char *p, uint64_t seed, uint64_t i)
{
	uint64_t *w = (uint64_t *)(p + i * PAGE);

	w[0] = word(seed, i);
	w[256] = ~word(seed, i);
}

static int good(const char *p, uint64_t seed, uint64_t i)
{
	const uint64_t *w = (const uint64_t *)(p + i * PAGE);

	return w[0] == word(seed, i) && w[256] == ~word(seed, i);
}

int main(int argc, char **argv)
{
	uint64_t seed, i, pages, bad = 0, n = 0;
	unsigned long mask;
	size_t len;
	char *p;
	int mode, a;

	if (argc < 3) {
		fprintf(stderr, "usage: dmem_pattern fill|touch|check|scan|policy FILE [SEED] ...\n");
		return 2;
	}
	if (!strcmp(argv[1], "phys")) {
		printf("%#llx\n", (unsigned long long)phys(argv[2], argc > 3 ?
			strtoull(argv[3], NULL, 0) : 0));
		return 0;
	}
	if (!strcmp(argv[1], "forge"))
		return forge(argv[2], argc - 3, argv + 3);
	p = map(argv[2], &len);
	pages = len / PAGE;
	if (!strcmp(argv[1], "policy")) {
		if (syscall(SYS_get_mempolicy, &mode, &mask, 64, p, 2 /* MPOL_F_ADDR */))
			die("get_mempolicy");
		printf("%s %#lx\n", mode >= 0 && mode < MPOL_MODES && modes[mode] ?
		       modes[mode] : "?", mask);
		return 0;
	}
	if (argc < 4)
		return 2;
	seed = strtoull(argv[3], NULL, 0);
	if (!strcmp(argv[1], "fill")) {
		if (argc > 4) {
			mode = parse_policy(argv[4], &mask);
			if (syscall(SYS_mbind, p, len, mode, mask ? &mask : NULL,
				    mask ? 64 : 0, 0))
				die("mbind");
		}
		for (i = 0; i < pages; i++)
			put(p, seed, i);
		return 0;
	}
	if (!strcmp(argv[1], "touch")) {
		for (a = 4; a < argc; a++)
			put(p, seed, strtoull(argv[a], NULL, 0));
		return 0;
	}
	if (!strcmp(argv[1], "check")) {
		for (a = 4; a < argc; a++, n++)
			bad += !good(p, seed, strtoull(argv[a], NULL, 0));
		for (i = 0; argc == 4 && i < pages; i++, n++)
			bad += !good(p, seed, i);
		printf("%lu of %lu pages hold the pattern\n",
		       (unsigned long)(n - bad), (unsigned long)n);
		return bad ? 1 : 0;
	}
	if (!strcmp(argv[1], "scan")) {
		for (i = 0; i < pages; i++) {
			const uint64_t *w = (const uint64_t *)(p + i * PAGE);

			n += (w[0] >> 32) == seed || (~w[256] >> 32) == seed;
		}
		printf("%lu\n", (unsigned long)n);
		return 0;
	}
	return 2;
}
