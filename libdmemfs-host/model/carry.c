// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The state of a host kernel update (dmem-liveupdate): which domains are
 * carried over the kexec, and what they need to come back.  It is the one
 * owner of a carried domain's lifetime: the hook and the wrapper honour the
 * mark in a domain's directory only while this state lists the domain, so a
 * mark left behind by a failed update, a crash or a hand never keeps dmem
 * held once the state is gone (dmem-liveupdate --abort, or a restore).
 *
 * A GKeyFile in the configured state directory, root's, mode 0600:
 *
 *   [liveupdate]  version=1 and the update's own keys (the kexec line)
 *   [mounts]      mount point = table address, for each persisted mount
 *   [sources]     mount point = its source (what names it to the kernel)
 *   [domain UUID] name, image, stopped_at_ms, save_ms
 *
 * Anything else, another version, a section name that is not a UUID or an
 * image outside the state directory is refused whole, with one line.
 */
#include "carry.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#define GROUP "liveupdate"
#define DOMAIN_PREFIX "domain "

struct DmemCarry {
	char *dir, *path;
	GKeyFile *kf;
};

void dmem_carry_free(DmemCarry *c)
{
	if (!c)
		return;
	g_free(c->dir);
	g_free(c->path);
	if (c->kf)
		g_key_file_unref(c->kf);
	g_free(c);
}

static gboolean refuse(const DmemCarry *c, GError **error, const char *why)
{
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: not a dmem-liveupdate state: %s",
		    c->path, why);
	return FALSE;
}

/* Every section and image as dmem_carry_load() promises them. */
static gboolean validate(const DmemCarry *c, GError **error)
{
	g_auto(GStrv) groups = g_key_file_get_groups(c->kf, NULL);
	g_autoptr(GError) e = NULL;
	gint64 version;

	version = g_key_file_get_int64(c->kf, GROUP, "version", &e);
	if (e)
		return refuse(c, error, "no [" GROUP "] version");
	if (version != DMEM_CARRY_VERSION) {
		g_autofree char *why = g_strdup_printf("version %" G_GINT64_FORMAT
						       ", this tool knows %d",
						       version, DMEM_CARRY_VERSION);

		return refuse(c, error, why);
	}
	for (guint i = 0; groups[i]; i++) {
		const char *g = groups[i];
		g_autofree char *uuid = NULL, *image = NULL, *want = NULL;

		if (!strcmp(g, GROUP) || !strcmp(g, "mounts") || !strcmp(g, "sources"))
			continue;
		if (!g_str_has_prefix(g, DOMAIN_PREFIX)) {
			g_autofree char *why = g_strdup_printf("unknown section [%s]", g);

			return refuse(c, error, why);
		}
		uuid = dmem_uuid_normalize(g + strlen(DOMAIN_PREFIX));
		if (!uuid || strcmp(uuid, g + strlen(DOMAIN_PREFIX))) {
			g_autofree char *why = g_strdup_printf("section [%s] is not a UUID", g);

			return refuse(c, error, why);
		}
		image = g_key_file_get_string(c->kf, g, "image", NULL);
		want = g_strdup_printf("%s/%s.save", c->dir, uuid);
		if (image && strcmp(image, want)) {
			g_autofree char *why = g_strdup_printf("[%s] image %s is not %s", g, image,
							       want);

			return refuse(c, error, why);
		}
	}
	return TRUE;
}

DmemCarry *dmem_carry_load(const DmemConfig *cfg, GError **error)
{
	g_autoptr(DmemCarry) c = g_new0(DmemCarry, 1);
	g_autoptr(GError) e = NULL;

	c->dir = g_strdup(cfg->state_dir);
	c->path = g_build_filename(c->dir, DMEM_CARRY_FILE, NULL);
	c->kf = g_key_file_new();
	if (!g_key_file_load_from_file(c->kf, c->path, G_KEY_FILE_NONE, &e)) {
		if (!g_error_matches(e, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
			refuse(c, error, e->message);
			return NULL;
		}
		g_key_file_set_int64(c->kf, GROUP, "version", DMEM_CARRY_VERSION);
		return g_steal_pointer(&c);
	}
	if (!validate(c, error))
		return NULL;
	return g_steal_pointer(&c);
}

const char *dmem_carry_path(const DmemCarry *c)
{
	return c->path;
}

const char *dmem_carry_dir(const DmemCarry *c)
{
	return c->dir;
}

char *dmem_carry_image(const DmemCarry *c, const char *uuid)
{
	return g_strdup_printf("%s/%s.save", c->dir, uuid);
}

GPtrArray *dmem_carry_domains(const DmemCarry *c)
{
	g_auto(GStrv) groups = g_key_file_get_groups(c->kf, NULL);
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; groups[i]; i++)
		if (g_str_has_prefix(groups[i], DOMAIN_PREFIX))
			g_ptr_array_add(out, g_strdup(groups[i] + strlen(DOMAIN_PREFIX)));
	return out;
}

static char *group_of(const char *uuid)
{
	return g_strconcat(DOMAIN_PREFIX, uuid, NULL);
}

gboolean dmem_carry_has(const DmemCarry *c, const char *uuid)
{
	g_autofree char *g = group_of(uuid);

	return g_key_file_has_group(c->kf, g);
}

void dmem_carry_set(DmemCarry *c, const char *uuid, const char *key, const char *value)
{
	g_autofree char *g = uuid ? group_of(uuid) : g_strdup(GROUP);

	g_key_file_set_string(c->kf, g, key, value);
}

char *dmem_carry_get(const DmemCarry *c, const char *uuid, const char *key)
{
	g_autofree char *g = uuid ? group_of(uuid) : g_strdup(GROUP);

	return g_key_file_get_string(c->kf, g, key, NULL);
}

void dmem_carry_set_mount(DmemCarry *c, const char *mount, const char *addr, const char *source)
{
	g_key_file_set_string(c->kf, "mounts", mount, addr);
	g_key_file_set_string(c->kf, "sources", mount, source);
}

gboolean dmem_carry_mount(const DmemCarry *c, const char *mount, char **source)
{
	if (!g_key_file_has_key(c->kf, "mounts", mount, NULL))
		return FALSE;
	if (source)
		*source = g_key_file_get_string(c->kf, "sources", mount, NULL);
	return TRUE;
}

void dmem_carry_remove(DmemCarry *c, const char *uuid)
{
	g_autofree char *g = group_of(uuid);

	g_key_file_remove_group(c->kf, g, NULL);
}

gboolean dmem_carry_save(const DmemCarry *c, GError **error)
{
	g_autoptr(GPtrArray) doms = dmem_carry_domains(c);
	g_autofree char *text = NULL;
	gsize len;

	if (!doms->len) {
		/* nothing carried: no state, and no mark is honoured */
		if (g_unlink(c->path) < 0 && errno != ENOENT) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: %s", c->path,
				    g_strerror(errno));
			return FALSE;
		}
		return TRUE;
	}
	if (g_mkdir_with_parents(c->dir, 0700) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: %s", c->dir,
			    g_strerror(errno));
		return FALSE;
	}
	text = g_key_file_to_data(c->kf, &len, NULL);
	/* a temporary file renamed over the state: never half a state */
	return g_file_set_contents_full(c->path, text, len, G_FILE_SET_CONTENTS_CONSISTENT, 0600,
					error);
}

int dmem_carry_lists(const DmemConfig *cfg, const char *uuid)
{
	g_autoptr(DmemCarry) c = dmem_carry_load(cfg, NULL);

	return c ? dmem_carry_has(c, uuid) : -1;
}

char *dmem_qmp_ignore_shared(gboolean on)
{
	return g_strdup_printf("{\"execute\":\"migrate-set-capabilities\",\"arguments\":"
			       "{\"capabilities\":[{\"capability\":\"x-ignore-shared\","
			       "\"state\":%s}]}}",
			       on ? "true" : "false");
}
