// SPDX-License-Identifier: GPL-2.0
/* Size and node-name parsing.  All units are binary: K = KiB, G = GiB. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "capacity.h"

uint64_t cap_round_up(uint64_t v, uint64_t a)
{
	if (a == 0 || v % a == 0)
		return v;
	return v + (a - v % a);
}

uint64_t cap_round_down(uint64_t v, uint64_t a)
{
	return a ? v - v % a : v;
}

static int unit_shift(const char *u, unsigned *shift)
{
	static const struct {
		const char *name;
		unsigned shift;
	} units[] = {
		{ "B", 0 },
		{ "K", 10 }, { "KiB", 10 },
		{ "M", 20 }, { "MiB", 20 },
		{ "G", 30 }, { "GiB", 30 },
		{ "T", 40 }, { "TiB", 40 },
		{ "P", 50 }, { "PiB", 50 },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
		if (g_ascii_strcasecmp(u, units[i].name) == 0) {
			*shift = units[i].shift;
			return 0;
		}
	}
	return -1;
}

int cap_parse_size(const char *s, uint64_t *out, char **err)
{
	const char *p = s;
	uint64_t whole = 0, frac_num = 0, frac_den = 1;
	bool digits = false;
	unsigned shift;

	if (!s || !*s) {
		*err = g_strdup("empty size");
		return -1;
	}
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '-') {
		*err = g_strdup_printf("negative size '%s'", s);
		return -1;
	}
	if (*p == '+')
		p++;
	while (isdigit((unsigned char)*p)) {
		if (whole > (UINT64_MAX - 9) / 10) {
			*err = g_strdup_printf("size '%s' is too large", s);
			return -1;
		}
		whole = whole * 10 + (uint64_t)(*p - '0');
		digits = true;
		p++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			if (frac_den < UINT64_C(1000000000)) {
				frac_num = frac_num * 10 + (uint64_t)(*p - '0');
				frac_den *= 10;
			}
			digits = true;
			p++;
		}
	}
	if (!digits) {
		*err = g_strdup_printf("size '%s' has no number", s);
		return -1;
	}
	if (!*p) {
		*err = g_strdup_printf("size '%s' has no unit (use B, K, M, G, T or P)", s);
		return -1;
	}
	if (unit_shift(p, &shift) < 0) {
		*err = g_strdup_printf("unknown unit '%s' in size '%s' (use B, K, M, G, T or P; binary multiples)",
				       p, s);
		return -1;
	}
	if (shift < 64 && whole > (UINT64_MAX >> shift)) {
		*err = g_strdup_printf("size '%s' is too large", s);
		return -1;
	}
	uint64_t v = whole << shift;
	if (frac_num) {
		/* frac_num / frac_den of one unit, exact in 128 bits */
		unsigned __int128 f = ((unsigned __int128)frac_num << shift) / frac_den;
		if ((unsigned __int128)UINT64_MAX - v < f) {
			*err = g_strdup_printf("size '%s' is too large", s);
			return -1;
		}
		v += (uint64_t)f;
	}
	if (v == 0) {
		*err = g_strdup_printf("size '%s' is zero", s);
		return -1;
	}
	*out = v;
	return 0;
}

/* "node3", "3" -> 3; *end is left after the digits */
int cap_parse_node_prefix(const char *s, const char **end, int *id, char **err)
{
	const char *p = g_str_has_prefix(s, "node") ? s + 4 : s;
	char *e;
	long v;

	errno = 0;
	v = isdigit((unsigned char)*p) ? strtol(p, &e, 10) : -1;
	if (v < 0 || errno || v >= 1024) {
		*err = g_strdup_printf("bad node name '%s' (use nodeN or N)", s);
		return -1;
	}
	*id = (int)v;
	*end = e;
	return 0;
}

int cap_parse_node(const char *s, int *id, char **err)
{
	const char *end;

	if (cap_parse_node_prefix(s, &end, id, err) < 0)
		return -1;
	if (*end) {
		*err = g_strdup_printf("bad node name '%s' (use nodeN or N)", s);
		return -1;
	}
	return 0;
}

char *cap_format_size(uint64_t b)
{
	if (b >= CAP_TIB && b % CAP_GIB == 0 && b % CAP_TIB == 0)
		return g_strdup_printf("%" G_GUINT64_FORMAT " TiB", b / CAP_TIB);
	if (b >= CAP_GIB)
		return g_strdup_printf("%.2f GiB", (double)b / (double)CAP_GIB);
	if (b >= CAP_MIB)
		return g_strdup_printf("%.2f MiB", (double)b / (double)CAP_MIB);
	if (b >= CAP_KIB)
		return g_strdup_printf("%.2f KiB", (double)b / (double)CAP_KIB);
	return g_strdup_printf("%" G_GUINT64_FORMAT " B", b);
}
