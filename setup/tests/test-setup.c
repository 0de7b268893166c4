// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmemfs-host-setup on bad input, on the host (no dmemfs, no libvirtd): one
 * line on stderr, a non-zero exit, and nothing left behind, a failed mount
 * included.  The setup itself (mounts, pools, down) runs in L1
 * (nested-test/l1/acceptance/l1-checks.sh, accept.host-setup).
 */
#include "testutil.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

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

/* ---- grub: the package's snippet (debian/grub.cfg), DMEM="..." set or not */

static char *grub_copy(const char *dir)
{
	g_autofree char *src = test_fixture_path("debian/grub.cfg"), *text = NULL;
	char *p = g_build_filename(dir, "dmemfs-host.cfg", NULL);

	g_assert_true(g_file_get_contents(src, &text, NULL, NULL));
	g_assert_true(g_file_set_contents(p, text, -1, NULL));
	g_assert_cmpint(chmod(p, 0644), ==, 0);
	return p;
}

/* dmemfs-host-setup grub --grub-file=FILE EXTRA...; run as PROG is, or as
 * @bin (a copy next to a fake dmem-capacity) */
static int grub_exec(const char *bin, const char *file, const char *const *extra, char **out,
		     char **err)
{
	g_autofree char *opt = g_strdup_printf("--grub-file=%s", file);
	g_autofree char *prog = bin ? g_strdup(bin) : g_build_filename(TEST_BINDIR, PROG, NULL);
	const char *argv[10] = { prog, "grub", opt };
	guint n = 3;
	int status;

	for (; extra && *extra && n < G_N_ELEMENTS(argv) - 1; extra++)
		argv[n++] = *extra;
	g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDIN_FROM_DEV_NULL, NULL,
				   NULL, out, err, &status, NULL));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int grub_run(const char *file, const char *const *extra, char **out, char **err)
{
	return grub_exec(NULL, file, extra, out, err);
}

static void test_grub_sets_dmem(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *f = grub_copy(t->dir), *before = NULL, *after = NULL;
	const char *const forms[] = { "!16G:1G", "64G", "4096M:128M", "1G@5G", "1G:1G@5G",
				      "2g", "1099511627776", "" };
	struct stat st;
	mode_t mask = umask(077);

	g_assert_true(g_file_get_contents(f, &before, NULL, NULL));
	for (guint i = 0; i < G_N_ELEMENTS(forms); i++) {
		const char *v[] = { forms[i], NULL };
		g_autofree char *o = NULL, *line = g_strdup_printf("\nDMEM=\"%s\"\n", forms[i]);

		g_clear_pointer(&after, g_free);
		g_assert_cmpint(grub_run(f, v, &o, NULL), ==, 0);
		g_assert_true(g_file_get_contents(f, &after, NULL, NULL));
		g_assert_nonnull(strstr(after, line));
		g_assert_nonnull(strstr(o, "update-grub"));
		/* the file's mode, whatever the umask */
		g_assert_cmpint(stat(f, &st), ==, 0);
		g_assert_cmpint(st.st_mode & 07777, ==, 0644);
	}
	umask(mask);
	/* back to where it started: only the DMEM= line changed */
	g_assert_cmpstr(after, ==, before);
}

/* a value the kernel would ignore (a warning at boot, nothing reserved) or
 * that would add parameters or shell of its own: one line, file untouched */
static void test_grub_refuses_values(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *f = grub_copy(t->dir), *before = NULL;
	const char *const bad[] = {
		"4G init=/bin/sh", "4G\"", "x", "$(reboot)", "4G:", "!1G@2G", "4G\n", "4G\nreboot",
		"0", "!0G:1G", "100M", "1:1", "1G:3G", "1G@0", "1G@1536M:1G", "99999999999999999999999",
		"17E", "010G", "0x40000000", " 4G", "4G@", "1G@2G@3G", "1G:1G:1G", "4Z",
	};

	g_assert_true(g_file_get_contents(f, &before, NULL, NULL));
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		const char *v[] = { bad[i], NULL };
		g_autofree char *err = NULL, *now = NULL;

		g_test_message("value '%s'", bad[i]);
		g_assert_cmpint(grub_run(f, v, NULL, &err), ==, 1);
		g_assert_cmpint(lines(err), ==, 1);
		g_assert_nonnull(strstr(err, "is not a dmem= value the kernel takes"));
		g_assert_true(g_file_get_contents(f, &now, NULL, NULL));
		g_assert_cmpstr(now, ==, before);
	}
}

/* a snippet the operator edited beyond its DMEM="..." line, a symlink */
static void test_grub_refuses_files(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *f = grub_copy(t->dir), *link = NULL, *err = NULL;
	const char *const texts[] = {
		"# no value here\n", "DMEM=\"\"\nDMEM=\"1G\"\n", "DMEM=\"\"\nexport DMEM=\"8G\"\n",
		"  DMEM=\"\"\n", "DMEM=\"\" # mine\n", "DMEM=\"\"; GRUB_TIMEOUT=3\n", "DMEM=8G\n",
	};
	const char *v[] = { "4G", NULL };

	for (guint i = 0; i < G_N_ELEMENTS(texts); i++) {
		g_autofree char *e = NULL, *now = NULL;

		g_assert_true(g_file_set_contents(f, texts[i], -1, NULL));
		g_assert_cmpint(grub_run(f, v, NULL, &e), ==, 1);
		g_assert_cmpint(lines(e), ==, 1);
		g_assert_nonnull(strstr(e, "edit it by hand"));
		g_assert_true(g_file_get_contents(f, &now, NULL, NULL));
		g_assert_cmpstr(now, ==, texts[i]);
	}
	g_assert_true(g_file_set_contents(f, "DMEM=\"\"\n", -1, NULL));
	link = g_build_filename(t->dir, "link.cfg", NULL);
	g_assert_cmpint(symlink(f, link), ==, 0);
	g_assert_cmpint(grub_run(link, v, NULL, &err), ==, 1);
	g_assert_cmpint(lines(err), ==, 1);
	g_assert_nonnull(strstr(err, "symbolic link"));
	g_assert_true(g_file_test(link, G_FILE_TEST_IS_SYMLINK));
}

static void test_grub_usage(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *f = grub_copy(t->dir), *before = NULL, *now = NULL;
	const char *const bad[][4] = {
		{ NULL }, { "4G", "8G", NULL }, { "--recommend", "4G", NULL },
		{ "4G", "--guest=4G", NULL }, { "4G", "--reserve=8G", NULL }, { "-4G", NULL },
		{ "--recommend", NULL }, { "--recommend", "--reserve=8G", NULL },
	};

	g_assert_true(g_file_get_contents(f, &before, NULL, NULL));
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *err = NULL;

		g_assert_cmpint(grub_run(f, bad[i], NULL, &err), ==, 2);
		g_assert_cmpint(lines(err), ==, 1);
	}
	/* grub's options with another action, --config with grub */
	{
		const char *args[] = { "--guest=4G", "up", NULL };
		const char *args2[] = { "--config=/dev/null", "grub", "4G", NULL };
		g_autofree char *err = NULL, *err2 = NULL;

		g_assert_cmpint(test_run(PROG, args, NULL, NULL, NULL, &err), ==, 2);
		g_assert_cmpint(lines(err), ==, 1);
		g_assert_cmpint(test_run(PROG, args2, NULL, NULL, NULL, &err2), ==, 2);
		g_assert_cmpint(lines(err2), ==, 1);
	}
	g_assert_true(g_file_get_contents(f, &now, NULL, NULL));
	g_assert_cmpstr(now, ==, before);
}

/*
 * --recommend, against a fake dmem-capacity next to a copy of the program
 * (where it looks first): the argv it gets, its value written, and each
 * way it can fail in one line with the file untouched.
 */
static char *fake_capacity(const char *dir, const char *body)
{
	g_autofree char *cap = g_build_filename(dir, "dmem-capacity", NULL);
	g_autofree char *text = g_strdup_printf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > '%s/args'\n%s\n",
						dir, body);
	g_autofree char *src = g_build_filename(TEST_BINDIR, PROG, NULL);
	char *bin = g_build_filename(dir, PROG, NULL);
	g_autoptr(GFile) a = g_file_new_for_path(src), b = g_file_new_for_path(bin);

	g_assert_true(g_file_set_contents(cap, text, -1, NULL));
	g_assert_cmpint(chmod(cap, 0755), ==, 0);
	g_assert_true(g_file_copy(a, b, G_FILE_COPY_OVERWRITE, NULL, NULL, NULL, NULL));
	g_assert_cmpint(chmod(bin, 0755), ==, 0);
	return bin;
}

static void test_grub_recommend(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *f = grub_copy(t->dir), *before = NULL, *now = NULL, *bin = NULL;
	g_autofree char *out = NULL, *args = NULL, *argsf = g_build_filename(t->dir, "args", NULL);
	const char *ok[] = { "--recommend", "--guest=4G", "--guest=2G+2G", "--reserve=8G", NULL };
	const struct {
		const char *body, *says;
	} bad[] = {
		/* the command that failed, how, and its own line */
		{ "echo 'dmem-capacity: error: bad shape' >&2; exit 2",
		  "/dmem-capacity --recommend --json --guest=4G --guest=2G+2G --reserve=8G: "
		  "exit status 2: dmem-capacity: error: bad shape" },
		{ "kill -9 $$", "killed by signal 9" },
		{ "echo 'not json'", "no JSON object" },
		{ "echo '[1]'", "no JSON object" },
		{ "echo '{\"recommend\":5}'", "no recommend.dmem" },
		{ "echo '{\"recommend\":{\"dmem\":[1]}}'", "no recommend.dmem" },
		{ "echo '{\"recommend\":{\"dmem\":7}}'", "no recommend.dmem" },
		{ "echo '{\"recommend\":{\"dmem\":\"\"}}'", "no recommend.dmem" },
		{ "echo '{\"recommend\":{\"dmem\":\"4G init=/bin/sh\"}}'", "is not a dmem= value" },
	};

	g_assert_true(g_file_get_contents(f, &before, NULL, NULL));
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *err = NULL;

		g_test_message("fake dmem-capacity: %s", bad[i].body);
		g_free(bin);
		bin = fake_capacity(t->dir, bad[i].body);
		g_assert_cmpint(grub_exec(bin, f, ok, NULL, &err), ==, 1);
		g_assert_cmpint(lines(err), ==, 1);
		g_assert_nonnull(strstr(err, bad[i].says));
		g_assert_null(strstr(err, "CRITICAL"));
		g_assert_true(g_file_get_contents(f, &now, NULL, NULL));
		g_assert_cmpstr(now, ==, before);
		g_clear_pointer(&now, g_free);
	}

	g_free(bin);
	bin = fake_capacity(t->dir, "echo '{\"recommend\":{\"dmem\":\"!2176M:128M\"}}'");
	g_assert_cmpint(grub_exec(bin, f, ok, &out, NULL), ==, 0);
	g_assert_true(g_file_get_contents(argsf, &args, NULL, NULL));
	g_assert_cmpstr(args, ==, "--recommend\n--json\n--guest=4G\n--guest=2G+2G\n--reserve=8G\n");
	g_assert_true(g_file_get_contents(f, &now, NULL, NULL));
	g_assert_nonnull(strstr(now, "\nDMEM=\"!2176M:128M\"\n"));
	g_assert_nonnull(strstr(out, "update-grub"));
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
	g_test_add_func("/setup/grub/sets-dmem", test_grub_sets_dmem);
	g_test_add_func("/setup/grub/refuses-values", test_grub_refuses_values);
	g_test_add_func("/setup/grub/refuses-files", test_grub_refuses_files);
	g_test_add_func("/setup/grub/usage", test_grub_usage);
	g_test_add_func("/setup/grub/recommend", test_grub_recommend);
	return g_test_run();
}
