/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers shared by the unit tests. */
#ifndef DMEMFS_TESTUTIL_H
#define DMEMFS_TESTUTIL_H

#include "carry.h"

/* a scratch tree: <dir>/mnt-{4K,2M,1G}, <dir>/sysfs, <dir>/dmemfs-host.conf */
typedef struct {
	char *dir;
	char *mounts[DMEM_N_PAGESIZES];
	char *sysfs;
	char *conf;
	DmemConfig *cfg;
} TestTree;

TestTree *test_tree_new(const char *qemu_binary);
void test_tree_free(TestTree *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TestTree, test_tree_free)
/* <sysfs>/node<N>/{total,free,used}_bytes */
void test_tree_set_node(TestTree *t, guint node, guint64 total, guint64 free_bytes);
/* list (or, with !on, unlist) @uuid in the tree's dmem-liveupdate state */
void test_tree_carry(TestTree *t, const char *uuid, gboolean on);
/* node<N>/requested_bytes: what dmem= asked of the node */
/* write node<node>/<name> (e.g. requested_bytes) */
void test_tree_set_stat(TestTree *t, guint node, const char *name, guint64 val);

char *test_fixture_path(const char *rel);  /* relative to the source tree */
char *test_read_fixture(const char *rel, gsize *len);

/* run TEST_BINDIR/<prog> with argv, env overrides and stdin; returns exit status */
int test_run(const char *prog, const char *const *args, const char *const *env,
	     const char *input, char **out, char **err);

/* number of entries in a directory (-1 if absent) */
int test_count_entries(const char *dir);

#endif
