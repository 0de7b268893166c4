/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libdmemfs-host, util layer: what every program of dmemfs-host needs,
 * with no notion of a domain.
 *
 *  - page sizes and libvirt-syntax NUMA nodesets,
 *  - the configuration file (GKeyFile, /etc/dmemfs-host.conf) and its mounts,
 *  - per-node dmem pool statistics from sysfs,
 *  - creating and preallocating a dmemfs file under a NUMA policy,
 *  - running another program (run.c).
 *
 * The model layer (../model/: a domain's plan, its directory and files,
 * the carry state of a host kernel update) builds on it; the programs
 * build on both.
 *
 * Everything that needs a real dmemfs goes through DmemfsOps so the unit
 * tests can run on a temporary directory.
 */
#ifndef DMEMFS_HOST_H
#define DMEMFS_HOST_H

#include <glib.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* statfs() f_type of dmemfs: DMEMFS_MAGIC of the series' <linux/magic.h> */
#ifndef DMEMFS_MAGIC
#define DMEMFS_MAGIC 0x2ace90c6
#endif
/* Namespace of the <metadata> element a domain opts in with. */
#define DMEMFS_XMLNS "http://dmemfs-host.org/xmlns/dmemfs/1.0"

#define DMEM_ERROR (dmem_error_quark())
GQuark dmem_error_quark(void);
enum { DMEM_ERROR_FAILED, DMEM_ERROR_UNSUPPORTED, DMEM_ERROR_NO_SPACE };
/* set @error (DMEM_ERROR_FAILED) unless it is set already; FALSE */
gboolean dmem_fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/*
 * The file system type (statfs f_type) that @path is or would be on: that
 * of its nearest existing ancestor as the kernel resolves it (symbolic
 * links, then ".."), the resolved directory in @where.  FALSE when not even
 * / can be reached (a relative @path is the caller's working directory's).
 */
gboolean dmem_path_fstype(const char *path, guint64 *fstype, char **where);

/* ---- page sizes ---------------------------------------------------- */
#define DMEM_N_PAGESIZES 3
extern const guint64 dmem_pagesizes[DMEM_N_PAGESIZES]; /* 4K, 2M, 1G */
/* "4K", "2M" or "1G" (exactly) -> bytes; FALSE otherwise. */
gboolean dmem_pagesize_parse(const char *s, guint64 *bytes);
/* bytes -> "4K"/"2M"/"1G", NULL for anything else. */
const char *dmem_pagesize_name(guint64 bytes);
/* index in dmem_pagesizes, or -1 */
int dmem_pagesize_index(guint64 bytes);

/* ---- NUMA nodesets (libvirt syntax: "0-3,^2", VIR_DOMAIN_CPUMASK_LEN) -- */
#define DMEM_MAX_NODES 1024
typedef struct {
	guint64 bits[DMEM_MAX_NODES / 64];
} DmemNodeset;

gboolean dmem_nodeset_parse(const char *s, DmemNodeset *set, GError **error);
void dmem_nodeset_set(DmemNodeset *set, guint node);
gboolean dmem_nodeset_has(const DmemNodeset *set, guint node);
guint dmem_nodeset_count(const DmemNodeset *set);
/* -1 when empty */
int dmem_nodeset_first(const DmemNodeset *set);
int dmem_nodeset_last(const DmemNodeset *set);
/* "0-1,3" */
char *dmem_nodeset_format(const DmemNodeset *set);

typedef enum {
	DMEM_POLICY_NONE = 0, /* no numatune: default/local allocation */
	DMEM_POLICY_BIND,
	DMEM_POLICY_PREFERRED,
	DMEM_POLICY_INTERLEAVE,
} DmemPolicyMode;

typedef struct {
	DmemPolicyMode mode;
	DmemNodeset nodes; /* empty for DMEM_POLICY_NONE */
} DmemPolicy;

const char *dmem_policy_name(DmemPolicyMode mode); /* "bind", ... */

/* ---- configuration -------------------------------------------------- */
#define DMEM_DEFAULT_CONFIG SYSCONFDIR "/dmemfs-host.conf"

/*
 * Every QEMU runs as the same user, which owns every domain's memory files:
 * only the domain's own AppArmor profile, libvirt-<uuid>, keeps its QEMU out
 * of the others'.  APPARMOR (the default): the wrapper runs QEMU only in that
 * profile, enforced.  NONE: the operator separates domains otherwise.
 */
typedef enum {
	DMEM_CONFINE_APPARMOR,
	DMEM_CONFINE_NONE,
} DmemConfinement;

typedef struct {
	char *path;                              /* file read, or NULL */
	GPtrArray *mounts[DMEM_N_PAGESIZES];     /* char *, first = default */
	char *qemu_binary;
	char *qemu_user;
	char *qemu_group;                        /* NULL: user's primary group */
	DmemConfinement confinement;             /* what the wrapper requires of QEMU */
	char *sysfs_root;
	guint64 default_pagesize;                /* wrapper --dry-run fallback */
	char *state_dir;                         /* dmem-liveupdate's state */
} DmemConfig;

/*
 * Loads $DMEMFS_HOST_CONF or DMEM_DEFAULT_CONFIG (a missing file means all
 * defaults), then applies DMEMFS_SYSFS_ROOT and DMEMFS_4K_MOUNT,
 * DMEMFS_2M_MOUNT and DMEMFS_1G_MOUNT.
 */
DmemConfig *dmem_config_load(GError **error);
DmemConfig *dmem_config_load_file(const char *path, gboolean apply_env, GError **error);
void dmem_config_free(DmemConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DmemConfig, dmem_config_free)
/* mount for a page size: the named one if it is configured, else the first */
const char *dmem_config_mount(const DmemConfig *cfg, guint64 pagesize, const char *wanted,
			      GError **error);
/*
 * Every configured mount, 4K first, each page size's in configuration order:
 *
 *	DmemMountIter it = { 0 };
 *	while (dmem_config_next_mount(cfg, &it))
 *		use(it.path, it.pagesize);
 */
typedef struct {
	int i;
	guint j;
	const char *path;
	guint64 pagesize;
} DmemMountIter;
gboolean dmem_config_next_mount(const DmemConfig *cfg, DmemMountIter *it);
gboolean dmem_config_qemu_ids(const DmemConfig *cfg, uid_t *uid, gid_t *gid, GError **error);

/* ---- pool statistics ------------------------------------------------- */
/*
 * One sysfs value, a plain decimal u64 with an optional trailing newline
 * (as the kernel prints "%llu\n").  ABSENT: there is no such file (the
 * kernel does not have it), @error untouched; ERROR: it cannot be read,
 * or holds anything else (empty, blanks, a sign, a unit, more than 2^64 - 1).
 */
typedef enum {
	DMEM_SYSFS_ABSENT,
	DMEM_SYSFS_OK,
	DMEM_SYSFS_ERROR,
} DmemSysfsRead;
DmemSysfsRead dmem_sysfs_u64(const char *path, guint64 *value, GError **error);

/* the counters a kernel may not have: DmemNodeStat.present */
typedef enum {
	DMEM_STAT_REQUESTED = 1 << 0,
	DMEM_STAT_PINNED = 1 << 1,
	DMEM_STAT_POISONED = 1 << 2,
	DMEM_STAT_ZEROED = 1 << 3,
} DmemStatField;

typedef struct {
	guint node;
	guint64 total_bytes, free_bytes, used_bytes;
	/* where the kernel does not have the file: 0, and its bit not in present */
	guint64 requested_bytes; /* what dmem= asked */
	guint64 pinned_bytes;    /* pinned by devices and KVM */
	guint64 poisoned_bytes;  /* quarantined after memory errors */
	guint64 zeroed_bytes;    /* free dmem the kernel zeroed in the background */
	guint present;           /* DmemStatField: the counters the kernel reports */
} DmemNodeStat;

/* All nodeN directories under root, sorted by node. */
GArray *dmem_stats_read(const char *root, GError **error);
/* free bytes of node, 0 if the node has no dmem */
guint64 dmem_stats_free(const GArray *stats, guint node);

/* ---- dmemfs files ------------------------------------------------------ */
typedef struct {
	/* the directory fd is on a dmemfs with f_bsize == pagesize */
	gboolean (*check_fs)(int dirfd, guint64 pagesize, GError **error);
	/* allocate every dpage of fd (already sized) under pol */
	gboolean (*preallocate)(int fd, guint64 size, guint64 pagesize, const DmemPolicy *pol,
				GError **error);
} DmemfsOps;

extern const DmemfsOps dmemfs_real_ops;

gboolean dmemfs_real_check_fs(int dirfd, guint64 pagesize, GError **error);
/* fallocate under the task policy, falling back to dmem_populate on EOPNOTSUPP */
gboolean dmemfs_real_preallocate(int fd, guint64 size, guint64 pagesize, const DmemPolicy *pol,
				 GError **error);
/* mmap MAP_SHARED + mbind + MADV_POPULATE_WRITE or one touch per page, munmap */
gboolean dmem_populate(int fd, guint64 size, guint64 pagesize, const DmemPolicy *pol,
		       GError **error);
/* policy -> mode/nodemask for mbind/set_mempolicy */
int dmem_policy_to_mpol(const DmemPolicy *pol, unsigned long *mask, unsigned long *maxnode);

/*
 * Create dirfd/name (O_EXCL, no symlinks), owned uid:gid, mode 0600, sized
 * and, with populate, preallocated under pol.  On failure nothing is left
 * behind.
 */
gboolean dmem_create_file(int dirfd, const char *name, guint64 size, gboolean populate,
			  guint64 pagesize, const DmemPolicy *pol, uid_t uid, gid_t gid,
			  const DmemfsOps *ops, GError **error);
/* ---- small helpers ------------------------------------------------------ */
/* canonical lowercase UUID, or NULL if s is not one */
char *dmem_uuid_normalize(const char *s);
/* a backend id we are willing to use as a file name */
gboolean dmem_backend_id_valid(const char *id);
/* read all of fd up to max bytes */
gboolean dmem_read_all(int fd, gsize max, char **buf, gsize *len, GError **error);
/* round up to a multiple of align (power of two); FALSE on overflow */
gboolean dmem_round_up(guint64 v, guint64 align, guint64 *out);
/*
 * @text (NULL: "") as one line of valid UTF-8 that shows as it reads: each
 * line trimmed, the empty ones dropped, the others joined by @sep; any
 * other control character (C0, DEL, C1), format character (bidi
 * overrides) or line or paragraph separator a blank; cut to
 * DMEM_LINE_SHOWN bytes, marked "...".  Domain XML reaches error
 * messages, and libvirt shows the hook's stderr to its client and logs.
 */
#define DMEM_LINE_SHOWN 2048
char *dmem_one_line(const char *text, const char *sep);

/* ---- a program's failure ----------------------------------------------- */
/*
 * The one line a program says a failure with: "@prefix: message" on
 * stderr, the message folded into one line (dmem_one_line(), "; "),
 * written at once.  Returns @code, the exit status to use:
 *
 *	return dmem_cli_fail("dmemfs-host-setup", 2, "say mount, up or down");
 */
int dmem_cli_fail(const char *prefix, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
int dmem_cli_failv(const char *prefix, int code, const char *fmt, va_list ap)
	G_GNUC_PRINTF(3, 0);
/* @error's message, exit status 1 */
int dmem_cli_error(const char *prefix, const GError *error);

/* ---- running a program ------------------------------------------------ */
/*
 * Run @argv (argv[0] looked up in PATH unless it holds a '/'), no shell,
 * stdin from /dev/null; its stdout into *@out when @out is not NULL
 * (discarded otherwise), only on success.  A failure to start it, a
 * non-zero exit or a signal: FALSE, and @error names the whole command
 * (each argument quoted as a shell would need it, cut at 1 KiB), how it
 * ended, and its stderr folded into one line (cut at 512 bytes):
 *
 *	kexec -l /boot/vmlinuz '--command-line=a b': exit status 1: Cannot ...
 */
gboolean dmem_run(const char *const *argv, char **out, GError **error);

#endif
