// SPDX-License-Identifier: GPL-2.0-or-later
/* Size and node-name parsing.  All units are binary: K = KiB, G = GiB. */
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

gboolean cap_parse_size(const char *s, uint64_t *out, GError **error)
{
	const char *p = s;
	uint64_t whole = 0, frac_num = 0, frac_den = 1, v;
	bool digits = false;
	unsigned shift;

	if (!s || !*s) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "empty size");
		return FALSE;
	}
	while (g_ascii_isspace(*p))
		p++;
	if (*p == '-') {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "negative size '%s'", s);
		return FALSE;
	}
	if (*p == '+')
		p++;
	while (g_ascii_isdigit(*p)) {
		if (whole > (UINT64_MAX - 9) / 10)
			goto too_large;
		whole = whole * 10 + (uint64_t)(*p - '0');
		digits = true;
		p++;
	}
	if (*p == '.') {
		p++;
		while (g_ascii_isdigit(*p)) {
			if (frac_den < UINT64_C(1000000000)) {
				frac_num = frac_num * 10 + (uint64_t)(*p - '0');
				frac_den *= 10;
			}
			digits = true;
			p++;
		}
	}
	if (!digits) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "size '%s' has no number", s);
		return FALSE;
	}
	if (!*p) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "size '%s' has no unit (use B, K, M, G, T or P)", s);
		return FALSE;
	}
	if (unit_shift(p, &shift) < 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "unknown unit '%s' in size '%s' (use B, K, M, G, T or P; binary multiples)",
			    p, s);
		return FALSE;
	}
	if (shift < 64 && whole > (UINT64_MAX >> shift))
		goto too_large;
	v = whole << shift;
	if (frac_num) {
		/* frac_num / frac_den of one unit, exact in 128 bits */
		unsigned __int128 f = ((unsigned __int128)frac_num << shift) / frac_den;

		if ((unsigned __int128)UINT64_MAX - v < f)
			goto too_large;
		v += (uint64_t)f;
	}
	if (v == 0) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "size '%s' is zero", s);
		return FALSE;
	}
	if (v > CAP_MAX_SIZE)
		goto too_large;
	*out = v;
	return TRUE;
too_large:
	g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
		    "size '%s' is too large (at most %" G_GUINT64_FORMAT "P)", s,
		    CAP_MAX_SIZE / CAP_PIB);
	return FALSE;
}

/* "node3" or "3" */
gboolean cap_parse_node(const char *s, int *id, GError **error)
{
	const char *p = g_str_has_prefix(s, "node") ? s + 4 : s;
	guint64 v;

	if (!g_ascii_isdigit(*p) ||
	    !g_ascii_string_to_unsigned(p, 10, 0, DMEM_MAX_NODES - 1, &v, NULL)) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "bad node name '%s' (use nodeN or N)",
			    s);
		return FALSE;
	}
	*id = (int)v;
	return TRUE;
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
