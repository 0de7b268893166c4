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
 *   dmem_pattern digest FILE...         for each whole FILE, mapped read-only
 *                                       (it must have no hole: a fault there
 *                                       would allocate), print "DIGEST
 *                                       BYTES ZERO_PAGES FILE": a 64-bit
 *                                       hash of its bytes in order, for
 *                                       memory that must come back bit for
 *                                       bit (liveupdate-l1.sh)
 *   dmem_pattern phys FILE [OFFSET]     print the physical address of byte
 *                                       OFFSET (default 0) of FILE
 *   dmem_pattern forge FILE SHIFT PFN COUNT HOW KEY [SOURCE]
 *                                       write into FILE's first 4 KiB a
 *                                       dmemfs table (Documentation/
 *                                       filesystems/dmemfs.rst, written
 *                                       here from the documented format
 *                                       alone) of one file "forged" that
 *                                       holds COUNT dpages of 1 << SHIFT
 *                                       bytes from PFN, for the mount of
 *                                       SOURCE (default none), MACed with
 *                                       KEY (64 hex digits; "crc": the
 *                                       unauthenticated format 1).  HOW:
 *                                       good; corrupt (a byte flipped
 *                                       after the MAC); pasteof (the last
 *                                       dpage past the size); dup:PFN2 (two
 *                                       files of one name, with a dpage
 *                                       each: PFN and PFN2).  Prints the
 *                                       dmemfs_recover= token ADDR:KEY.
 *   dmem_pattern forge-at FILE ADDR SHIFT PFN COUNT KEY SOURCE [POLICY]
 *                                       a good table that says it is at
 *                                       ADDR in every 4 KiB page of FILE
 *                                       (a tenant does not know which of
 *                                       its pages is where), the mapping
 *                                       mbound to POLICY first
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

#include <glib.h>

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
	union {
		struct fiemap fm;
		char room[sizeof(struct fiemap) + sizeof(struct fiemap_extent)];
	} f = { .fm = { .fm_start = off, .fm_length = 1, .fm_extent_count = 1 } };
	const struct fiemap_extent *fe = &f.fm.fm_extents[0];
	int fd = open(path, O_RDONLY);

	if (fd < 0 || ioctl(fd, FS_IOC_FIEMAP, &f) || f.fm.fm_mapped_extents != 1 ||
	    !fe->fe_physical) {
		fprintf(stderr, "dmem_pattern: no dpage at %llu of %s\n",
			(unsigned long long)off, path);
		exit(2);
	}
	close(fd);
	return fe->fe_physical + (off - fe->fe_logical);
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

/*
 * Records: in format 2 an 8-byte header (type, length, 0) and the body
 * padded to 8 bytes; in format 1 a 4-byte header and the body.
 */
struct table {
	uint8_t *at;
	int v2;
};

static uint8_t *rec(struct table *t, uint16_t type, uint16_t len)
{
	uint8_t *body = t->at + (t->v2 ? 8 : 4);

	memcpy(t->at, &type, 2);
	memcpy(t->at + 2, &len, 2);
	memset(t->at + 4, 0, body - t->at - 4);
	t->at = body + (t->v2 ? (len + 7u) / 8 * 8 : len);
	return body;
}

static uint8_t *put64(uint8_t *at, uint64_t v)
{
	memcpy(at, &v, 8);
	return at + 8;
}

static uint8_t *put32(uint8_t *at, uint32_t v)
{
	memcpy(at, &v, 4);
	return at + 4;
}

static void file_rec(struct table *t, const char *name, uint64_t size)
{
	size_t n = strlen(name);
	uint8_t *d = rec(t, 3, 24 + n);		/* file, 0600, root */

	d = put32(d, 0100600);
	d = put32(d, 0);
	d = put32(d, 0);
	d = put32(d, 0);
	d = put64(d, size);
	memcpy(d, name, n);
}

static void extent_rec(struct table *t, uint64_t index, uint64_t pfn, uint64_t count)
{
	uint8_t *d = rec(t, 5, 24);

	d = put64(d, index);
	d = put64(d, pfn);
	put64(d, count);
}

/*
 * A one-page table (little endian, as x86) in @page, self address @addr,
 * from Documentation/filesystems/dmemfs.rst alone.  @key: the 32-byte
 * HMAC-SHA256 key of the current format (version 2), or NULL for the
 * CRC-only version 1 of the series before tables were authenticated.
 */
static void forge_page(uint8_t *page, uint64_t addr, uint32_t shift, uint64_t pfn,
		       uint64_t count, const char *how, const uint8_t *key,
		       const char *source)
{
	size_t hdr = key ? 72 : 40, slen = strlen(source);
	uint64_t files = 1, size = count << shift;
	struct table t = { .at = page + hdr, .v2 = key != NULL };
	uint8_t *d;

	memset(page, 0, PAGE);
	if (key) {
		d = rec(&t, 1, 24 + slen);	/* mount: shift, no nodes, no size=, source */
		d = put32(d, shift);
		d = put32(d, 0);
		d = put64(d, 0);
		d = put32(d, slen);		/* u16 source length, u16 nodes length 0 */
		d = put32(d, 0);
		memcpy(d, source, slen);
	} else {
		d = rec(&t, 1, 8);
		d = put32(d, shift);
		put32(d, 0);
	}
	if (!strcmp(how, "pasteof"))		/* its last dpage is past its size */
		size -= 1ULL << shift;
	if (!strncmp(how, "dup:", 4)) {		/* one name twice, a dpage each */
		file_rec(&t, "forged", 1ULL << shift);
		extent_rec(&t, 0, pfn, 1);
		file_rec(&t, "forged", 1ULL << shift);
		extent_rec(&t, 0, strtoull(how + 4, NULL, 0), 1);
		files = 2;
		count = 2;
	} else {
		file_rec(&t, "forged", size);
		extent_rec(&t, 0, pfn, count);
	}
	d = rec(&t, 6, 16);			/* end: files, dpages */
	d = put64(d, files);
	put64(d, count);
	put64(page, 0x31424154534d4444ULL);	/* header */
	put32(page + 8, key ? 2 : 1);
	put64(page + 16, addr);
	if (key) {
		GHmac *h = g_hmac_new(G_CHECKSUM_SHA256, key, 32);
		gsize n = 32;

		put32(page + 12, t.at - page - hdr);
		g_hmac_update(h, page, PAGE);	/* MAC field still 0 */
		g_hmac_get_digest(h, page + 40, &n);
		g_hmac_unref(h);
	} else {
		put32(page + 36, t.at - page - hdr);
		put32(page + 12, crc32_le(~0U, page, PAGE));
	}
	if (!strcmp(how, "corrupt"))
		page[hdr + 60] ^= 0xff;
}

/* "crc", or 64 hex digits into @key */
static const uint8_t *parse_key(const char *hex, uint8_t *key)
{
	if (!strcmp(hex, "crc"))
		return NULL;
	for (int i = 0; i < 32; i++) {
		if (!hex[2 * i] || sscanf(hex + 2 * i, "%2hhx", &key[i]) != 1) {
			fprintf(stderr, "dmem_pattern: key: 64 hex digits or crc\n");
			exit(2);
		}
	}
	return key;
}

/* forge FILE SHIFT PFN COUNT HOW KEY [SOURCE]: a table in FILE's first page */
static int forge(const char *path, int argc, char **argv)
{
	uint8_t keybuf[32], *page;
	const uint8_t *key;
	uint64_t addr;
	size_t len;

	if (argc < 5 || argc > 6)
		return 2;
	addr = phys(path, 0);
	key = parse_key(argv[4], keybuf);
	page = (uint8_t *)map(path, &len);
	forge_page(page, addr, strtoul(argv[0], NULL, 0), strtoull(argv[1], NULL, 0),
		   strtoull(argv[2], NULL, 0), argv[3], key, argc > 5 ? argv[5] : "none");
	if (msync(page, PAGE, MS_SYNC))
		die("msync");
	printf("%#llx%s%s\n", (unsigned long long)addr, key ? ":" : "", key ? argv[4] : "");
	return 0;
}

/*
 * forge-at FILE ADDR SHIFT PFN COUNT KEY SOURCE [POLICY]: the table that names
 * itself at ADDR in every 4 KiB page of FILE; what a tenant without
 * FIEMAP's addresses does to the pages it was given.
 */
static int forge_at(const char *path, int argc, char **argv)
{
	uint8_t keybuf[32], *p;
	const uint8_t *key;
	size_t len;

	if (argc != 6 && argc != 7)
		return 2;
	key = parse_key(argv[4], keybuf);
	p = (uint8_t *)map(path, &len);
	if (argc == 7) {
		unsigned long mask;
		int mode = parse_policy(argv[6], &mask);

		if (syscall(SYS_mbind, p, len, mode, mask ? &mask : NULL, mask ? 64 : 0, 0))
			die("mbind");
	}
	for (size_t off = 0; off + PAGE <= len; off += PAGE)
		forge_page(p + off, strtoull(argv[0], NULL, 0), strtoul(argv[1], NULL, 0),
			   strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0), "good",
			   key, argv[5]);
	if (msync(p, len, MS_SYNC))
		die("msync");
	printf("%zu pages\n", len / PAGE);
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

/* Mix one word into a lane: order-dependent, cheap under TCG. */
static uint64_t mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

static int digest(int argc, char **argv)
{
	int a;

	for (a = 0; a < argc; a++) {
		uint64_t lane[4] = { 1, 2, 3, 4 }, zero = 0, i, j, h;
		const uint64_t *w;
		struct stat st;
		int fd = open(argv[a], O_RDONLY);

		if (fd < 0 || fstat(fd, &st))
			die(argv[a]);
		if ((uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size) {
			fprintf(stderr, "dmem_pattern: %s: %llu of %llu bytes allocated: a hole\n",
				argv[a], (unsigned long long)st.st_blocks * 512,
				(unsigned long long)st.st_size);
			return 2;
		}
		w = st.st_size ? mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0) : NULL;
		if (w == MAP_FAILED)
			die("mmap");
		close(fd);
		for (i = 0; i < st.st_size / PAGE; i++, w += PAGE / 8) {
			uint64_t any = 0;

			for (j = 0; j < PAGE / 8; j += 4) {
				lane[0] = mix(lane[0], w[j]);
				lane[1] = mix(lane[1], w[j + 1]);
				lane[2] = mix(lane[2], w[j + 2]);
				lane[3] = mix(lane[3], w[j + 3]);
				any |= w[j] | w[j + 1] | w[j + 2] | w[j + 3];
			}
			zero += !any;
		}
		if (st.st_size)
			munmap((void *)(w - i * (PAGE / 8)), st.st_size);
		h = mix(mix(mix(mix(st.st_size, lane[0]), lane[1]), lane[2]), lane[3]);
		printf("%016llx %llu %llu %s\n", (unsigned long long)h,
		       (unsigned long long)st.st_size, (unsigned long long)zero, argv[a]);
	}
	return 0;
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
	if (!strcmp(argv[1], "digest"))
		return digest(argc - 2, argv + 2);
	if (!strcmp(argv[1], "forge"))
		return forge(argv[2], argc - 3, argv + 3);
	if (!strcmp(argv[1], "forge-at"))
		return forge_at(argv[2], argc - 3, argv + 3);
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
