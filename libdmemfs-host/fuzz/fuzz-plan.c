// SPDX-License-Identifier: GPL-2.0-or-later
/* libFuzzer: domain XML -> plan (+ JSON and admission on a fixed pool). */
#include "plan.h"

#include <libxml/parser.h>

static void quiet(void *ctx, const char *msg, ...)
{
	(void)ctx; (void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	PlanOptions o = { .force = TRUE, .pagesize = size & 1 ? 2 << 20 : 0 };
	g_autoptr(GError) e = NULL;
	g_autoptr(DomainPlan) p = NULL;

	xmlSetGenericErrorFunc(NULL, quiet);
	p = plan_from_xml((const char *)data, size, &o, &e);
	if (p) {
		g_autofree char *json = plan_to_json(p);
		g_autoptr(GArray) s = g_array_new(FALSE, TRUE, sizeof(DmemNodeStat));
		DmemNodeStat st[2] = { { 0, 8ULL << 30, 4ULL << 30, 4ULL << 30 },
				       { 1, 8ULL << 30, 1ULL << 30, 7ULL << 30 } };

		g_array_append_vals(s, st, 2);
		plan_admit(p, s, NULL);
	}
	return 0;
}
