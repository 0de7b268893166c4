// SPDX-License-Identifier: GPL-2.0-or-later
#include "testutil.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <pwd.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

TestTree *test_tree_new(const char *qemu_binary)
{
	TestTree *t = g_new0(TestTree, 1);
	g_autoptr(GError) e = NULL;
	g_autofree char *user = g_strdup(getpwuid(getuid())->pw_name);
	g_autofree char *group = g_strdup(getgrgid(getgid())->gr_name);
	g_autoptr(GString) conf = g_string_new("[mounts]\n");

	t->dir = g_dir_make_tmp("dmemfs-test-XXXXXX", &e);
	g_assert_no_error(e);
	for (int i = 0; i < DMEM_N_PAGESIZES; i++) {
		const char *n = dmem_pagesize_name(dmem_pagesizes[i]);

		t->mounts[i] = g_strdup_printf("%s/mnt-%s", t->dir, n);
		g_mkdir(t->mounts[i], 0755);
		g_string_append_printf(conf, "%s=%s\n", n, t->mounts[i]);
	}
	t->sysfs = g_build_filename(t->dir, "sysfs", NULL);
	g_mkdir(t->sysfs, 0755);
	/* no AppArmor on the build host: the wrapper's check has tests of its own */
	g_string_append_printf(conf,
			       "[qemu]\nbinary=%s\nuser=%s\ngroup=%s\nconfinement=none\n"
			       "[sysfs]\nroot=%s\n",
			       qemu_binary ? qemu_binary : "/usr/bin/qemu-system-x86_64", user,
			       group, t->sysfs);
	g_string_append_printf(conf, "[liveupdate]\nstate_dir=%s/state\n", t->dir);
	t->conf = g_build_filename(t->dir, "dmemfs-host.conf", NULL);
	g_file_set_contents(t->conf, conf->str, -1, &e);
	g_assert_no_error(e);
	t->cfg = dmem_config_load_file(t->conf, FALSE, &e);
	g_assert_no_error(e);
	return t;
}

static void rm_rf(const char *path)
{
	GDir *d = g_dir_open(path, 0, NULL);
	const char *n;

	if (d) {
		while ((n = g_dir_read_name(d))) {
			g_autofree char *p = g_build_filename(path, n, NULL);

			g_chmod(p, 0700);
			if (g_file_test(p, G_FILE_TEST_IS_DIR) && !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
				rm_rf(p);
			else
				g_unlink(p);
		}
		g_dir_close(d);
	}
	g_rmdir(path);
}

void test_tree_free(TestTree *t)
{
	if (!t)
		return;
	rm_rf(t->dir);
	for (int i = 0; i < DMEM_N_PAGESIZES; i++)
		g_free(t->mounts[i]);
	dmem_config_free(t->cfg);
	g_free(t->dir);
	g_free(t->sysfs);
	g_free(t->conf);
	g_free(t);
}

void test_tree_set_node(TestTree *t, guint node, guint64 total, guint64 free_bytes)
{
	g_autofree char *d = g_strdup_printf("%s/node%u", t->sysfs, node);
	const char *names[] = { "total_bytes", "free_bytes", "used_bytes" };
	guint64 vals[] = { total, free_bytes, total - free_bytes };

	g_mkdir(d, 0755);
	for (int i = 0; i < 3; i++) {
		g_autofree char *p = g_build_filename(d, names[i], NULL);
		g_autofree char *v = g_strdup_printf("%" G_GUINT64_FORMAT "\n", vals[i]);

		g_assert_true(g_file_set_contents(p, v, -1, NULL));
	}
}

void test_tree_set_stat(TestTree *t, guint node, const char *name, guint64 val)
{
	g_autofree char *p = g_strdup_printf("%s/node%u/%s", t->sysfs, node, name);
	g_autofree char *v = g_strdup_printf("%" G_GUINT64_FORMAT "\n", val);

	g_assert_true(g_file_set_contents(p, v, -1, NULL));
}

char *test_fixture_path(const char *rel)
{
	return g_build_filename(TEST_TOP, rel, NULL);
}

char *test_read_fixture(const char *rel, gsize *len)
{
	g_autofree char *p = test_fixture_path(rel);
	g_autoptr(GError) e = NULL;
	char *s = NULL;

	g_file_get_contents(p, &s, len, &e);
	g_assert_no_error(e);
	return s;
}

int test_run(const char *prog, const char *const *args, const char *const *env,
	     const char *input, char **out, char **err)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GSubprocessLauncher) l = NULL;
	g_autoptr(GSubprocess) p = NULL;
	g_autoptr(GError) e = NULL;
	g_autofree char *infile = NULL;
	int infd;
	g_autoptr(GBytes) o = NULL, r = NULL;

	g_ptr_array_add(argv, g_build_filename(TEST_BINDIR, prog, NULL));
	for (; args && *args; args++)
		g_ptr_array_add(argv, g_strdup(*args));
	g_ptr_array_add(argv, NULL);
	/* stdin from a file: a child that never reads it (like libvirt allows) gives no SIGPIPE */
	infd = g_file_open_tmp("dmemfs-stdin-XXXXXX", &infile, &e);
	g_assert_no_error(e);
	close(infd);
	g_assert_true(g_file_set_contents(infile, input ? input : "", -1, NULL));
	l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
	g_subprocess_launcher_set_stdin_file_path(l, infile);
	g_subprocess_launcher_unsetenv(l, "DMEMFS_HOST_CONF");
	g_subprocess_launcher_unsetenv(l, "DMEMFS_SYSFS_ROOT");
	for (; env && *env; env += 2)
		g_subprocess_launcher_setenv(l, env[0], env[1], TRUE);
	p = g_subprocess_launcher_spawnv(l, (const char *const *)argv->pdata, &e);
	g_assert_no_error(e);
	g_subprocess_communicate(p, NULL, NULL, &o, &r, &e);
	g_assert_no_error(e);
	g_unlink(infile);
	if (out)
		*out = g_strndup(g_bytes_get_size(o) ? g_bytes_get_data(o, NULL) : "", g_bytes_get_size(o));
	if (err)
		*err = g_strndup(g_bytes_get_size(r) ? g_bytes_get_data(r, NULL) : "", g_bytes_get_size(r));
	return g_subprocess_get_if_exited(p) ? g_subprocess_get_exit_status(p) : 128;
}

int test_count_entries(const char *dir)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	int n = 0;

	if (!d)
		return -1;
	while (g_dir_read_name(d))
		n++;
	g_dir_close(d);
	return n;
}

void test_tree_carry(TestTree *t, const char *uuid, gboolean on)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(DmemCarry) c = dmem_carry_load(t->cfg, &e);

	g_assert_no_error(e);
	if (on)
		dmem_carry_set(c, uuid, "name", "carried");
	else
		dmem_carry_remove(c, uuid);
	g_assert_true(dmem_carry_save(c, &e));
	g_assert_no_error(e);
}
