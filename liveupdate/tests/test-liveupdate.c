// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dmem-liveupdate without a kernel: libvirt's test driver runs the
 * domains, a scratch tree holds the dmemfs files.  What can be checked
 * here is what happens before anything is touched: refusals, one line
 * each, and nothing created.  The kexec round trip runs in L1
 * (nested-test/l1/liveupdate-l1.sh).
 */
#include "kexec-plan.h"
#include "testutil.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define GOOD_UUID "0b7c6d3e-5f1a-4e2b-9c8d-7a6b5c4d3e2f"

/* a running test-driver domain; @extra goes into <metadata> and <devices> */
static char *domain(const char *name, const char *uuid, const char *meta, const char *dev)
{
	return g_strdup_printf(
		"<domain type='test'><name>%s</name><uuid>%s</uuid><metadata>%s</metadata>"
		"<memory unit='KiB'>1048576</memory><memoryBacking><source type='file'/>"
		"<access mode='shared'/></memoryBacking><vcpu>1</vcpu>"
		"<os><type arch='x86_64'>hvm</type></os><devices>%s</devices></domain>",
		name, uuid, meta, dev);
}

static const char *opted =
	"<dmemfs:dmemfs xmlns:dmemfs='http://dmemfs-host.org/xmlns/dmemfs/1.0' pagesize='2M'/>";

static char *node_file(const TestTree *t, const char *domains)
{
	g_autofree char *xml = g_strdup_printf(
		"<node><cpu><mhz>2000</mhz><model>i686</model><active>2</active><max>2</max>"
		"<nodes>1</nodes><sockets>1</sockets><cores>2</cores><threads>1</threads></cpu>"
		"<memory>8388608</memory>%s</node>", domains);
	char *path = g_build_filename(t->dir, "node.xml", NULL);

	g_assert_true(g_file_set_contents(path, xml, -1, NULL));
	return path;
}

static int run(const TestTree *t, const char *node, const char *extra, char **out, char **err)
{
	g_autofree char *uri = g_strdup_printf("test://%s", node);
	const char *args[] = { "-c", uri, "--kernel", "/dev/null", "--no-exec", extra, NULL };
	const char *env[] = { "DMEMFS_HOST_CONF", t->conf, NULL };

	return test_run("dmem-liveupdate", args, env, NULL, out, err);
}

/* Domains that cannot be carried stop it all, with a line each. */
static void test_refusals(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *plain = domain("plain", "11111111-2222-3333-4444-555555555555", "", "");
	g_autofree char *vfio = domain("vfio", "22222222-2222-3333-4444-555555555555", opted,
				       "<hostdev mode='subsystem' type='pci' managed='yes'><source>"
				       "<address domain='0' bus='0' slot='4' function='0'/>"
				       "</source></hostdev>");
	g_autofree char *good = domain("good", GOOD_UUID, opted, "");
	g_autofree char *all = g_strconcat(plain, vfio, good, NULL);
	g_autofree char *node = node_file(t, all);
	g_autofree char *dir = dmem_domain_path(t->mounts[1], GOOD_UUID, NULL);
	g_autofree char *f = g_build_filename(dir, "pc.ram", NULL);
	g_autofree char *save = g_build_filename(t->dir, "state", NULL);
	g_autofree char *out = NULL, *err = NULL;
	g_auto(GStrv) lines = NULL;

	g_mkdir(dir, 0710);
	g_assert_true(g_file_set_contents(f, "", 0, NULL));
	g_assert_cmpint(truncate(f, 1 << 30), ==, 0);
	g_assert_cmpint(run(t, node, NULL, &out, &err), ==, 1);
	lines = g_strsplit(g_strchomp(err), "\n", -1);
	g_assert_cmpuint(g_strv_length(lines), ==, 2);
	g_assert_true(g_str_has_prefix(lines[0], "dmem-liveupdate: domain plain cannot be carried: "
						 "no dmem memory"));
	g_assert_true(g_str_has_prefix(lines[1], "dmem-liveupdate: domain vfio cannot be carried: "
						 "1 host device(s)"));
	g_assert_cmpstr(out, ==, "");
	/* nothing touched: no state directory, no mark */
	g_assert_false(g_file_test(save, G_FILE_TEST_EXISTS));
	g_assert_cmpint(test_count_entries(dir), ==, 1);
}

/* A dmem domain whose files are not where the hook puts them. */
static void test_files_missing(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *good = domain("good", GOOD_UUID, opted, "");
	g_autofree char *node = node_file(t, good);
	g_autofree char *out = NULL, *err = NULL;

	g_assert_cmpint(run(t, node, NULL, &out, &err), ==, 1);
	g_assert_nonnull(strstr(err, "domain good cannot be carried: domain " GOOD_UUID
				     ": dmemfs files missing or short"));
	g_assert_null(strchr(g_strchomp(err), '\n'));
}

/* Nothing carried: --restore has nothing to do, and says so; bad usage is 2. */
static void test_restore_nothing_and_usage(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *node = node_file(t, "");
	g_autofree char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL;
	g_autofree char *out3 = NULL, *err3 = NULL;

	g_assert_cmpint(run(t, node, "--restore", &out, &err), ==, 0);
	g_assert_true(g_str_has_prefix(out, "nothing to restore"));
	g_assert_cmpstr(err, ==, "");
	g_assert_cmpint(run(t, node, "--bogus", &out2, &err2), ==, 2);
	g_assert_true(g_str_has_prefix(err2, "dmem-liveupdate: "));
	g_assert_cmpint(run(t, node, "--save-dir=/tmp", &out3, &err3), ==, 2);
}

static char *state_path(const TestTree *t)
{
	return g_build_filename(t->dir, "state", DMEM_CARRY_FILE, NULL);
}

/* A state that is not ours stops --restore, --abort and an update: one line. */
static void test_bad_state_refused(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	g_autofree char *node = node_file(t, "");
	g_autofree char *state = state_path(t);
	g_autofree char *sdir = g_path_get_dirname(state);
	const char *modes[] = { "--restore", "--abort", NULL };

	g_mkdir(sdir, 0700);
	g_assert_true(g_file_set_contents(state, "[liveupdate]\nversion=7\n", -1, NULL));
	for (int i = 0; i < 3; i++) {
		g_autofree char *out = NULL, *err = NULL;

		g_assert_cmpint(run(t, node, modes[i], &out, &err), ==, 1);
		g_assert_nonnull(strstr(err, "not a dmem-liveupdate state: version 7"));
		g_assert_null(strchr(g_strchomp(err), '\n'));
		g_assert_true(g_file_test(state, G_FILE_TEST_IS_REGULAR));
	}
}

/*
 * A state left by an update that did not finish: a new update refuses to
 * start; --abort releases a carried domain that does not run (files,
 * mark, image gone, its dmem back), leaves one that runs as it is, and
 * leaves no state; then the update may go again.
 */
static void test_abort_releases(void)
{
	g_autoptr(TestTree) t = test_tree_new(NULL);
	const char *gone = "33333333-2222-3333-4444-555555555555";
	g_autofree char *good = domain("good", GOOD_UUID, opted, "");
	g_autofree char *node = node_file(t, good);
	g_autofree char *dir = dmem_domain_path(t->mounts[1], gone, NULL);
	g_autofree char *f = g_build_filename(dir, "pc.ram", NULL);
	g_autofree char *mark = g_build_filename(dir, DMEM_CARRIED_MARK, NULL);
	g_autofree char *gdir = dmem_domain_path(t->mounts[1], GOOD_UUID, NULL);
	g_autofree char *gf = g_build_filename(gdir, "pc.ram", NULL);
	g_autofree char *gmark = g_build_filename(gdir, DMEM_CARRIED_MARK, NULL);
	g_autofree char *state = state_path(t);
	g_autofree char *image = NULL;
	g_autofree char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL;
	g_autofree char *out3 = NULL, *err3 = NULL;
	g_autoptr(DmemCarry) c = NULL;
	g_autoptr(GError) e = NULL;

	g_mkdir(dir, 0710);
	g_mkdir(gdir, 0710);
	g_assert_true(g_file_set_contents(f, "", 0, NULL));
	g_assert_true(g_file_set_contents(mark, "", 0, NULL));
	g_assert_true(g_file_set_contents(gf, "", 0, NULL));
	g_assert_cmpint(truncate(gf, 1 << 30), ==, 0);
	g_assert_true(g_file_set_contents(gmark, "", 0, NULL));
	c = dmem_carry_load(t->cfg, &e);
	g_assert_no_error(e);
	dmem_carry_set(c, gone, "name", "gone");
	dmem_carry_set(c, GOOD_UUID, "name", "good");
	g_assert_true(dmem_carry_save(c, &e));
	image = dmem_carry_image(c, gone);
	g_assert_true(g_file_set_contents(image, "state", -1, NULL));

	g_assert_cmpint(run(t, node, NULL, &out, &err), ==, 1);
	g_assert_nonnull(strstr(err, "a previous update still carries 2 domain(s)"));
	g_assert_cmpint(run(t, node, "--abort", &out2, &err2), ==, 0);
	g_assert_cmpstr(err2, ==, "");
	g_assert_nonnull(strstr(out2, "domain gone: released"));
	g_assert_nonnull(strstr(out2, "domain good: running: left as it is"));
	g_assert_false(g_file_test(dir, G_FILE_TEST_EXISTS));
	g_assert_false(g_file_test(image, G_FILE_TEST_EXISTS));
	g_assert_true(g_file_test(gf, G_FILE_TEST_IS_REGULAR));
	g_assert_false(g_file_test(gmark, G_FILE_TEST_EXISTS));
	g_assert_false(g_file_test(state, G_FILE_TEST_EXISTS));
	/* nothing left to carry: --abort again is a no-op */
	g_assert_cmpint(run(t, node, "--abort", &out3, &err3), ==, 0);
	g_assert_cmpstr(out3, ==, "");
}

/* ---- the planning core against golden files (tests/golden/NAME.in, .out) */

static char *joined(GKeyFile *kf, const char *key)
{
	g_auto(GStrv) l = g_key_file_get_string_list(kf, "input", key, NULL, NULL);

	return l ? g_strjoinv("\n", l) : g_strdup("");
}

static void test_golden(gconstpointer data)
{
	const char *name = data;
	g_autofree char *dir = test_fixture_path("liveupdate/tests/golden");
	g_autofree char *in_path = g_strdup_printf("%s/%s.in", dir, name);
	g_autofree char *out_path = g_strdup_printf("%s/%s.out", dir, name);
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) e = NULL;
	g_autofree char *want = NULL, *got = NULL, *ranges = NULL, *tables = NULL;
	g_autofree char *cmdline = NULL, *append = NULL;
	g_auto(GStrv) addrs = NULL;
	g_auto(KexecPlan) plan = { 0 };
	KexecInput in;

	g_assert_true(g_key_file_load_from_file(kf, in_path, G_KEY_FILE_NONE, NULL));
	g_assert_true(g_file_get_contents(out_path, &want, NULL, NULL));
	ranges = joined(kf, "ranges");
	tables = joined(kf, "tables");
	cmdline = g_key_file_get_string(kf, "input", "cmdline", NULL);
	append = g_key_file_get_string(kf, "input", "append", NULL);
	addrs = g_key_file_get_string_list(kf, "input", "addrs", NULL, NULL);
	in = (KexecInput){ .ranges = ranges, .cmdline = cmdline, .tables = tables,
			   .addrs = (const char *const *)addrs, .append = append };
	if (kexec_plan(&in, &plan, &e)) {
		got = g_strdup_printf("mem-max=0x%" G_GINT64_MODIFIER "x\ncommand-line=%s\n",
				      plan.mem_max, plan.cmdline);
	} else {
		g_assert_null(strchr(e->message, '\n'));
		g_assert_null(plan.cmdline);
		got = g_strdup_printf("error: %s\n", e->message);
	}
	g_assert_cmpstr(got, ==, want);
	/*
	 * The early check, before any guest stops, refuses all that the plan
	 * refuses but a missing key (the tables come later): exactly.
	 */
	g_clear_error(&e);
	if (kexec_plan_check(&in, g_strv_length(addrs), &e))
		g_assert_true(!g_str_has_prefix(want, "error: ") ||
			      g_str_has_prefix(want, "error: no key for the table") ||
			      g_str_has_prefix(want, "error: the key of the table"));
	else
		g_assert_true(g_str_has_prefix(want, "error: ") &&
			      !g_str_has_prefix(want, "error: no key for the table"));
}

static gint by_name(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_golden_tests(void)
{
	g_autofree char *dir = test_fixture_path("liveupdate/tests/golden");
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	g_autoptr(GPtrArray) names = g_ptr_array_new();
	const char *f;

	g_assert_nonnull(d);
	while ((f = g_dir_read_name(d)))
		if (g_str_has_suffix(f, ".in"))
			g_ptr_array_add(names, g_strndup(f, strlen(f) - 3));
	g_assert_cmpuint(names->len, >=, 8); /* a lost folder is no pass */
	g_ptr_array_sort(names, by_name);
	for (guint i = 0; i < names->len; i++) {
		g_autofree char *path = g_strdup_printf("/liveupdate/kexec-plan/%s",
							(char *)g_ptr_array_index(names, i));

		g_test_add_data_func_full(path, g_ptr_array_index(names, i), test_golden, g_free);
	}
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_setenv("LIBVIRT_LOG_OUTPUTS", "1:file:/dev/null", TRUE);
	g_test_add_func("/liveupdate/refusals-one-line-each-nothing-touched", test_refusals);
	g_test_add_func("/liveupdate/files-missing", test_files_missing);
	g_test_add_func("/liveupdate/restore-nothing-and-usage", test_restore_nothing_and_usage);
	g_test_add_func("/liveupdate/bad-state-refused", test_bad_state_refused);
	g_test_add_func("/liveupdate/abort-releases", test_abort_releases);
	add_golden_tests();
	return g_test_run();
}
