// SPDX-License-Identifier: GPL-2.0-or-later
/* libdmemfs-host: page sizes, nodesets, config, sysfs stats, files. */
#include "aaprofile.h"
#include "dmem-xml.h"
#include "nodepool.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <numaif.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_pagesize(void)
{
	guint64 v = 0;

	g_assert_true(dmem_pagesize_parse("4K", &v));
	g_assert_cmpuint(v, ==, 4096);
	g_assert_true(dmem_pagesize_parse("2M", &v));
	g_assert_cmpuint(v, ==, 2097152);
	g_assert_true(dmem_pagesize_parse("1G", &v));
	g_assert_cmpuint(v, ==, 1073741824);
	g_assert_false(dmem_pagesize_parse("2m", &v));
	g_assert_false(dmem_pagesize_parse("8K", &v));
	g_assert_false(dmem_pagesize_parse("", &v));
	g_assert_cmpstr(dmem_pagesize_name(1ULL << 30), ==, "1G");
	g_assert_null(dmem_pagesize_name(12345));
}

static char *ns_str(const char *in)
{
	DmemNodeset s;
	g_autoptr(GError) e = NULL;

	if (!dmem_nodeset_parse(in, &s, &e))
		return g_strdup("ERR");
	return dmem_nodeset_format(&s);
}

/* libvirt 9.0 virBitmapParse semantics (checked with virsh: "^2-3" fails) */
static void test_nodeset(void)
{
	const struct { const char *in, *out; } cases[] = {
		{ "0", "0" },
		{ "0-3", "0-3" },
		{ "0-3,^2", "0-1,3" },
		{ "0-3,^0,^3", "1-2" },
		{ "^2,0-3", "0-3" },          /* applied left to right */
		{ " 1 , 3 - 4 ", "1,3-4" },   /* spaces around items */
		{ "5,2,2", "2,5" },
		{ "1023", "1023" },
		{ "0,^5000", "0" },           /* clearing beyond the mask is ignored */
		{ "1024", "ERR" },            /* VIR_DOMAIN_CPUMASK_LEN */
		{ "0-3,^2-3", "ERR" },        /* no negated ranges */
		{ "3-1", "ERR" },
		{ "0,^0", "ERR" },            /* empty result */
		{ "", "ERR" },
		{ "a", "ERR" },
		{ "1,", "1" },                /* libvirt accepts a trailing comma */
		{ "-1", "ERR" },
		{ "1;2", "ERR" },
		{ "99999999999", "ERR" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *got = ns_str(cases[i].in);

		g_assert_cmpstr(got, ==, cases[i].out);
	}
}

static void test_uuid_and_ids(void)
{
	g_autofree char *u = dmem_uuid_normalize("8F6D3C2A-1B4E-4C5D-9A7F-0E1D2C3B4A59");

	g_assert_cmpstr(u, ==, "8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59");
	g_assert_null(dmem_uuid_normalize("../../etc/passwd"));
	g_assert_null(dmem_uuid_normalize("8f6d3c2a1b4e4c5d9a7f0e1d2c3b4a59"));
	g_assert_true(dmem_backend_id_valid("ram-node0"));
	g_assert_true(dmem_backend_id_valid("pc.ram"));
	g_assert_true(dmem_backend_id_valid("memua-extra_1"));
	g_assert_false(dmem_backend_id_valid(".."));
	g_assert_false(dmem_backend_id_valid("a/b"));
	g_assert_false(dmem_backend_id_valid(""));
	g_assert_false(dmem_backend_id_valid(NULL));
}

static void test_config_defaults(void)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(DmemConfig) c = dmem_config_load_file("/nonexistent/dmemfs-host.conf", FALSE, &e);

	g_assert_no_error(e);
	g_assert_cmpstr(c->qemu_binary, ==, "/usr/bin/qemu-system-x86_64");
	g_assert_cmpstr(c->qemu_user, ==, "libvirt-qemu");
	g_assert_cmpstr(c->sysfs_root, ==, "/sys/kernel/mm/dmem");
	g_assert_cmpstr(g_ptr_array_index(c->mounts[1], 0), ==, "/run/dmemfs/2M");
	g_assert_cmpuint(c->default_pagesize, ==, 2 << 20);
	g_assert_cmpint(c->confinement, ==, DMEM_CONFINE_APPARMOR); /* fail closed */
}

static void test_config_file_and_env(void)
{
	g_autoptr(TestTree) t = test_tree_new("/opt/qemu/bin/qemu-system-x86_64");
	g_autoptr(GError) e = NULL;
	g_autoptr(DmemConfig) c = NULL;
	g_autofree char *p = g_build_filename(t->dir, "multi.conf", NULL);
	const char *m;

	g_assert_cmpstr(t->cfg->qemu_binary, ==, "/opt/qemu/bin/qemu-system-x86_64");
	g_assert_cmpstr(t->cfg->sysfs_root, ==, t->sysfs);
	g_assert_true(g_file_set_contents(p,
		"[mounts]\n2M=/mnt/a/;/mnt/b\n[qemu]\nuser=qemu\n[wrapper]\ndefault_pagesize=1G\n",
		-1, NULL));
	g_setenv("DMEMFS_SYSFS_ROOT", "/tmp/fake-sysfs", TRUE);
	g_setenv("DMEMFS_1G_MOUNT", "/tmp/one-g", TRUE);
	c = dmem_config_load_file(p, TRUE, &e);
	g_unsetenv("DMEMFS_SYSFS_ROOT");
	g_unsetenv("DMEMFS_1G_MOUNT");
	g_assert_no_error(e);
	g_assert_cmpuint(c->mounts[1]->len, ==, 2);
	g_assert_cmpstr(g_ptr_array_index(c->mounts[1], 0), ==, "/mnt/a");
	g_assert_cmpstr(c->sysfs_root, ==, "/tmp/fake-sysfs");
	g_assert_cmpstr(g_ptr_array_index(c->mounts[2], 0), ==, "/tmp/one-g");
	g_assert_cmpuint(c->default_pagesize, ==, 1 << 30);
	/* the XML may only pick a configured mount */
	m = dmem_config_mount(c, 2 << 20, NULL, &e);
	g_assert_cmpstr(m, ==, "/mnt/a");
	m = dmem_config_mount(c, 2 << 20, "/mnt/b/./", &e);
	g_assert_cmpstr(m, ==, "/mnt/b");
	m = dmem_config_mount(c, 2 << 20, "/mnt/a/../../etc", &e);
	g_assert_null(m);
	g_assert_error(e, DMEM_ERROR, DMEM_ERROR_FAILED);
	g_clear_error(&e);
	m = dmem_config_mount(c, 2 << 20, "relative", &e);
	g_assert_null(m);
}

static void test_config_errors(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	const char *bad[] = {
		"[mounts]\n2M=relative/path\n",
		"[qemu]\nbinary=qemu-system-x86_64\n",
		"[wrapper]\ndefault_pagesize=3M\n",
		"this is not a key file\n",
		"[mounts]\n2m=/run/dmemfs/2M\n",			/* misspelt */
		"[mounts]\n2M=/run/dmemfs/2M\n2M=/srv/2M\n",		/* twice */
		"[qemu]\nuser=a\n[qemu]\nuser=b\n",			/* twice, two groups */
		"[mount]\n2M=/run/dmemfs/2M\n",			/* unknown group */
		"[qemu]\nconfinement=selinux\n",
		"[qemu]\nconfinement=\n",
	};

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *p = g_strdup_printf("%s/bad%u.conf", t->dir, i);
		g_autoptr(GError) e = NULL;
		g_autoptr(DmemConfig) c = NULL;

		g_assert_true(g_file_set_contents(p, bad[i], -1, NULL));
		c = dmem_config_load_file(p, FALSE, &e);
		g_assert_null(c);
		g_assert_nonnull(e);
		g_assert_nonnull(strstr(e->message, p));
	}
}

static void test_config_qemu_ids(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(GError) e = NULL;
	uid_t u;
	gid_t g;

	g_assert_true(dmem_config_qemu_ids(t->cfg, &u, &g, &e));
	g_assert_cmpuint(u, ==, getuid());
	g_assert_cmpuint(g, ==, getgid());
	g_free(t->cfg->qemu_user);
	t->cfg->qemu_user = g_strdup("no-such-user-dmemfs");
	g_assert_false(dmem_config_qemu_ids(t->cfg, &u, &g, &e));
	g_assert_nonnull(strstr(e->message, "no-such-user-dmemfs"));
}

static void test_stats(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(GArray) s = NULL;
	g_autofree char *junk = g_build_filename(t->sysfs, "nodeX", NULL);
	g_autofree char *pinned = g_build_filename(t->sysfs, "node1", "pinned_bytes", NULL);
	g_autofree char *poisoned = g_build_filename(t->sysfs, "node1", "poisoned_bytes", NULL);
	g_autofree char *bad = NULL;

	test_tree_set_node(t, 1, 8ULL << 30, 6ULL << 30);
	test_tree_set_node(t, 0, 4ULL << 30, 1ULL << 30);
	g_mkdir(junk, 0755); /* ignored */
	/* optional files: 0, and not present, where the kernel does not have them */
	test_tree_set_stat(t, 1, "requested_bytes", 9ULL << 30);
	test_tree_set_stat(t, 1, "zeroed_bytes", 0);
	g_assert_true(g_file_set_contents(pinned, "2097152\n", -1, NULL));
	g_assert_true(g_file_set_contents(poisoned, "4096\n", -1, NULL));
	s = dmem_stats_read(t->sysfs, &e);
	g_assert_no_error(e);
	g_assert_cmpuint(s->len, ==, 2);
	g_assert_cmpuint(g_array_index(s, DmemNodeStat, 0).node, ==, 0);
	g_assert_cmpuint(g_array_index(s, DmemNodeStat, 0).requested_bytes, ==, 0);
	g_assert_cmpuint(g_array_index(s, DmemNodeStat, 0).pinned_bytes, ==, 0);
	g_assert_cmpuint(g_array_index(s, DmemNodeStat, 1).used_bytes, ==, 2ULL << 30);
	g_assert_cmpuint(g_array_index(s, DmemNodeStat, 1).requested_bytes, ==, 9ULL << 30);
	g_assert_cmpuint(g_array_index(s, DmemNodeStat, 1).pinned_bytes, ==, 2097152);
	g_assert_cmpuint(g_array_index(s, DmemNodeStat, 1).poisoned_bytes, ==, 4096);
	/* zeroed_bytes 0 is "none clean yet", unlike a kernel without it */
	g_assert_cmpuint(g_array_index(s, DmemNodeStat, 0).present, ==, 0);
	g_assert_cmpuint(g_array_index(s, DmemNodeStat, 1).present, ==,
			 DMEM_STAT_REQUESTED | DMEM_STAT_PINNED | DMEM_STAT_POISONED |
			 DMEM_STAT_ZEROED);
	g_assert_cmpuint(g_array_index(s, DmemNodeStat, 1).zeroed_bytes, ==, 0);
	g_assert_cmpuint(dmem_stats_free(s, 1), ==, 6ULL << 30);
	g_assert_cmpuint(dmem_stats_free(s, 7), ==, 0);
	g_clear_pointer(&s, g_array_unref);

	bad = g_build_filename(t->sysfs, "node0", "free_bytes", NULL);
	g_assert_true(g_file_set_contents(bad, "12abc\n", -1, NULL));
	s = dmem_stats_read(t->sysfs, &e);
	g_assert_null(s);
	g_assert_nonnull(strstr(e->message, "node0/free_bytes: not a decimal count: '12abc\\n'"));
	g_clear_error(&e);
	/* an optional counter that is there but garbled is an error, not a 0 */
	g_assert_true(g_file_set_contents(bad, "4096\n", -1, NULL));
	g_assert_true(g_file_set_contents(pinned, "-1\n", -1, NULL));
	s = dmem_stats_read(t->sysfs, &e);
	g_assert_null(s);
	g_assert_nonnull(e);
	g_assert_nonnull(strstr(e->message, "node1/pinned_bytes: not a decimal count"));
	g_clear_error(&e);
	/* a counter every kernel has, missing */
	g_assert_true(g_file_set_contents(pinned, "0\n", -1, NULL));
	g_assert_cmpint(g_unlink(bad), ==, 0);
	s = dmem_stats_read(t->sysfs, &e);
	g_assert_null(s);
	g_assert_nonnull(e);
	g_assert_nonnull(strstr(e->message, "node0/free_bytes: No such file or directory"));
	g_clear_error(&e);
	s = dmem_stats_read("/nonexistent/dmem", &e);
	g_assert_null(s);
	g_assert_nonnull(e);
}

/* one sysfs value: absent, a plain decimal u64, or an error */
static void test_sysfs_u64(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *p = g_build_filename(t->dir, "value", NULL);
	const struct {
		const char *text;
		DmemSysfsRead want;
		guint64 value;
	} cases[] = {
		{ "0\n", DMEM_SYSFS_OK, 0 },
		{ "0", DMEM_SYSFS_OK, 0 },
		{ "4096\n", DMEM_SYSFS_OK, 4096 },
		{ "18446744073709551615\n", DMEM_SYSFS_OK, G_MAXUINT64 },
		{ "00012\n", DMEM_SYSFS_OK, 12 },
		/* a count is at most 32 bytes: zeros past them are no count */
		{ "0000000000000000000000000000012\n", DMEM_SYSFS_OK, 12 },
		{ "00000000000000000000000000000000012\n", DMEM_SYSFS_ERROR, 0 },
		{ "18446744073709551616\n", DMEM_SYSFS_ERROR, 0 }, /* 2^64 */
		{ "99999999999999999999\n", DMEM_SYSFS_ERROR, 0 },
		{ "123456789012345678901234567890123456789\n", DMEM_SYSFS_ERROR, 0 },
		{ "12x", DMEM_SYSFS_ERROR, 0 },
		{ "12x\n", DMEM_SYSFS_ERROR, 0 },
		{ "", DMEM_SYSFS_ERROR, 0 },
		{ "\n", DMEM_SYSFS_ERROR, 0 },
		{ " 12\n", DMEM_SYSFS_ERROR, 0 },
		{ "12 \n", DMEM_SYSFS_ERROR, 0 },
		{ "12\n\n", DMEM_SYSFS_ERROR, 0 },
		{ "+12\n", DMEM_SYSFS_ERROR, 0 },
		{ "-1\n", DMEM_SYSFS_ERROR, 0 },
		{ "0x10\n", DMEM_SYSFS_ERROR, 0 },
	};
	g_autoptr(GError) e = NULL;
	guint64 v = 7;

	/* absent: no error, the value untouched */
	g_assert_cmpint(dmem_sysfs_u64(p, &v, &e), ==, DMEM_SYSFS_ABSENT);
	g_assert_no_error(e);
	g_assert_cmpuint(v, ==, 7);
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *shown = g_strescape(cases[i].text, NULL);

		g_test_message("'%s'", shown);
		g_assert_true(g_file_set_contents(p, cases[i].text, -1, NULL));
		v = 7;
		g_assert_cmpint(dmem_sysfs_u64(p, &v, &e), ==, cases[i].want);
		if (cases[i].want == DMEM_SYSFS_OK) {
			g_assert_no_error(e);
			g_assert_cmpuint(v, ==, cases[i].value);
		} else {
			g_assert_error(e, DMEM_ERROR, DMEM_ERROR_FAILED);
			g_assert_true(g_str_has_prefix(e->message, p));
			g_assert_null(strchr(e->message, '\n'));
			g_assert_cmpuint(v, ==, 7);
			g_clear_error(&e);
		}
	}
	/* there but unreadable as a value: a directory */
	g_assert_cmpint(g_unlink(p), ==, 0);
	g_assert_cmpint(g_mkdir(p, 0700), ==, 0);
	g_assert_cmpint(dmem_sysfs_u64(p, &v, &e), ==, DMEM_SYSFS_ERROR);
	g_assert_nonnull(e);
	g_clear_error(&e);
	/* a path through a file is an error too, not an absent value */
	{
		g_autofree char *through = g_build_filename(t->conf, "x", NULL);

		g_assert_cmpint(dmem_sysfs_u64(through, &v, &e), ==, DMEM_SYSFS_ERROR);
		g_assert_nonnull(e);
	}
}

static guint fake_calls;
static guint fake_fail_at; /* 1-based call that fails, 0 = never */

static gboolean fake_check(int dirfd, guint64 pagesize, GError **error)
{
	(void)dirfd; (void)pagesize; (void)error;
	return TRUE;
}

static gboolean fake_prealloc(int fd, guint64 size, guint64 pagesize, const DmemPolicy *pol,
			      GError **error)
{
	struct stat st;

	(void)pagesize; (void)pol;
	fake_calls++;
	g_assert_true(fstat(fd, &st) == 0 && (guint64)st.st_size == size);
	if (fake_calls == fake_fail_at) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_NO_SPACE, "fake: out of dpages");
		return FALSE;
	}
	return TRUE;
}

static const DmemfsOps fake_ops = { fake_check, fake_prealloc };

static void test_create_file(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(GError) e = NULL;
	DmemPolicy pol = { DMEM_POLICY_BIND, { { 1 } } };
	int dfd = open(t->mounts[1], O_RDONLY | O_DIRECTORY);
	g_autofree char *p = g_build_filename(t->mounts[1], "f", NULL);
	g_autofree char *link = g_build_filename(t->mounts[1], "l", NULL);
	struct stat st;

	fake_calls = 0;
	fake_fail_at = 0;
	umask(022);
	g_assert_true(dmem_create_file(dfd, "f", 4 << 20, TRUE, 2 << 20, &pol, getuid(), getgid(),
				       &fake_ops, &e));
	g_assert_no_error(e);
	g_assert_cmpint(stat(p, &st), ==, 0);
	g_assert_cmpuint(st.st_size, ==, 4 << 20);
	g_assert_cmpuint(st.st_mode & 07777, ==, 0600);
	g_assert_cmpuint(st.st_uid, ==, getuid());
	/* O_EXCL: never reuses an existing file */
	g_assert_false(dmem_create_file(dfd, "f", 4 << 20, TRUE, 2 << 20, &pol, getuid(), getgid(),
					&fake_ops, &e));
	g_clear_error(&e);
	/* a failing preallocation leaves nothing */
	fake_fail_at = 2;
	g_assert_false(dmem_create_file(dfd, "g", 2 << 20, TRUE, 2 << 20, &pol, getuid(), getgid(),
					&fake_ops, &e));
	g_assert_error(e, DMEM_ERROR, DMEM_ERROR_NO_SPACE);
	g_assert_cmpint(test_count_entries(t->mounts[1]), ==, 1);
	/* a planted symlink is not followed */
	g_clear_error(&e);
	g_assert_cmpint(symlink("/tmp/dmemfs-should-not-exist", link), ==, 0);
	g_assert_false(dmem_create_file(dfd, "l", 2 << 20, TRUE, 2 << 20, &pol, getuid(), getgid(),
					&fake_ops, &e));
	g_assert_false(g_file_test("/tmp/dmemfs-should-not-exist", G_FILE_TEST_EXISTS));
	close(dfd);
}

static void test_remove_domain_dir(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(GError) e = NULL;
	const char *u = "8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59";
	g_autofree char *d = dmem_domain_path(t->mounts[0], u, NULL);
	g_autofree char *f = g_build_filename(d, "ram-node0", NULL);
	int mfd = open(t->mounts[0], O_RDONLY | O_DIRECTORY);

	g_assert_true(dmem_remove_domain_dir(mfd, u, &e)); /* absent: fine */
	g_mkdir(d, 0700);
	g_assert_true(g_file_set_contents(f, "x", 1, NULL));
	g_chmod(d, 0710);
	g_assert_true(dmem_remove_domain_dir(mfd, u, &e));
	g_assert_no_error(e);
	g_assert_false(g_file_test(d, G_FILE_TEST_EXISTS));
	g_assert_true(dmem_remove_domain_dir(mfd, u, &e)); /* again */
	close(mfd);
}

/*
 * The carried mark counts only in the domain's own directory: a
 * <mount>/libvirt-<uuid> that is a symlink to a marked directory is not marked,
 * as the files are never created through one.
 */
static void test_mark_no_symlink(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	const char *u = "8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59";
	const char *other = "0b7c6d3e-5f1a-4e2b-9c8d-7a6b5c4d3e2f";
	g_autofree char *real = dmem_domain_path(t->mounts[0], other, NULL);
	g_autofree char *target = dmem_domain_dirname(other);
	g_autofree char *mark = g_build_filename(real, DMEM_CARRIED_MARK, NULL);
	g_autofree char *link = dmem_domain_path(t->mounts[0], u, NULL);
	int mfd = open(t->mounts[0], O_RDONLY | O_DIRECTORY);

	g_assert_cmpint(mfd, >=, 0);
	g_assert_cmpint(getuid(), ==, 0); /* the mark counts only when root owns it */
	g_assert_cmpint(g_mkdir(real, 0700), ==, 0);
	g_assert_true(g_file_set_contents(mark, "", 0, NULL));
	g_assert_true(dmem_domain_marked(mfd, other));
	g_assert_cmpint(symlink(target, link), ==, 0);
	g_assert_false(dmem_domain_marked(mfd, u));
	g_assert_false(dmem_domain_carried(t->cfg, mfd, u));
	g_assert_true(g_file_test(mark, G_FILE_TEST_EXISTS)); /* not touched through it */

	/*
	 * The wrapper runs as the qemu user, who may search the domain's
	 * directory but not list it: the mark is still seen.
	 */
	g_assert_cmpint(g_chmod(real, 0711), ==, 0);
	pid_t pid = fork();

	if (pid == 0)
		_exit(setuid(65534) || !dmem_domain_marked(mfd, other));
	int status = -1;

	g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
	g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(mfd);
}

/* the populate fallback, for real, on a tmpfs file: mmap + mbind + touch */
static void test_populate_tmpfs(void)
{
	char path[] = "/dev/shm/dmemfs-populate-XXXXXX";
	g_autoptr(GError) e = NULL;
	DmemPolicy none = { 0 }, bind = { DMEM_POLICY_BIND, { { 0 } } };
	unsigned long mask[DMEM_MAX_NODES / 64], maxnode;
	struct stat st;
	int fd = mkstemp(path);

	if (fd < 0) {
		g_test_skip("no /dev/shm");
		return;
	}
	unlink(path);
	g_assert_cmpint(ftruncate(fd, 8 << 20), ==, 0);
	g_assert_true(dmem_populate(fd, 8 << 20, 2 << 20, &none, &e));
	g_assert_no_error(e);
	g_assert_cmpint(fstat(fd, &st), ==, 0);
	g_assert_cmpuint((guint64)st.st_blocks * 512, >=, 8 << 20); /* pages allocated */
	dmem_nodeset_set(&bind.nodes, 0);
	g_assert_cmpint(dmem_policy_to_mpol(&bind, mask, &maxnode), ==, MPOL_BIND);
	g_assert_cmpuint(mask[0], ==, 1);
	g_assert_cmpuint(maxnode, ==, DMEM_MAX_NODES + 1);
	g_assert_true(dmem_populate(fd, 8 << 20, 4096, &bind, &e));
	g_assert_no_error(e);
	/* the real preallocate: tmpfs supports fallocate */
	g_assert_true(dmemfs_real_preallocate(fd, 8 << 20, 4096, &bind, &e));
	g_assert_no_error(e);
	/* and the real fs check refuses tmpfs */
	g_assert_false(dmemfs_real_check_fs(fd, 4096, &e));
	g_assert_nonnull(strstr(e->message, "not a dmemfs"));
	close(fd);
}

/*
 * The carry state: a domain listed survives a save and a load; an empty
 * state is no file; a bad version, an unknown section, a section that is
 * not a UUID or an image outside the state directory is refused whole.
 */
static void test_carry_state(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(DmemCarry) c = dmem_carry_load(t->cfg, &e);
	g_autoptr(GPtrArray) doms = NULL;
	g_autofree char *path = NULL, *img = NULL, *src = NULL;
	static const char *const bad[] = {
		"[liveupdate]\nversion=2\n",
		"[liveupdate]\n",
		"[liveupdate]\nversion=1\n[evil]\nx=1\n",
		"[liveupdate]\nversion=1\n[domain ../../etc]\nname=x\n",
		"[liveupdate]\nversion=1\n[domain 0B7C6D3E-5F1A-4E2B-9C8D-7A6B5C4D3E2F]\nname=x\n",
		"[liveupdate]\nversion=1\n[domain 0b7c6d3e-5f1a-4e2b-9c8d-7a6b5c4d3e2f]\nimage=/etc/shadow\n",
		"not a key file",
	};
	const char *u = "0b7c6d3e-5f1a-4e2b-9c8d-7a6b5c4d3e2f";
	struct stat st;

	g_assert_no_error(e);
	path = g_strdup(dmem_carry_path(c));
	g_assert_false(dmem_carry_has(c, u));
	g_assert_true(dmem_carry_save(c, &e));
	g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS)); /* nothing carried: no file */
	img = dmem_carry_image(c, u);
	dmem_carry_set(c, u, "name", "vm1");
	dmem_carry_set(c, u, "image", img);
	dmem_carry_set_mount(c, "/run/dmemfs/2M", "0x100000000", "tenant-a");
	g_assert_true(dmem_carry_save(c, &e));
	g_assert_no_error(e);
	g_assert_cmpint(stat(path, &st), ==, 0);
	g_assert_cmpint(st.st_mode & 0777, ==, 0600);
	g_clear_pointer(&c, dmem_carry_free);
	c = dmem_carry_load(t->cfg, &e);
	g_assert_no_error(e);
	doms = dmem_carry_domains(c);
	g_assert_cmpuint(doms->len, ==, 1);
	g_assert_cmpstr(g_ptr_array_index(doms, 0), ==, u);
	g_assert_cmpint(dmem_carry_lists(t->cfg, u), ==, 1);
	g_assert_true(dmem_carry_mount(c, "/run/dmemfs/2M", &src));
	g_assert_cmpstr(src, ==, "tenant-a");
	g_assert_false(dmem_carry_mount(c, "/run/dmemfs/1G", NULL));
	dmem_carry_remove(c, u);
	g_assert_true(dmem_carry_save(c, &e));
	g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
	g_assert_cmpint(dmem_carry_lists(t->cfg, u), ==, 0);
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(DmemCarry) b = NULL;
		g_autoptr(GError) be = NULL;

		g_assert_true(g_file_set_contents(path, bad[i], -1, NULL));
		b = dmem_carry_load(t->cfg, &be);
		g_assert_null(b);
		g_assert_nonnull(be);
		g_assert_nonnull(strstr(be->message, "not a dmem-liveupdate state"));
		g_assert_null(strchr(be->message, '\n'));
		g_assert_cmpint(dmem_carry_lists(t->cfg, u), ==, -1);	/* unknown, not "no" */
	}
	unlink(path);
}

/* The one QMP command for x-ignore-shared, as JSON QEMU takes it. */
static void test_qmp_ignore_shared(void)
{
	for (int on = 0; on < 2; on++) {
		g_autofree char *cmd = dmem_qmp_ignore_shared(on);
		g_autoptr(JsonParser) p = json_parser_new();
		g_autoptr(GError) e = NULL;
		JsonObject *o, *cap;
		JsonArray *caps;

		g_assert_true(json_parser_load_from_data(p, cmd, -1, &e));
		g_assert_no_error(e);
		o = json_node_get_object(json_parser_get_root(p));
		g_assert_cmpstr(json_object_get_string_member(o, "execute"), ==,
				"migrate-set-capabilities");
		caps = json_object_get_array_member(json_object_get_object_member(o, "arguments"),
						    "capabilities");
		g_assert_cmpuint(json_array_get_length(caps), ==, 1);
		cap = json_array_get_object_element(caps, 0);
		g_assert_cmpstr(json_object_get_string_member(cap, "capability"), ==,
				"x-ignore-shared");
		g_assert_cmpint(json_object_get_boolean_member(cap, "state"), ==, on);
	}
}

/* util: typed getters on untrusted XML; absent is not zero, bad is not absent */
static void test_xml_getters(void)
{
	static const char doc[] = "<r><a> 7 </a><z>0</z><b>x</b><c/><n k='v'>t</n><n/></r>";
	g_autoptr(GError) e = NULL;
	g_autoptr(DmemXml) x = dmem_xml_parse(doc, strlen(doc), "test XML", "r", &e);
	g_autoptr(GPtrArray) ns = NULL;
	g_autofree char *a = NULL, *k = NULL;
	guint64 v = 99;

	g_assert_no_error(e);
	a = dmem_xml_string(x, NULL, "./a");
	g_assert_cmpstr(a, ==, "7");
	g_assert_null(dmem_xml_string(x, NULL, "./c"));    /* empty */
	g_assert_null(dmem_xml_string(x, NULL, "./none")); /* absent */
	g_assert_cmpint(dmem_xml_u64(x, NULL, "./a", 10, &v, NULL), ==, 1);
	g_assert_cmpuint(v, ==, 7);
	g_assert_cmpint(dmem_xml_u64(x, NULL, "./z", 10, &v, NULL), ==, 1);
	g_assert_cmpuint(v, ==, 0);
	v = 99;
	g_assert_cmpint(dmem_xml_u64(x, NULL, "./none", 10, &v, NULL), ==, 0);
	g_assert_cmpuint(v, ==, 99);
	g_assert_cmpint(dmem_xml_u64(x, NULL, "./b", 10, &v, &e), ==, -1);
	g_assert_nonnull(strstr(e->message, "'x'"));
	g_clear_error(&e);
	g_assert_cmpint(dmem_xml_u64(x, NULL, "./a", 6, &v, NULL), ==, -1); /* above max */
	ns = dmem_xml_nodes(x, NULL, "./n");
	g_assert_cmpuint(ns->len, ==, 2);
	k = dmem_xml_prop(g_ptr_array_index(ns, 0), "k");
	g_assert_cmpstr(k, ==, "v");
	g_assert_null(dmem_xml_prop(g_ptr_array_index(ns, 1), "k"));
	g_assert_null(dmem_xml_node(x, NULL, "./none"));
}

static void test_xml_refusals(void)
{
	static const struct {
		const char *doc, *why;
	} bad[] = {
		{ "<r><a></r>", "malformed test XML" },
		{ "<!DOCTYPE r [<!ENTITY e 'x'>]><r>&e;</r>", "DOCTYPE not allowed" },
		{ "<q/>", "root is not <r>" },
		{ "<r xmlns='urn:x'/>", "root is not <r>" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;

		g_assert_null(dmem_xml_parse(bad[i].doc, strlen(bad[i].doc), "test XML", "r", &e));
		g_assert_nonnull(e);
		g_assert_nonnull(strstr(e->message, bad[i].why));
		g_assert_null(strchr(e->message, '\n'));
	}
	{
		g_autoptr(GError) e = NULL;

		g_assert_null(dmem_xml_parse("<r/>", DMEM_XML_MAX + 1ul, "test XML", "r", &e));
		g_assert_nonnull(strstr(e->message, "larger than"));
	}
}

/* util: every configured mount once, 4K first, each size's in config order */
static void test_config_mount_iter(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	DmemMountIter it = { 0 };
	g_autoptr(GString) seen = g_string_new(NULL);

	g_ptr_array_add(t->cfg->mounts[0], g_strdup("/m/4K-b"));
	g_ptr_array_set_size(t->cfg->mounts[1], 0); /* no 2M mount at all */
	g_ptr_array_add(t->cfg->mounts[2], g_strdup("/m/1G-b"));
	while (dmem_config_next_mount(t->cfg, &it))
		g_string_append_printf(seen, "%s %s;", dmem_pagesize_name(it.pagesize),
				       g_str_has_prefix(it.path, "/m/") ? it.path :
				       it.pagesize == dmem_pagesizes[0] ? "4K-a" : "1G-a");
	g_assert_cmpstr(seen->str, ==, "4K 4K-a;4K /m/4K-b;1G 1G-a;1G /m/1G-b;");
	g_assert_false(dmem_config_next_mount(t->cfg, &it)); /* stays done */
}

/* model: a 0.35 <mount>/<uuid> moves to <mount>/libvirt-<uuid>, its files with it */
static void test_adopt_legacy_dir(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	const char *u = "8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59";
	const char *v = "0b7c6d3e-5f1a-4e2b-9c8d-7a6b5c4d3e2f";
	g_autofree char *old = g_build_filename(t->mounts[1], u, NULL);
	g_autofree char *oldf = g_build_filename(old, "ram-node0", NULL);
	g_autofree char *newf = dmem_domain_path(t->mounts[1], u, "ram-node0");
	g_autofree char *vold = g_build_filename(t->mounts[1], v, NULL);
	g_autofree char *vnew = dmem_domain_path(t->mounts[1], v, NULL);
	g_autofree char *voldf = g_build_filename(vold, "ram-node0", NULL);
	int mfd = dmem_mount_open(t->mounts[1]);

	g_assert_cmpint(mfd, >=, 0);
	g_assert_cmpint(g_mkdir(old, 0710), ==, 0);
	g_assert_true(g_file_set_contents(oldf, "x", 1, NULL));
	g_assert_true(dmem_domain_dir_adopt(mfd, u, NULL));
	g_assert_false(g_file_test(old, G_FILE_TEST_EXISTS));
	g_assert_true(g_file_test(newf, G_FILE_TEST_IS_REGULAR));
	g_assert_true(dmem_domain_dir_adopt(mfd, u, NULL)); /* nothing left to adopt */
	g_assert_true(g_file_test(newf, G_FILE_TEST_IS_REGULAR));
	/* not root's, or a symlink: never moved */
	g_assert_cmpint(g_mkdir(vold, 0710), ==, 0);
	g_assert_cmpint(chown(vold, 65534, 65534), ==, 0);
	g_assert_true(dmem_domain_dir_adopt(mfd, v, NULL));
	g_assert_false(g_file_test(vnew, G_FILE_TEST_EXISTS));
	g_assert_cmpint(rmdir(vold), ==, 0);
	g_assert_cmpint(symlink(t->dir, vold), ==, 0);
	g_assert_true(dmem_domain_dir_adopt(mfd, v, NULL));
	g_assert_false(g_file_test(vnew, G_FILE_TEST_EXISTS));
	g_assert_cmpint(unlink(vold), ==, 0);
	/* the new name is taken, even by an empty directory (which rename would replace) */
	g_assert_cmpint(g_mkdir(vold, 0710), ==, 0);
	g_assert_true(g_file_set_contents(voldf, "x", 1, NULL));
	g_assert_cmpint(g_mkdir(vnew, 0710), ==, 0);
	{
		g_autoptr(GError) e = NULL;

		g_assert_false(dmem_domain_dir_adopt(mfd, v, &e));
		g_assert_nonnull(strstr(e->message, "exists"));
	}
	g_assert_true(g_file_test(voldf, G_FILE_TEST_IS_REGULAR));
	g_assert_true(g_file_test(vnew, G_FILE_TEST_IS_DIR));
	close(mfd);
}

/* model: <mount>/libvirt-<uuid>/<id> is built and parsed in one place */
static void test_domain_path(void)
{
	const char *u = "8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59";
	g_autofree char *p = dmem_domain_path("/run/dmemfs/2M", u, "ram-node0");
	g_autofree char *d = dmem_domain_path("/run/dmemfs/2M", u, NULL);
	g_autofree char *m = NULL, *uu = NULL;

	g_assert_cmpstr(p, ==, "/run/dmemfs/2M/libvirt-8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59/ram-node0");
	g_assert_cmpstr(d, ==, "/run/dmemfs/2M/libvirt-8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59");
	g_assert_true(dmem_domain_path_split(p, &m, &uu));
	g_assert_cmpstr(m, ==, "/run/dmemfs/2M");
	g_assert_cmpstr(uu, ==, u);
	/* a path whose parent is not libvirt-<canonical UUID> is no backend file */
	g_assert_false(dmem_domain_path_split("/run/dmemfs/2M/libvirt-x/ram-node0", &m, &uu));
	g_assert_false(dmem_domain_path_split(
		"/m/libvirt-8F6D3C2A-1B4E-4C5D-9A7F-0E1D2C3B4A59/ram-node0", &m, &uu));
	g_assert_false(dmem_domain_path_split("/m/8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59/ram-node0",
					      &m, &uu));
	g_assert_false(dmem_domain_path_split("rel/libvirt-8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59/r",
					      &m, &uu));
}

/* model: the mark goes into each mount that has the domain's directory, and out */
static void test_set_mark(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	const char *u = "8f6d3c2a-1b4e-4c5d-9a7f-0e1d2c3b4a59";
	g_autofree char *d4 = dmem_domain_path(t->mounts[0], u, NULL);
	g_autofree char *d1 = dmem_domain_path(t->mounts[2], u, NULL);
	g_autofree char *m4 = g_build_filename(d4, DMEM_CARRIED_MARK, NULL);
	g_autofree char *elsewhere = g_build_filename(t->dir, "elsewhere", NULL);
	g_autofree char *m1 = g_build_filename(elsewhere, DMEM_CARRIED_MARK, NULL);
	g_autoptr(GError) e = NULL;

	g_assert_cmpint(g_mkdir(d4, 0700), ==, 0);
	g_assert_true(dmem_domain_set_mark(t->cfg, u, TRUE, NULL));
	g_assert_true(g_file_test(m4, G_FILE_TEST_IS_REGULAR));
	g_assert_cmpint(test_count_entries(t->mounts[1]), ==, 0); /* no directory: nothing */
	g_assert_true(dmem_domain_set_mark(t->cfg, u, FALSE, NULL));
	g_assert_false(g_file_test(m4, G_FILE_TEST_EXISTS));
	/* a symlink where the domain's directory should be: an error, never followed */
	g_assert_cmpint(g_mkdir(elsewhere, 0700), ==, 0);
	g_assert_cmpint(symlink(elsewhere, d1), ==, 0);
	g_assert_false(dmem_domain_set_mark(t->cfg, u, TRUE, &e));
	g_assert_nonnull(e);
	g_assert_nonnull(strstr(e->message, u));
	g_assert_false(g_file_test(m1, G_FILE_TEST_EXISTS));
}

/* The dmem-node<N> contract: names both ways, and the pool XML read back. */
static void test_nodepool(void)
{
	const char *const bad[] = { "dmem-node", "dmem-node07", "dmem-node-1", "dmem-node1x",
				    "dmem-node1024", "xdmem-node1", "dmem-node 1", "" };
	g_autofree char *name = dmem_nodepool_name(7);
	g_autofree char *xml = dmem_nodepool_xml("/run/dmemfs-stats", 7);
	g_autofree char *opts = dmem_nodepool_mount_options(7);
	guint n = 99;

	g_assert_cmpstr(name, ==, "dmem-node7");
	g_assert_true(dmem_nodepool_parse(name, &n));
	g_assert_cmpuint(n, ==, 7);
	g_assert_true(dmem_nodepool_parse("dmem-node1023", &n));
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++)
		g_assert_false(dmem_nodepool_parse(bad[i], &n));
	g_assert_false(dmem_nodepool_parse(NULL, &n));
	g_assert_cmpstr(opts, ==, "pagesize=2M,nodes=7");
	g_assert_true(dmem_nodepool_xml_matches(xml, "/run/dmemfs-stats", 7));
	g_assert_false(dmem_nodepool_xml_matches(xml, "/run/dmemfs-stats", 6));
	g_assert_false(dmem_nodepool_xml_matches(xml, "/elsewhere", 7));
	g_assert_false(dmem_nodepool_xml_matches("<pool type='logical'><name>dmem-node7</name>"
						 "<target><path>/run/dmemfs-stats/node7</path>"
						 "</target></pool>", "/run/dmemfs-stats", 7));
	g_assert_false(dmem_nodepool_xml_matches("<pool", "/run/dmemfs-stats", 7));
	g_assert_false(dmem_nodepool_xml_matches(NULL, "/run/dmemfs-stats", 7));
}

/* an AppArmor path glob of ours as a regex: ** * ? [^...] {a,b} \x */
static GRegex *aa_glob_regex(const char *g)
{
	g_autoptr(GString) re = g_string_new("^");
	g_autoptr(GError) e = NULL;
	GRegex *r;

	for (const char *c = g; *c; c++) {
		if (c[0] == '*' && c[1] == '*') {
			g_string_append(re, ".*");
			c++;
		} else if (*c == '*') {
			g_string_append(re, "[^/]*");
		} else if (*c == '?') {
			g_string_append(re, "[^/]");
		} else if (*c == '{') {
			g_string_append(re, "(?:");
		} else if (*c == ',') {
			g_string_append(re, "|");
		} else if (*c == '}') {
			g_string_append(re, ")");
		} else if (*c == '[') {
			const char *end = strchr(c, ']');

			while (end && end[-1] == '\\')
				end = strchr(end + 1, ']');
			g_assert_nonnull(end);
			/* apparmor_parser expands an unescaped * or ? in a class */
			for (const char *k = c + 1; k < end; k++) {
				if (*k == '\\')
					k++;
				else
					g_assert_null(strchr("*?{}", *k));
			}
			g_string_append_len(re, c, end - c + 1);
			c = end;
		} else if (*c == '\\') {
			g_autofree char *one = g_regex_escape_string(c + 1, 1);

			g_string_append(re, one);
			c++;
		} else {
			g_autofree char *one = g_regex_escape_string(c, 1);

			g_string_append(re, one);
		}
	}
	g_string_append(re, "$");
	r = g_regex_new(re->str, 0, 0, &e);
	g_assert_no_error(e);
	return r;
}

/* the first deny rule of @rules that matches @path, or NULL */
static char *aa_denied(const char *rules, const char *path)
{
	g_auto(GStrv) lines = g_strsplit(rules, "\n", -1);

	for (guint i = 0; lines[i]; i++) {
		const char *q = strstr(lines[i], "deny \"");
		g_autofree char *glob = NULL;
		g_autoptr(GRegex) r = NULL;

		if (!q)
			continue;
		q += 6;
		glob = g_strndup(q, strstr(q, "\" mrwlkx,") - q);
		r = aa_glob_regex(glob);
		if (g_regex_match(r, path, 0, NULL))
			return g_strdup(lines[i]);
	}
	return NULL;
}

/*
 * The deny rules of a domain's main profile: its own files stay open to
 * it, every other dmemfs path is denied, libvirt's directory for another
 * domain's hot-added memory included.
 */
static void test_aa_deny_rules(void)
{
	const char *ua = "0a1b2c3d-0000-4000-8000-00000000000a";
	char *mounts[] = { "/run/dmemfs/2M", "/run/dmemfs/4K", "/run/dmemfs/2M", "/srv/dmem", NULL };
	char *bad[] = { "/run/dmem fs", NULL };
	g_autofree char *rules = NULL, *shortname = dmem_aa_short_name(3, "vm-a*[x]{y}");
	g_autofree char *profile = NULL;
	g_autoptr(GError) e = NULL;
	static const char *const allowed[] = {
		"/run/dmemfs/2M/libvirt-0a1b2c3d-0000-4000-8000-00000000000a/ram-node0",
		"/run/dmemfs/4K/libvirt-0a1b2c3d-0000-4000-8000-00000000000a/memdimm0",
		"/run/dmemfs/4K/libvirt/qemu/3-vm-a*[x]{y}/dimm0",
		"/run/dmemfs/4K/libvirt/qemu/3-vm-a*[x]{y}",
		"/run/dmemfs/2M/libvirt-0a1b2c3d-0000-4000-8000-00000000000a",
		"/run/other/file",
		"/run/dmemfs-stats/node0",
		"/srv/dmem/libvirt-0a1b2c3d-0000-4000-8000-00000000000a/ram-node0",
		"/srv/other",
	};
	static const char *const denied[] = {
		"/run/dmemfs/2M/libvirt-0a1b2c3d-0000-4000-8000-00000000000b/ram-node0",
		"/run/dmemfs/2M/libvirt-1a1b2c3d-0000-4000-8000-00000000000a/ram-node0",
		"/run/dmemfs/2M/libvirt-0a1b2c3d-0000-4000-8000-00000000000a0/ram-node0",
		"/run/dmemfs/2M/libvirt-0a1b2c3d-0000-4000-8000-00000000000a0",
		"/run/dmemfs/2M/libvirt-0a1b2c3d/ram-node0",
		"/run/dmemfs/2M/libvirt-0a1b2c3d",
		"/run/dmemfs/2M/libvirt-",
		"/run/dmemfs/2M/libvir/x",
		"/run/dmemfs/2M/ram-node0",
		"/run/dmemfs/2M/x/y/z",
		"/run/dmemfs/2M/",
		"/run/dmemfs/4K/libvirt/x",
		"/run/dmemfs/4K/libvirt/qemu/4-vm-b/dimm0",
		"/run/dmemfs/4K/libvirt/qemu/3-vm-a*[x]{y}z/dimm0",
		"/run/dmemfs/4K/libvirt/qemu/3-vm-a/dimm0",
		"/run/dmemfs/4K/libvirt/qemu/3-vm-aZ/dimm0",
		"/run/dmemfs/4K/libvirt/qemu/3-vm-a*[x]Z/dimm0",
		"/run/dmemfs/4K/libvirt/qemux/y",
		"/run/dmemfs/4K/libvirtx/y",
		"/run/dmemfs/8K/libvirt-0a1b2c3d-0000-4000-8000-00000000000b/ram-node0",
		"/srv/dmem/libvirt-0a1b2c3d-0000-4000-8000-00000000000b/ram-node0",
		"/srv/dmem/x",
	};

	rules = dmem_aa_deny_rules(mounts, ua, shortname, &e);
	g_assert_no_error(e);
	for (guint i = 0; i < G_N_ELEMENTS(allowed); i++) {
		g_autofree char *hit = aa_denied(rules, allowed[i]);

		if (hit)
			g_error("%s denied by %s", allowed[i], hit);
	}
	for (guint i = 0; i < G_N_ELEMENTS(denied); i++) {
		g_autofree char *hit = aa_denied(rules, denied[i]);

		if (!hit)
			g_error("%s not denied", denied[i]);
	}
	/* the mounts of /run/dmemfs share one block (one per load is costly), others have their own */
	g_assert_nonnull(strstr(rules, "deny \"/run/dmemfs/*/\""));
	g_assert_null(strstr(strstr(rules, "deny \"/run/dmemfs/*/\"") + 1, "deny \"/run/dmemfs/*/\""));
	g_assert_null(strstr(rules, "/run/dmemfs/2M"));
	g_assert_nonnull(strstr(rules, "deny \"/srv/dmem/\""));
	/*
	 * a ',' in a name is a literal, not a split of the alternation: with
	 * it bare, "a,b" denied the domain's own DIMM directory, and "a,,b"
	 * made apparmor_parser 3.0.8 spin (stop 41's second review)
	 */
	for (guint i = 0; i < 2; i++) {
		g_autofree char *sn = dmem_aa_short_name(5, i ? "a,,b" : "a,b");
		g_autofree char *r = dmem_aa_deny_rules(mounts, ua, sn, &e);
		g_autofree char *own = g_strdup_printf("/run/dmemfs/4K/libvirt/qemu/%s/dimm0", sn);
		g_autofree char *hit = NULL;

		g_assert_no_error(e);
		g_assert_null(strstr(r, ",,"));
		hit = aa_denied(r, own);
		if (hit)
			g_error("%s denied by %s", own, hit);
		g_free(hit);
		hit = aa_denied(r, "/run/dmemfs/4K/libvirt/qemu/5-a/dimm0");
		g_assert_nonnull(hit);
	}
	/* no short name (a name libvirt shortens by wide characters): no hot-added memory */
	g_clear_pointer(&rules, g_free);
	rules = dmem_aa_deny_rules(mounts, ua, NULL, &e);
	g_assert_no_error(e);
	g_assert_nonnull(aa_denied(rules, "/run/dmemfs/4K/libvirt/qemu/3-vm-a/dimm0"));
	g_assert_null(dmem_aa_short_name(1, "caf\xc3\xa9"));
	g_free(shortname);
	shortname = dmem_aa_short_name(12, "a-name-longer-than-twenty");
	g_assert_cmpstr(shortname, ==, "12-a-name-longer-than-t");
	/* a mount path an AppArmor rule cannot take as it is */
	g_assert_null(dmem_aa_deny_rules(bad, ua, NULL, &e));
	g_assert_nonnull(e);
	g_clear_error(&e);
	/* the profile virt-aa-helper -c would make, with the rules before its end */
	profile = dmem_aa_main_profile("#\n#include <tunables/global>\n\nprofile LIBVIRT_TEMPLATE "
				       "flags=(attach_disconnected) {\n  #include "
				       "<abstractions/libvirt-qemu>\n}\n", ua, "  deny /x r,\n", &e);
	g_assert_no_error(e);
	g_assert_cmpstr(profile, ==, "#\n#include <tunables/global>\n\nprofile libvirt-"
			"0a1b2c3d-0000-4000-8000-00000000000a flags=(attach_disconnected) {\n"
			"  #include <abstractions/libvirt-qemu>\n  deny /x r,\n  #include "
			"<libvirt/libvirt-0a1b2c3d-0000-4000-8000-00000000000a.files>\n}\n");
	g_assert_null(dmem_aa_main_profile("profile x {\n}\n", ua, "", &e));
	g_assert_nonnull(e);
}

/*
 * virt-aa-helper's rules against the dmemfs mounts: what a domain's XML or
 * a disk's backing chain can make it write, and what it writes for every
 * domain (which must pass).
 */
static void test_aa_rules(void)
{
	char *mounts[] = { "/run/dmemfs/2M", "/run/dmemfs/1G", "/run/dmemfs-stats/node0", NULL };
	static const char *const ok[] = {
		/* what libvirt 9.0 writes for every QEMU domain */
		"# DO NOT EDIT THIS FILE DIRECTLY. IT IS MANAGED BY LIBVIRT.\n"
		"  \"/var/log/libvirt/**/acc-1.log\" w,\n"
		"  \"/var/lib/libvirt/qemu/domain-acc-1/monitor.sock\" rw,\n"
		"  \"/var/lib/libvirt/qemu/domain-3-acc-1/*\" rw,\n"
		"  \"/run/libvirt/**/acc-1.pid\" rwk,\n"
		"  \"/var/run/libvirt/**/*.tunnelmigrate.dest.acc-1\" rw,\n"
		"  \"/var/lib/libvirt/images/l2-bzImage\" r,\n"
		"  \"/var/log/libvirt/qemu/acc-1.serial\" rw,\n"
		"  \"/sys/devices/*/*/{uevent,vendor,device}\" r,\n"
		"  deny \"/run/dmemfs/**\" rw,\n"
		"  \"/run/dmemfs\" r,\n"
		"  \"/run/dmemfs-x/y\" r,\n"
		"  \"/var/lib/libvirt/images/my disk.qcow2\" rwk,\n"
		"  allow \"/tmp/x\" r,\n"
		/* hot-added memory under a memory_backing_dir on dmemfs (README) */
		"  \"/run/dmemfs/1G/libvirt/qemu/1-vmem/{,**}\" rwk,\n"
		"  network inet stream,\n",
		"",
	};
	static const char *const bad[] = {
		"  \"/run/dmemfs/2M/libvirt-b/ram-node0\" rw,\n",	/* a serial or disk on it */
		"  \"/run/dmemfs/**\" rw,\n",				/* a glob over all guests */
		"  \"/**\" rwl,\n",					/* a 9p share of / */
		"  \"/run/**\" rwl,\n",
		"  \"/run/dmemfs/2M\" r,\n",				/* the mount itself */
		"  \"/run/*/2M/x\" rk,\n",
		"  \"/run/dmemfs/{2M,4K}/libvirt-b/ram-node0\" rk,\n",	/* braces */
		"  \"/run/dmemfs/[12]?/libvirt-b/ram-node0\" rk,\n",
		"  \"/run/dmemfs-stats/node0/x\" r,\n",
		"  /run/dmemfs/1G/libvirt-b/ram-node0 rw,\n",		/* unquoted */
		"  owner \"/run/dmemfs/1G/x\" rw,\n",
		"  audit \"/run/dmemfs/1G/x\" rw,\n",
		"  allow \"/run/dmemfs/1G/x\" rw,\n",
		"  \"/run/dmemfs/1G/libvirt/qemu/*/x\" rw,\n",		/* another domain's too */
		"  \"/run/dmemfs/1G/libvirt/qemu/**\" rw,\n",
		"  \"/run/dmemfs/1G/libvirt/qemu/1-x*/{,**}\" rw,\n",
		"  \"/run/dmemfs/1G/libvirt/x\" rw,\n",
		"  \"/run/dmemfs/1G/libvirt/qemu/\" r,\n",
		"  \"/run/dmemfs/1G/a b\" rw,\n",
		"  \"/run/lock/nonexist/../../dmemfs/2M/x\" rw,\n",	/* .. left as written */
		"  \"@{HOME}/x\" r,\n",				/* a variable */
		"  \"/run/dmemfs/2M/a\\*\" r,\n",			/* an escape */
		"  \"/run/dmemfs/2M/x{\" r,\n",				/* unbalanced */
	};

	for (guint i = 0; i < G_N_ELEMENTS(ok); i++) {
		g_autoptr(GError) e = NULL;

		g_assert_true(dmem_aa_rules_avoid(ok[i], mounts, &e));
		g_assert_no_error(e);
	}
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;
		g_autofree char *rules = g_strconcat(ok[0], bad[i], NULL);

		g_test_message("rule %s", bad[i]);
		g_assert_false(dmem_aa_rules_avoid(rules, mounts, &e));
		g_assert_nonnull(e);
		g_assert_null(strchr(e->message, '\n'));
	}
}

/*
 * The file system a path is or would be on: its nearest existing
 * ancestor's, as the kernel resolves it: a ".." after a symbolic link is
 * the link target's parent, not the link's.
 */
static void test_path_fstype(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *deep = g_build_filename(t->dir, "no", "such", "file", NULL);
	g_autofree char *link = g_build_filename(t->dir, "proc-link", NULL);
	g_autofree char *via = g_build_filename(link, "self", "no-such", NULL);
	g_autofree char *dots = g_strdup_printf("%s/../%s//x", t->dir, strrchr(t->dir, '/') + 1);
	g_autofree char *where = NULL, *where2 = NULL;
	struct statfs st;
	guint64 type;

	g_assert_cmpint(statfs(t->dir, &st), ==, 0);
	g_assert_true(dmem_path_fstype(deep, &type, &where));
	g_assert_cmpuint(type, ==, (guint32)st.f_type);
	g_assert_cmpstr(where, ==, t->dir);
	g_assert_true(dmem_path_fstype(dots, &type, NULL));
	g_assert_cmpuint(type, ==, (guint32)st.f_type);
	/* through a symlink to /proc: procfs, not the link's file system */
	g_assert_cmpint(symlink("/proc", link), ==, 0);
	g_assert_true(dmem_path_fstype(via, &type, &where2));
	g_assert_cmpuint(type, ==, 0x9fa0); /* PROC_SUPER_MAGIC */
	g_assert_true(g_str_has_prefix(where2, "/proc/"));
	/* "link/..": /proc/self/.. is /proc, not the test directory */
	{
		g_autofree char *self = g_build_filename(t->dir, "self-link", NULL);
		g_autofree char *up = g_strdup_printf("%s/../no-such", self);

		g_assert_cmpint(symlink("/proc/self", self), ==, 0);
		g_assert_true(dmem_path_fstype(up, &type, NULL));
		g_assert_cmpuint(type, ==, 0x9fa0);
	}
}

/* text in one line: lines trimmed, empty ones dropped, controls blanked */
static void test_one_line(void)
{
	const struct { const char *in, *out; } cases[] = {
		{ "", "" },
		{ "one", "one" },
		{ "one\n", "one" },
		{ "  a \r\n\n b\t c \n\n", "a; b  c" },
		{ "x\033[1m", "x [1m" },
		{ "bad \xff byte", "bad \xef\xbf\xbd byte" },
		/* C1 CSI and NEL, U+2028, a right-to-left override: blanks */
		{ "a\xc2\x9b" "1mb\xc2\x85" "c", "a 1mb c" },
		{ "a\xe2\x80\xa8" "b\xe2\x80\xae" "cba", "a b cba" },
		/* what shows stays: a non-ASCII letter, a no-break space */
		{ "caf\xc3\xa9\xc2\xa0ok", "caf\xc3\xa9\xc2\xa0ok" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *got = dmem_one_line(cases[i].in, "; ");

		g_assert_cmpstr(got, ==, cases[i].out);
	}
	{
		g_autofree char *null = dmem_one_line(NULL, " ");

		g_assert_cmpstr(null, ==, "");
	}
	{
		/* an attribute of any length is one line of at most the cap */
		g_autofree char *big = g_strnfill(100000, 'x');
		g_autofree char *got = dmem_one_line(big, "; ");

		g_assert_cmpuint(strlen(got), ==, DMEM_LINE_SHOWN + 3);
		g_assert_true(g_str_has_suffix(got, "..."));
	}
}

/*
 * dmem_run(): stdout captured, and a failure that says which command
 * (quoted as a shell would need it), how it ended and what it said.
 */
static void test_run_command(void)
{
	const char *echo[] = { "sh", "-c", "echo out; echo noise >&2", NULL };
	const char *three[] = { "sh", "-c", "echo 'first line' >&2; echo >&2; echo '  second' >&2; "
				"exit 3", NULL };
	const char *quoted[] = { "sh", "-c", "exit 1", "a b", "it's", "", "x\ny", NULL };
	const char *missing[] = { "/nonexistent/dmem-no-such-program", "--flag", NULL };
	const char *killed[] = { "sh", "-c", "kill -9 $$", NULL };
	const char *silent[] = { "false", NULL };
	g_autofree char *out = NULL, *none = NULL;
	g_autofree char *path = g_strdup(g_getenv("PATH"));
	g_autoptr(GError) e = NULL;

	/* children get a PATH of root's own, whatever the caller's */
	g_unsetenv("PATH");
	g_assert_true(dmem_run((const char *[]){ "true", NULL }, NULL, &e));
	g_assert_no_error(e);
	g_setenv("PATH", "/nonexistent", TRUE);
	g_assert_true(dmem_run((const char *[]){ "sh", "-c",
					       "case $PATH in /usr/local/sbin:*) exit 0;; esac; exit 1",
					       NULL }, NULL, &e));
	g_assert_no_error(e);
	if (path)
		g_setenv("PATH", path, TRUE);
	else
		g_unsetenv("PATH");

	g_assert_true(dmem_run(echo, &out, &e));
	g_assert_no_error(e);
	g_assert_cmpstr(out, ==, "out\n");
	g_assert_true(dmem_run(echo, NULL, &e));
	g_assert_no_error(e);

	/* the argv, the status, the stderr folded into one line */
	g_assert_false(dmem_run(three, &none, &e));
	g_assert_null(none);
	g_assert_error(e, DMEM_ERROR, DMEM_ERROR_FAILED);
	g_assert_cmpstr(e->message, ==, "sh -c 'echo '\\''first line'\\'' >&2; echo >&2; echo "
			"'\\''  second'\\'' >&2; exit 3': exit status 3: first line; second");
	g_clear_error(&e);

	/* a space, a quote, an empty argument, a newline: each quoted */
	g_assert_false(dmem_run(quoted, NULL, &e));
	g_assert_nonnull(e);
	g_assert_cmpstr(e->message, ==, "sh -c 'exit 1' 'a b' 'it'\\''s' '' $'x\\ny': "
			"exit status 1");
	g_clear_error(&e);

	/* a program that is not there: named */
	g_assert_false(dmem_run(missing, NULL, &e));
	g_assert_nonnull(e);
	g_assert_true(g_str_has_prefix(e->message, "/nonexistent/dmem-no-such-program --flag: "));
	g_assert_nonnull(strstr(e->message + strlen(missing[0]), missing[0]));
	g_assert_null(strchr(e->message, '\n'));
	g_clear_error(&e);

	g_assert_false(dmem_run(killed, NULL, &e));
	g_assert_nonnull(e);
	g_assert_nonnull(strstr(e->message, "killed by signal 9"));
	g_clear_error(&e);

	/* found in PATH, nothing on stderr: the status alone */
	g_assert_false(dmem_run(silent, NULL, &e));
	g_assert_nonnull(e);
	g_assert_cmpstr(e->message, ==, "false: exit status 1");
	g_clear_error(&e);

	/* a long command and a long stderr are cut */
	{
		g_autofree char *arg = g_strnfill(3000, 'a');
		const char *longer[] = { "sh", "-c", "head -c 5000 /dev/zero | tr '\\0' e >&2; exit 2",
					 arg, NULL };

		g_assert_false(dmem_run(longer, NULL, &e));
		g_assert_nonnull(e);
		g_assert_nonnull(strstr(e->message, "aaa...: exit status 2: eee"));
		g_assert_true(g_str_has_suffix(e->message, "eee..."));
		g_assert_cmpuint(strlen(e->message), <, 1024 + 512 + 64);
	}
}

/* a program's failure: one line each, its prefix, the code it is given */
static void test_cli_fail(void)
{
	if (g_test_subprocess()) {
		g_autoptr(GError) e = g_error_new_literal(DMEM_ERROR, DMEM_ERROR_FAILED,
							  "libvirt said\nthis\n");

		g_assert_cmpint(dmem_cli_fail("prog", 2, "bad %s\r\n  thing\n", "arg"), ==, 2);
		g_assert_cmpint(dmem_cli_error("prog: error", e), ==, 1);
		g_assert_cmpint(dmem_cli_fail("prog", 0, "%s", ""), ==, 0);
		return;
	}
	g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
	g_test_trap_assert_passed();
	g_test_trap_assert_stdout("");
	g_test_trap_assert_stderr("prog: bad arg; thing\nprog: error: libvirt said; this\nprog: \n");
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_set_nonfatal_assertions();
	g_test_add_func("/lib/pagesize", test_pagesize);
	g_test_add_func("/lib/nodeset-libvirt-syntax", test_nodeset);
	g_test_add_func("/lib/uuid-and-backend-ids", test_uuid_and_ids);
	g_test_add_func("/lib/config/defaults", test_config_defaults);
	g_test_add_func("/lib/config/file-and-env", test_config_file_and_env);
	g_test_add_func("/lib/config/errors", test_config_errors);
	g_test_add_func("/lib/config/qemu-ids", test_config_qemu_ids);
	g_test_add_func("/lib/stats/fake-sysfs", test_stats);
	g_test_add_func("/lib/stats/sysfs-u64", test_sysfs_u64);
	g_test_add_func("/lib/file/create-0600-excl-nofollow", test_create_file);
	g_test_add_func("/lib/file/remove-domain-dir", test_remove_domain_dir);
	g_test_add_func("/lib/file/mark-no-symlink", test_mark_no_symlink);
	g_test_add_func("/lib/file/adopt-legacy-dir", test_adopt_legacy_dir);
	g_test_add_func("/lib/file/populate-tmpfs", test_populate_tmpfs);
	g_test_add_func("/lib/carry/state", test_carry_state);
	g_test_add_func("/lib/carry/qmp-ignore-shared", test_qmp_ignore_shared);
	g_test_add_func("/lib/xml/typed-getters", test_xml_getters);
	g_test_add_func("/lib/xml/refusals", test_xml_refusals);
	g_test_add_func("/lib/config/mount-iterator", test_config_mount_iter);
	g_test_add_func("/lib/domain/path", test_domain_path);
	g_test_add_func("/lib/domain/set-mark", test_set_mark);
	g_test_add_func("/lib/nodepool", test_nodepool);
	g_test_add_func("/lib/aaprofile/rules", test_aa_rules);
	g_test_add_func("/lib/aaprofile/deny-rules", test_aa_deny_rules);
	g_test_add_func("/lib/file/path-fstype", test_path_fstype);
	g_test_add_func("/lib/run/one-line", test_one_line);
	g_test_add_func("/lib/run/command", test_run_command);
	g_test_add_func("/lib/cli/fail", test_cli_fail);
	return g_test_run();
}
