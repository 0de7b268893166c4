// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmemfs-host-setup on bad input, on the host (no dmemfs, no libvirtd): one
 * line on stderr, a non-zero exit, and nothing left behind, a failed mount
 * included.  The setup itself (mounts, pools, down) runs in L1
 * (nested-test/l1/acceptance/l1-checks.sh, accept.host-setup).
 */
#include "testutil.h"

#include <glib/gstdio.h>
#include <sys/stat.h>

#include <string.h>
#include <unistd.h>

#define PROG "dmemfs-host-setup"

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* run with --config @conf; exit status, stderr in @err */
static int run(const char *conf, const char *action, char **err)
{
	g_autofree char *opt = g_strdup_printf("--config=%s", conf);
	const char *args[] = { opt, action, NULL };

	return test_run(PROG, args, NULL, NULL, NULL, err);
}

static char *write_conf(const char *dir, const char *mounts, const char *sysfs)
{
	char *p = g_build_filename(dir, "setup.conf", NULL);
	g_autofree char *text = g_strdup_printf("[mounts]\n%s[sysfs]\nroot=%s\n", mounts, sysfs);

	g_assert_true(g_file_set_contents(p, text, -1, NULL));
	return p;
}

static gboolean kernel_has_dmemfs(void)
{
	g_autofree char *fs = NULL;

	return g_file_get_contents("/proc/filesystems", &fs, NULL, NULL) && strstr(fs, "\tdmemfs\n");
}

static void test_usage(void)
{
	const char *const bad[][3] = {
		{ NULL }, { "sideways", NULL }, { "up", "down", NULL }, { "--bogus", "up", NULL },
		{ "mount", "up", NULL },
	};

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *err = NULL;

		g_assert_cmpint(test_run(PROG, bad[i], NULL, NULL, NULL, &err), ==, 2);
		g_assert_cmpint(lines(err), ==, 1);
		g_assert_true(g_str_has_prefix(err, PROG ": "));
	}
}

static void test_garbage_config(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *conf = g_build_filename(t->dir, "bad.conf", NULL);
	g_autofree char *err = NULL;

	g_assert_true(g_file_set_contents(conf, "[mounts]\n2m=/run/x\n", -1, NULL));
	g_assert_cmpint(run(conf, "up", &err), ==, 1);
	g_assert_cmpint(lines(err), ==, 1);
	g_assert_nonnull(strstr(err, "unknown key '2m'"));
	g_assert_false(g_file_test("/run/x", G_FILE_TEST_EXISTS));
}

/* a host booted without dmem=: refused before anything is made */
static void test_no_dmem(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *mnt = g_build_filename(t->dir, "new", "2M", NULL);
	g_autofree char *m = g_strdup_printf("2M=%s\n4K=%s/m4\n1G=%s/m1\n", mnt, t->dir, t->dir);
	g_autofree char *conf = write_conf(t->dir, m, t->sysfs);
	g_autofree char *err = NULL, *parent = g_path_get_dirname(mnt);

	g_assert_cmpint(run(conf, "up", &err), ==, 1);
	g_assert_cmpint(lines(err), ==, 1);
	g_assert_nonnull(strstr(err, "no node has dmem"));
	g_assert_false(g_file_test(parent, G_FILE_TEST_EXISTS));
}

/* mount(2) fails (no dmemfs here): the directories it made are gone again */
static void test_failed_mount_undone(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *m4 = g_build_filename(t->dir, "deep", "x", "4K", NULL);
	g_autofree char *m = g_strdup_printf("4K=%s\n2M=%s/m2\n1G=%s/m1\n", m4, t->dir, t->dir);
	g_autofree char *conf = NULL, *err = NULL, *deep = g_build_filename(t->dir, "deep", NULL);

	if (kernel_has_dmemfs()) {
		g_test_skip("this kernel has dmemfs: the mount would succeed");
		return;
	}
	if (geteuid() != 0) {
		g_test_skip("mount points are checked as root sees them: run as root");
		return;
	}
	test_tree_set_node(t, 0, 1ULL << 30, 1ULL << 30);
	conf = write_conf(t->dir, m, t->sysfs);
	g_assert_cmpint(run(conf, "up", &err), ==, 1);
	g_assert_cmpint(lines(err), ==, 1);
	g_assert_nonnull(strstr(err, "mount -t dmemfs -o pagesize=4K none"));
	g_assert_nonnull(strstr(err, "nothing changed"));
	g_assert_false(g_file_test(deep, G_FILE_TEST_EXISTS));
	/* mount (no libvirt) fails and undoes the same way */
	g_clear_pointer(&err, g_free);
	g_assert_cmpint(run(conf, "mount", &err), ==, 1);
	g_assert_nonnull(strstr(err, "nothing changed"));
	g_assert_false(g_file_test(deep, G_FILE_TEST_EXISTS));
	/* a directory that was there before stays */
	g_clear_pointer(&err, g_free);
	g_assert_cmpint(g_mkdir(deep, 0755), ==, 0);
	g_assert_cmpint(run(conf, "up", &err), ==, 1);
	g_assert_true(g_file_test(deep, G_FILE_TEST_IS_DIR));
	g_assert_cmpint(test_count_entries(deep), ==, 0);
}

/* a symbolic link or a directory with files where a mount point should be */
static void test_refuses_what_is_in_the_way(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *target = g_build_filename(t->dir, "elsewhere", NULL);
	g_autofree char *link = g_build_filename(t->dir, "link", NULL);
	g_autofree char *full = g_build_filename(t->dir, "full", NULL);
	g_autofree char *file = g_build_filename(full, "guest-data", NULL);
	/* a symbolic link above a mount point that exists */
	g_autofree char *alias = g_build_filename(t->dir, "alias", NULL);
	g_autofree char *real = g_build_filename(t->dir, "real", NULL);
	g_autofree char *via = g_build_filename(alias, "leaf", NULL);
	g_autofree char *leaf = g_build_filename(real, "leaf", NULL);
	/* a directory a user owns, one anybody may write to */
	g_autofree char *users = g_build_filename(t->dir, "users", NULL);
	g_autofree char *in_users = g_build_filename(users, "2M", NULL);
	g_autofree char *open = g_build_filename(t->dir, "open", NULL);
	g_autofree char *in_open = g_build_filename(open, "2M", NULL);
	struct {
		const char *key, *path, *why;
	} cases[] = {
		{ "4K", link, "is a symbolic link" },
		{ "4K", via, "alias is a symbolic link" },
		{ "4K", full, "is not empty" },
		{ "4K", in_users, "users is not root's" },
		{ "4K", in_open, "open is not root's, or others may write" },
	};

	if (geteuid() != 0) {
		g_test_skip("mount points are checked as root sees them: run as root");
		return;
	}
	test_tree_set_node(t, 0, 1ULL << 30, 1ULL << 30);
	g_assert_cmpint(g_mkdir(target, 0755), ==, 0);
	g_assert_cmpint(symlink(target, link), ==, 0);
	g_assert_cmpint(g_mkdir(full, 0755), ==, 0);
	g_assert_true(g_file_set_contents(file, "x", -1, NULL));
	g_assert_cmpint(g_mkdir(real, 0755), ==, 0);
	g_assert_cmpint(g_mkdir(leaf, 0755), ==, 0);
	g_assert_cmpint(symlink(real, alias), ==, 0);
	g_assert_cmpint(g_mkdir(users, 0755), ==, 0);
	g_assert_cmpint(chown(users, 65534, 65534), ==, 0);
	g_assert_cmpint(g_mkdir(in_users, 0755), ==, 0);
	g_assert_cmpint(g_mkdir(open, 0777), ==, 0);
	g_assert_cmpint(chmod(open, 0777), ==, 0);
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		/* 4K is mounted first; the others stay in the scratch tree */
		g_autofree char *m = g_strdup_printf("%s=%s\n2M=%s/m2\n1G=%s/m1\n", cases[i].key,
						     cases[i].path, t->dir, t->dir);
		g_autofree char *conf = write_conf(t->dir, m, t->sysfs);
		g_autofree char *err = NULL;

		g_assert_cmpint(run(conf, "up", &err), ==, 1);
		g_assert_cmpint(lines(err), ==, 1);
		g_assert_nonnull(strstr(err, cases[i].why));
	}
	g_assert_cmpint(test_count_entries(target), ==, 0);
	g_assert_cmpint(test_count_entries(full), ==, 1);
	g_assert_cmpint(test_count_entries(leaf), ==, 0);
	g_assert_false(g_file_test(in_open, G_FILE_TEST_EXISTS));
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_set_nonfatal_assertions();
	g_test_add_func("/setup/usage", test_usage);
	g_test_add_func("/setup/garbage-config", test_garbage_config);
	g_test_add_func("/setup/no-dmem", test_no_dmem);
	g_test_add_func("/setup/failed-mount-undone", test_failed_mount_undone);
	g_test_add_func("/setup/refuses-what-is-in-the-way", test_refuses_what_is_in_the_way);
	return g_test_run();
}
