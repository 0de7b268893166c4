/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the renderers of the report share (report.c, fleet.c), not for
 * main.c: one renderer a file, render-{table,json,svg,prometheus}.c, each
 * for one host and, looped over the hosts, for the fleet.
 */
#ifndef CAP_RENDER_H
#define CAP_RENDER_H

#include "capacity.h"

static inline uint64_t cap_sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* "3:1", the --mix ratio */
char *cap_mix_text(const cap_report *r);
/* a as a percentage of b, 0 for b = 0 */
double cap_pct(uint64_t a, uint64_t b);
/* "!KEEP:ALIGN", the dmem= value that gives each node its equal-terms pool */
char *cap_recommend_param(const cap_report *r);

/* fleet.c: a host that was read and is not a duplicate counts in the total */
bool cap_fleet_counts(const cap_fleet_host *f);
/* guests of shape @s in model @m on host @f, -1 where absent; @s = nshapes is the --mix */
gint64 cap_fleet_fit(const cap_fleet_host *f, int s, cap_model_id m);
/* shape @s of the first host that has it */
const cap_shape *cap_fleet_shape(const cap_fleet_host *f, int n, int s);

#endif
