// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qemu-memdev-wrapper: libvirt <emulator> that puts guest RAM on dmemfs.
 *
 *   qemu-memdev-wrapper QEMU-ARGS...            rewrite, then execv the real QEMU
 *   qemu-memdev-wrapper --dry-run QEMU-ARGS...  print the argv, one per line
 *
 * Runs as the qemu user inside libvirt's namespace and cgroup; execv keeps
 * the PID libvirt recorded.
 */
#include "qmp.h"
#include "rewrite.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* QEMU's stand-in: libvirt logs its stderr and fails the start with what it said */
#define PROG "qemu-memdev-wrapper"

typedef struct {
	const DmemConfig *cfg;
	gboolean dry_run;
} Ctx;

/* dry run: no prepared file is fine, use the default page size's mount */
static gboolean resolve(const char *uuid, const char *id, gpointer data, WrapTarget *out,
			GError **error)
{
	Ctx *c = data;
	int i;

	if (wrap_resolve_config(uuid, id, (gpointer)c->cfg, out, c->dry_run ? NULL : error))
		return TRUE;
	if (!c->dry_run)
		return FALSE;
	i = dmem_pagesize_index(c->cfg->default_pagesize);
	if (c->cfg->mounts[i]->len == 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "no %s mount configured",
			    dmem_pagesize_name(c->cfg->default_pagesize));
		return FALSE;
	}
	out->path = dmem_domain_path(g_ptr_array_index(c->cfg->mounts[i], 0), uuid, id);
	out->pagesize = c->cfg->default_pagesize;
	return TRUE;
}

/*
 * QEMU only inside the domain's own enforced profile, unless a config file
 * that only root can write says otherwise: the environment (a domain's
 * <qemu:env>) could point the wrapper at a file of its own.
 */
static gboolean check_confinement(const DmemConfig *cfg, const WrapResult *res, GError **error)
{
	g_autofree char *label = NULL;
	g_autoptr(GError) e = NULL;
	struct stat st;

	if (cfg->confinement == DMEM_CONFINE_NONE) {
		if (cfg->path && stat(cfg->path, &st) == 0 && st.st_uid == 0 &&
		    !(st.st_mode & (S_IWGRP | S_IWOTH)))
			return TRUE;
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "%s: [qemu] confinement=none is honoured only in a file root owns "
			    "and only root can write", cfg->path ? cfg->path : "(no file)");
		return FALSE;
	}
	/* attr/apparmor/ where LSMs stack (5.8+), attr/ only where it is absent */
	if (!g_file_get_contents("/proc/self/attr/apparmor/current", &label, NULL, &e) &&
	    g_error_matches(e, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
		g_clear_error(&e);
		g_file_get_contents("/proc/self/attr/current", &label, NULL, &e);
	}
	if (wrap_check_confinement(res, label, error))
		return TRUE;
	if (e) {
		char *m = g_strdup_printf("%s (reading the label: %s; is the dmemfs-host "
					  "AppArmor snippet included?)", (*error)->message,
					  e->message);

		g_free((*error)->message);
		(*error)->message = m;
	}
	return FALSE;
}

static gboolean same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* how long QEMU may take to start and answer: a carried restore maps its RAM, never zeroes it */
#define QMP_DEADLINE_S 300

/*
 * The QMP side of wrap_add_monitor(): a grandchild writes the commands
 * into one end of a socket pair before QEMU runs its main loop and reads
 * the replies.  If QEMU refuses them or never answers, the grandchild
 * says why on stderr (the domain's log) and kills QEMU through a pidfd
 * taken before the exec (never a pid number another QEMU may have by
 * then): libvirt's restore then fails with that line in its error, rather
 * than the guest coming back without its RAM.  A QEMU that closed the
 * monitor is gone already.  Returns QEMU's end, or -1.
 */
static int carry_monitor(void)
{
	g_autofree char *caps = dmem_qmp_ignore_shared(TRUE);
	const char *cmds[] = { "{\"execute\":\"qmp_capabilities\"}", caps, NULL };
	int qemu = pidfd_open(getpid(), 0); /* this process becomes QEMU at the exec */
	int sv[2];
	pid_t pid;

	if (qemu < 0)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		close(qemu);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		close(qemu);
		return -1;
	}
	if (pid == 0) {
		g_autoptr(GError) e = NULL;
		gint64 deadline = g_get_monotonic_time() + QMP_DEADLINE_S * G_USEC_PER_SEC;
		int sock, pidfd;

		if (fork() != 0)
			_exit(0); /* the grandchild goes on, reparented: QEMU never waits */
		/* only its socket, the pidfd and stderr: not QEMU's tap, vhost or log fds */
		sock = fcntl(sv[0], F_DUPFD_CLOEXEC, 16);
		pidfd = fcntl(qemu, F_DUPFD_CLOEXEC, 16);
		if (sock < 0 || pidfd < 0 || dup2(sock, 3) < 0 || dup2(pidfd, 4) < 0 ||
		    close_range(5, ~0U, 0) < 0)
			_exit(1);
		if (!qmp_execute(3, cmds, deadline, &e)) {
			gboolean gone = g_error_matches(e, QMP_ERROR, QMP_ERROR_CLOSED);

			dmem_cli_fail(PROG, 1, "x-ignore-shared could not be set (%s)%s; the carried "
				      "domain's files stay for another dmem-liveupdate --restore",
				      e->message, gone ? "" : ": stopping QEMU");
			if (!gone)
				pidfd_send_signal(4, SIGKILL, NULL, 0);
		}
		_exit(0);
	}
	close(sv[0]);
	close(qemu);
	waitpid(pid, NULL, 0);
	/* QEMU's end crosses the exec */
	if (fcntl(sv[1], F_SETFD, 0) < 0) {
		close(sv[1]);
		return -1;
	}
	return sv[1];
}

int main(int argc, char **argv)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(DmemConfig) cfg = NULL;
	g_auto(WrapResult) res = { 0 };
	Ctx ctx = { 0 };
	int first = 1;

	if (argc >= 2 && !strcmp(argv[1], "--dry-run")) {
		ctx.dry_run = TRUE;
		first = 2;
	}
	cfg = dmem_config_load(&e);
	if (!cfg)
		return dmem_cli_error(PROG, e);
	ctx.cfg = cfg;
	if (!wrap_rewrite(cfg->qemu_binary, argc - first, argv + first, resolve, &ctx, &res, &e))
		return dmem_cli_error(PROG, e);
	if (!ctx.dry_run && !check_confinement(cfg, &res, &e))
		return dmem_cli_error(PROG, e);
	if (!ctx.dry_run && wrap_carry_incoming(&res, argc - first, argv + first)) {
		int fd = carry_monitor();

		if (fd < 0)
			return dmem_cli_fail(PROG, 1, "x-ignore-shared: no monitor for the restore of a "
					     "carried domain");
		wrap_add_monitor(&res, fd);
	}

	if (ctx.dry_run) {
		for (guint i = 0; i + 1 < res.argv->len; i++)
			printf("%s\n", (char *)g_ptr_array_index(res.argv, i));
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (same_file(cfg->qemu_binary, "/proc/self/exe"))
		return dmem_cli_fail(PROG, 1, "[qemu] binary points at the wrapper itself");
	for (guint i = 0; i < res.files->len; i++) {
		const char *p = g_ptr_array_index(res.files, i);
		struct stat st;
		int err = lstat(p, &st) < 0 ? errno : 0;

		/* QEMU would create a missing file itself, outside admission control */
		if (err || !S_ISREG(st.st_mode))
			return dmem_cli_fail(PROG, 1, "%s: %s (did the dmemfs hook prepare this "
					     "domain?)", p, err ? g_strerror(err) : "not a regular file");
	}
	execv(cfg->qemu_binary, (char **)res.argv->pdata);
	return dmem_cli_fail(PROG, 1, "exec %s: %s", cfg->qemu_binary, g_strerror(errno));
}
