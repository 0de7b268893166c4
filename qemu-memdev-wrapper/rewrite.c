// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Rewrite libvirt's memory backends to dmemfs files.
 *
 * -object memory-backend-ram|memfd|file (JSON or key=value) becomes
 * memory-backend-file with the same id, size, host-nodes, policy, prealloc*
 * and prealloc-context (everything else is kept too), minus the memfd/file
 * specific hugetlb, hugetlbsize, seal and any old mem-path/share/align, plus
 * mem-path=<mount>/<uuid>/<id>, share=on (dmemfs refuses private mappings),
 * align=<dmemfs page size> (QEMU only aligns hugetlbfs mappings by itself) and,
 * for a former memory-backend-ram, x-use-canonical-path-for-ramblock-id=off so
 * the RAMBlock id stays the plain backend id (what a ram backend always had;
 * file backends default to canonical paths on machine types <= 3.1).
 * A virtio-mem-pci device on one of those backends gets prealloc=on.
 */
#include "rewrite.h"

#include <fcntl.h>

#include <json-glib/json-glib.h>
#include <string.h>

/* QEMU 7.2 options that take no argument (qemu-options.hx); all others take one */
static const char *const noarg_opts[] = {
	"h", "help", "version", "audio-help", "mem-prealloc", "snapshot", "usb", "nographic",
	"portrait", "full-screen", "win2k-hack", "no-fd-bootchk", "no-acpi", "no-hpet",
	"singlestep", "preconfig", "S", "s", "enable-kvm", "xen-attach", "xen-domid-restrict",
	"no-reboot", "no-shutdown", "daemonize", "only-migratable", "nodefaults",
	"no-user-config", "enable-sync-profile", "no-quit", "alt-grab", "ctrl-grab", "sdl",
	"curses", "semihosting", "old-param", "enable-fips", "no-frame", "async-teardown",
};

static const char *const dropped_keys[] = {
	"mem-path", "share", "align", "hugetlb", "hugetlbsize", "seal",
};

#define CANON_KEY "x-use-canonical-path-for-ramblock-id"
#define MAX_JSON_DEPTH 64

void wrap_result_clear(WrapResult *r)
{
	if (r->argv)
		g_ptr_array_unref(r->argv);
	if (r->files)
		g_ptr_array_unref(r->files);
	memset(r, 0, sizeof(*r));
}

/* "-foo"/"--foo" -> "foo"; NULL for positional arguments */
static const char *opt_name(const char *a)
{
	if (a[0] != '-' || !a[1])
		return NULL;
	return a[1] == '-' ? a + 2 : a + 1;
}

static gboolean takes_arg(const char *name)
{
	for (guint i = 0; i < G_N_ELEMENTS(noarg_opts); i++)
		if (!strcmp(name, noarg_opts[i]))
			return FALSE;
	return TRUE;
}

static gboolean is_memory_backend(const char *type)
{
	return type && (!strcmp(type, "memory-backend-ram") || !strcmp(type, "memory-backend-memfd") ||
			!strcmp(type, "memory-backend-file"));
}

/* ---- key=value (QEMU keyval: ',' separates, ',,' is a literal comma) ----- */

typedef struct {
	char *raw;   /* original text, escapes kept */
	char *key;   /* NULL: implied (no '=') */
	char *value; /* unescaped */
} KvTok;

static void kv_free(gpointer p)
{
	KvTok *t = p;

	g_free(t->raw);
	g_free(t->key);
	g_free(t->value);
	g_free(t);
}

static char *kv_unescape(const char *s, gsize n)
{
	GString *v = g_string_sized_new(n);

	for (gsize i = 0; i < n; i++) {
		g_string_append_c(v, s[i]);
		if (s[i] == ',' && i + 1 < n && s[i + 1] == ',')
			i++;
	}
	return g_string_free(v, FALSE);
}

static GPtrArray *kv_split(const char *s)
{
	GPtrArray *toks = g_ptr_array_new_with_free_func(kv_free);
	const char *p = s;

	for (;;) {
		const char *start = p, *eq = NULL;
		KvTok *t = g_new0(KvTok, 1);

		while (*p && !(*p == ',' && p[1] != ',')) {
			if (*p == ',')
				p++; /* ",," */
			else if (*p == '=' && !eq)
				eq = p;
			p++;
		}
		t->raw = g_strndup(start, (gsize)(p - start));
		if (eq) {
			t->key = g_strndup(start, (gsize)(eq - start));
			t->value = kv_unescape(eq + 1, (gsize)(p - eq - 1));
		} else {
			t->value = kv_unescape(start, (gsize)(p - start));
		}
		g_ptr_array_add(toks, t);
		if (!*p)
			break;
		p++;
	}
	return toks;
}

static const char *kv_get(GPtrArray *toks, const char *key, const char *implied)
{
	for (guint i = 0; i < toks->len; i++) {
		KvTok *t = g_ptr_array_index(toks, i);

		if (t->key ? !strcmp(t->key, key) : (i == 0 && implied && !strcmp(implied, key)))
			return t->value;
	}
	return NULL;
}

static char *kv_escape(const char *s)
{
	g_auto(GStrv) parts = g_strsplit(s, ",", -1);

	return g_strjoinv(",,", parts);
}

/* ---- JSON ---------------------------------------------------------------- */

/* json-glib recurses per nesting level; QEMU itself stops at 1024 */
static gboolean json_depth_ok(const char *s)
{
	gboolean in_str = FALSE;
	int depth = 0;

	for (; *s; s++) {
		if (in_str) {
			if (*s == '\\' && s[1])
				s++;
			else if (*s == '"')
				in_str = FALSE;
		} else if (*s == '"') {
			in_str = TRUE;
		} else if (*s == '{' || *s == '[') {
			if (++depth > MAX_JSON_DEPTH)
				return FALSE;
		} else if (*s == '}' || *s == ']') {
			depth--;
		}
	}
	return TRUE;
}

static JsonObject *json_parse_object(const char *s, JsonParser *parser, GError **error)
{
	JsonNode *root;

	if (!json_depth_ok(s) || !json_parser_load_from_data(parser, s, -1, NULL) ||
	    !(root = json_parser_get_root(parser)) || !JSON_NODE_HOLDS_OBJECT(root)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "-object: invalid JSON: %.80s", s);
		return NULL;
	}
	return json_node_get_object(root);
}

static const char *json_str(JsonObject *o, const char *key)
{
	JsonNode *n = json_object_get_member(o, key);

	return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
		       ? json_node_get_string(n)
		       : NULL;
}

/*
 * An option value in either form, QEMU's JSON or key=value, parsed, edited
 * and formatted back: each rewrite is parse -> edit -> format.  Keys keep
 * their order; a key that is set again keeps its place, a new one goes last.
 */
typedef struct {
	JsonObject *o; /* JSON, a copy we may edit */
	GPtrArray *kv; /* key=value tokens */
} OptVal;

static void optval_clear(OptVal *v)
{
	g_clear_pointer(&v->o, json_object_unref);
	g_clear_pointer(&v->kv, g_ptr_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(OptVal, optval_clear)

static gboolean optval_parse(OptVal *v, const char *val, GError **error)
{
	g_autoptr(JsonParser) parser = NULL;
	g_autoptr(GList) members = NULL;
	JsonObject *in;

	if (val[0] != '{') {
		v->kv = kv_split(val);
		return TRUE;
	}
	parser = json_parser_new_immutable();
	in = json_parse_object(val, parser, error);
	if (!in)
		return FALSE;
	/* json_object_get_members() keeps the input order, json_object_iter does not */
	members = json_object_get_members(in);
	v->o = json_object_new();
	for (GList *l = members; l; l = l->next)
		json_object_set_member(v->o, l->data, json_node_copy(json_object_get_member(in, l->data)));
	return TRUE;
}

/* implied: the key of a leading value without "key=" (qom-type, driver) */
static const char *optval_get(const OptVal *v, const char *key, gboolean implied)
{
	return v->o ? json_str(v->o, key) : kv_get(v->kv, key, implied ? key : NULL);
}

/* @key (or, with @implied, a leading value without "key=") set to @kv_text / @json */
static void optval_set(OptVal *v, const char *key, gboolean implied, const char *kv_text,
		       JsonNode *json)
{
	KvTok *t = NULL;

	if (v->o) {
		json_object_set_member(v->o, key, json);
		return;
	}
	json_node_unref(json);
	for (guint i = 0; i < v->kv->len && !t; i++) {
		KvTok *k = g_ptr_array_index(v->kv, i);

		if (k->key ? !strcmp(k->key, key) : (i == 0 && implied))
			t = k;
	}
	if (!t) {
		t = g_new0(KvTok, 1);
		t->key = g_strdup(key);
		g_ptr_array_add(v->kv, t);
	}
	g_free(t->raw);
	g_free(t->value);
	t->value = g_strdup(kv_text);
	{
		g_autofree char *esc = kv_escape(kv_text);

		t->raw = t->key ? g_strdup_printf("%s=%s", t->key, esc) : g_steal_pointer(&esc);
	}
}

static void optval_set_str(OptVal *v, const char *key, gboolean implied, const char *val)
{
	JsonNode *n = json_node_new(JSON_NODE_VALUE);

	json_node_set_string(n, val);
	optval_set(v, key, implied, val, n);
}

static void optval_set_bool(OptVal *v, const char *key, gboolean val)
{
	JsonNode *n = json_node_new(JSON_NODE_VALUE);

	json_node_set_boolean(n, val);
	optval_set(v, key, FALSE, val ? "on" : "off", n);
}

static void optval_set_u64(OptVal *v, const char *key, guint64 val)
{
	g_autofree char *text = g_strdup_printf("%" G_GUINT64_FORMAT, val);
	JsonNode *n = json_node_new(JSON_NODE_VALUE);

	json_node_set_int(n, (gint64)val);
	optval_set(v, key, FALSE, text, n);
}

static void optval_drop(OptVal *v, const char *key)
{
	if (v->o) {
		json_object_remove_member(v->o, key);
		return;
	}
	for (guint i = v->kv->len; i-- > 0;) {
		KvTok *k = g_ptr_array_index(v->kv, i);

		if (k->key && !strcmp(k->key, key))
			g_ptr_array_remove_index(v->kv, i);
	}
}

static char *optval_format(const OptVal *v)
{
	g_autoptr(GString) s = NULL;

	if (v->o) {
		g_autoptr(JsonNode) root = json_node_new(JSON_NODE_OBJECT);
		g_autoptr(JsonGenerator) gen = json_generator_new();

		json_node_set_object(root, v->o);
		json_generator_set_root(gen, root);
		return json_generator_to_data(gen, NULL);
	}
	s = g_string_new(NULL);
	for (guint i = 0; i < v->kv->len; i++)
		g_string_append_printf(s, "%s%s", i ? "," : "",
				       ((KvTok *)g_ptr_array_index(v->kv, i))->raw);
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* a memory backend of libvirt's as a dmemfs file (the header comment) */
static char *backend_rewrite(OptVal *v, const char *type, const char *path, guint64 align)
{
	gboolean was_ram = !strcmp(type, "memory-backend-ram");

	optval_set_str(v, "qom-type", TRUE, "memory-backend-file");
	for (guint i = 0; i < G_N_ELEMENTS(dropped_keys); i++)
		optval_drop(v, dropped_keys[i]);
	optval_set_str(v, "mem-path", FALSE, path);
	optval_set_bool(v, "share", TRUE);
	optval_set_u64(v, "align", align);
	if (was_ram && !optval_get(v, CANON_KEY, FALSE))
		optval_set_bool(v, CANON_KEY, FALSE);
	return optval_format(v);
}

/* ---- virtio-mem devices ------------------------------------------------------- */

/*
 * A virtio-mem device on a dmemfs file must preallocate each block it plugs:
 * then a grow the pool cannot serve is refused to the guest (the block stays
 * unplugged) instead of faulting later in KVM or QEMU.  libvirt only sets it
 * with <allocation mode='immediate'/>.
 */
static char *device_prealloc(const char *val, GPtrArray *backend_ids, GError **error)
{
	g_auto(OptVal) v = { 0 };
	const char *driver, *memdev;

	if (!optval_parse(&v, val, error))
		return NULL;
	driver = optval_get(&v, "driver", TRUE);
	memdev = optval_get(&v, "memdev", FALSE);
	if (!driver || strcmp(driver, "virtio-mem-pci") || !memdev ||
	    !g_ptr_array_find_with_equal_func(backend_ids, memdev, g_str_equal, NULL))
		return g_strdup(val);
	optval_set_bool(&v, "prealloc", TRUE);
	return optval_format(&v);
}

/* ---- the argv ---------------------------------------------------------------- */

typedef struct {
	int index;       /* of the -object value */
	char *id;
} Backend;

static gboolean legacy(const char *what, GError **error)
{
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_UNSUPPORTED,
		    "legacy %s is not supported with dmemfs: use a machine type >= 5.1 or "
		    "<memoryBacking><source type='file'/>", what);
	return FALSE;
}

gboolean wrap_rewrite(const char *qemu_binary, int nargs, char *const *args,
		      WrapResolveFn resolve, gpointer data, WrapResult *out, GError **error)
{
	g_autoptr(GArray) found = g_array_new(FALSE, TRUE, sizeof(int));
	g_autoptr(GArray) devices = g_array_new(FALSE, TRUE, sizeof(int));
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *uuid = NULL;

	memset(out, 0, sizeof(*out));
	out->argv = g_ptr_array_new_with_free_func(g_free);
	out->files = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(out->argv, g_strdup(qemu_binary));
	for (int i = 0; i < nargs; i++)
		g_ptr_array_add(out->argv, g_strdup(args[i]));
	g_ptr_array_add(out->argv, NULL);

	/* pass 1: find backends, -uuid and legacy forms */
	for (int i = 0; i < nargs; i++) {
		const char *name = opt_name(args[i]);
		const char *val = i + 1 < nargs ? args[i + 1] : NULL;

		if (!name || !takes_arg(name))
			continue;
		i++; /* skip the value */
		if (!val)
			break;
		if (!strcmp(name, "mem-path"))
			return legacy("-mem-path", error);
		if (!strcmp(name, "uuid")) {
			/* libvirt passes one: two could point QEMU at another domain's files */
			if (uuid) {
				g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
					    "a second -uuid '%s': one domain, one UUID", val);
				return FALSE;
			}
			uuid = dmem_uuid_normalize(val);
			if (!uuid) {
				g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "invalid -uuid '%s'", val);
				return FALSE;
			}
		} else if (!strcmp(name, "numa")) {
			g_autoptr(GPtrArray) t = kv_split(val);
			const char *type = kv_get(t, "type", "type");

			if (type && !strcmp(type, "node") && kv_get(t, "mem", NULL))
				return legacy("-numa node,mem=", error);
		} else if (!strcmp(name, "object")) {
			g_auto(OptVal) v = { 0 };

			if (!optval_parse(&v, val, error))
				return FALSE;
			if (is_memory_backend(optval_get(&v, "qom-type", TRUE)))
				g_array_append_val(found, i);
		} else if (!strcmp(name, "device") && strstr(val, "virtio-mem-pci")) {
			g_array_append_val(devices, i); /* other devices are not even parsed */
		}
	}
	if (found->len == 0)
		return TRUE; /* probes, or nothing to do: unchanged */
	if (!uuid) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "memory backends but no -uuid: cannot find the dmemfs files");
		return FALSE;
	}

	/* pass 2: rewrite them in place */
	for (guint k = 0; k < found->len; k++) {
		int i = g_array_index(found, int, k);
		g_auto(OptVal) v = { 0 };
		WrapTarget target = { 0 };
		const char *type, *id;
		char *nv;

		if (!optval_parse(&v, args[i], error))
			return FALSE;
		type = optval_get(&v, "qom-type", TRUE);
		id = optval_get(&v, "id", FALSE);
		if (!dmem_backend_id_valid(id)) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "memory backend id '%s' is missing or unusable", id ? id : "");
			return FALSE;
		}
		if (!resolve(uuid, id, data, &target, error))
			return FALSE;
		nv = backend_rewrite(&v, type, target.path, target.pagesize);
		g_free(out->argv->pdata[i + 1]);
		out->argv->pdata[i + 1] = nv;
		g_ptr_array_add(out->files, target.path);
		g_ptr_array_add(ids, g_strdup(id));
	}
	for (guint k = 0; k < devices->len; k++) {
		int i = g_array_index(devices, int, k);
		char *nv = device_prealloc(args[i], ids, error);

		if (!nv)
			return FALSE;
		g_free(out->argv->pdata[i + 1]);
		out->argv->pdata[i + 1] = nv;
	}
	out->rewritten = TRUE;
	return TRUE;
}

gboolean wrap_carry_incoming(const WrapResult *r, int nargs, char *const *args)
{
	g_autofree char *mount = NULL, *uuid = NULL;
	gboolean incoming = FALSE;
	int fd;

	for (int i = 0; i < nargs && !incoming; i++) {
		const char *n = opt_name(args[i]);

		incoming = n && !strcmp(n, "incoming");
	}
	if (!incoming || !r->files || !r->files->len)
		return FALSE;
	if (!dmem_domain_path_split(g_ptr_array_index(r->files, 0), &mount, &uuid))
		return FALSE;
	fd = dmem_mount_open(mount);
	if (fd < 0)
		return FALSE;
	/* the hook, as root, removed a mark the carry state does not list */
	incoming = dmem_domain_marked(fd, uuid);
	close(fd);
	return incoming;
}

void wrap_add_monitor(WrapResult *r, int fd)
{
	/* before the argv's NULL */
	g_ptr_array_insert(r->argv, r->argv->len - 1, g_strdup("-chardev"));
	g_ptr_array_insert(r->argv, r->argv->len - 1,
			   g_strdup_printf("socket,id=" WRAP_CARRY_MONITOR ",fd=%d", fd));
	g_ptr_array_insert(r->argv, r->argv->len - 1, g_strdup("-mon"));
	g_ptr_array_insert(r->argv, r->argv->len - 1,
			   g_strdup("chardev=" WRAP_CARRY_MONITOR ",mode=control"));
}

gboolean wrap_resolve_config(const char *uuid, const char *id, gpointer data, WrapTarget *out,
			     GError **error)
{
	const DmemConfig *cfg = data;
	gboolean domain = FALSE;
	DmemMountIter it = { 0 };

	while (dmem_config_next_mount(cfg, &it)) {
		g_autofree char *dir = dmem_domain_path(it.path, uuid, NULL);
		g_autofree char *path = dmem_domain_path(it.path, uuid, id);

		if (g_file_test(path, G_FILE_TEST_EXISTS)) {
			out->path = g_steal_pointer(&path);
			out->pagesize = it.pagesize;
			return TRUE;
		}
		domain = domain || g_file_test(dir, G_FILE_TEST_IS_DIR);
	}
	if (domain)
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "no dmemfs file for backend %s of domain %s in any configured mount "
			    "(did the hook plan this backend?)", id, uuid);
	else
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "no dmemfs files for domain %s in any configured mount (is the dmemfs "
			    "metadata set and the hook installed?)", uuid);
	return FALSE;
}

gboolean wrap_check_confinement(const WrapResult *r, const char *label, GError **error)
{
	g_autofree char *mount = NULL, *uuid = NULL, *want = NULL, *got = NULL;

	if (!r->files || !r->files->len)
		return TRUE;
	if (!dmem_domain_path_split(g_ptr_array_index(r->files, 0), &mount, &uuid)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: not a domain's dmemfs file",
			    (char *)g_ptr_array_index(r->files, 0));
		return FALSE;
	}
	want = g_strdup_printf(DMEM_DOMAIN_DIR_PREFIX "%s (enforce)", uuid);
	got = g_strdup(label ? label : "");
	g_strchomp(got);
	if (!strcmp(got, want))
		return TRUE;
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
		    "domain %s: QEMU would run %s%s%s, not in its own AppArmor profile "
		    "(%s); every QEMU is the same user, so it could open other domains' "
		    "memory: use libvirt's AppArmor driver, or set [qemu] confinement=none "
		    "in dmemfs-host.conf", uuid, label ? "as '" : "with no AppArmor label",
		    label ? got : "", label ? "'" : "", want);
	return FALSE;
}
