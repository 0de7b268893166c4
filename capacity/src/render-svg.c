// SPDX-License-Identifier: GPL-2.0-or-later
/* The report as an SVG bar chart. */
#include <math.h>
#include <string.h>

#include "render.h"

static void xesc(GString *o, const char *s)
{
	g_autofree char *e = g_markup_escape_text(s, -1);

	g_string_append(o, e);
}

static const char *const colors[CAP_M_COUNT] = {
	"#9e9e9e", "#90caf9", "#1e88e5", "#a5d6a7", "#43a047", "#e65100", "#ff8a65", "#ffb74d",
};

/*
 * Grouped bars: one group per guest shape (guests per host), or, with no
 * shape, one group of guest-pool GiB per model.
 */
char *cap_report_svg(const cap_report *r)
{
	const cap_host *h = r->host;
	GString *o = g_string_new(NULL);
	int groups = r->nshapes ? r->nshapes : 1, nm = 0;
	const int bar = 22, gap = 30, left = 70, top = 60, plot_h = 260;
	double maxv = 0;
	int width, height;

	for (int m = 0; m < CAP_M_COUNT; m++)
		nm += r->present[m];
	for (int g = 0; g < groups; g++)
		for (int m = 0; m < CAP_M_COUNT; m++) {
			double v;

			if (!r->present[m])
				continue;
			v = r->nshapes ? (double)r->fits[g * CAP_M_COUNT + m].per_host
				       : (double)cap_model_pool_total(h, &r->models[m]) / (double)CAP_GIB;
			maxv = MAX(maxv, v);
		}
	if (maxv <= 0)
		maxv = 1;
	width = left + groups * (nm * bar + gap) + 220;
	height = top + plot_h + 80;

	g_string_append_printf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
				  "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n",
			       width, height, width, height);
	g_string_append_printf(o, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
			       width, height);
	g_string_append_printf(o, "<text x=\"%d\" y=\"22\" font-size=\"15\">%s</text>\n", left,
			       r->nshapes ? "Guests per host by memory model"
					  : "Guest memory pool per host (GiB) by memory model");
	g_string_append_printf(o, "<text x=\"%d\" y=\"40\">%s</text>\n", left,
			       h->live ? "live host: dmem pool measured, other models modelled from "
					 "measured RAM"
				       : "planning: all figures modelled from --host/--dmem");
	g_string_append_printf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
			       left, top + plot_h, left + groups * (nm * bar + gap), top + plot_h);
	g_string_append_printf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
			       left, top, left, top + plot_h);
	g_string_append_printf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.0f</text>\n",
			       left - 4, top + 4, maxv);
	g_string_append_printf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n", left - 4,
			       top + plot_h + 4);

	for (int g = 0; g < groups; g++) {
		int x0 = left + gap / 2 + g * (nm * bar + gap), k = 0;

		for (int m = 0; m < CAP_M_COUNT; m++) {
			double v;
			int bh, x;

			if (!r->present[m])
				continue;
			v = r->nshapes ? (double)r->fits[g * CAP_M_COUNT + m].per_host
				       : (double)cap_model_pool_total(h, &r->models[m]) / (double)CAP_GIB;
			bh = (int)lround(v / maxv * plot_h);
			x = x0 + k * bar;
			g_string_append_printf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
						  "fill=\"%s\"><title>",
					       x, top + plot_h - bh, bar - 2, bh, colors[m]);
			xesc(o, r->models[m].name);
			g_string_append_printf(o, ": %.0f</title></rect>\n", v);
			g_string_append_printf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
						  "font-size=\"9\">%.0f</text>\n",
					       x + bar / 2 - 1, top + plot_h - bh - 3, v);
			k++;
		}
		g_string_append_printf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
				       x0 + nm * bar / 2, top + plot_h + 18);
		xesc(o, r->nshapes ? r->shapes[g]->name : "pool");
		g_string_append(o, "</text>\n");
	}
	int lx = left + groups * (nm * bar + gap) + 20, ly = top;

	for (int m = 0; m < CAP_M_COUNT; m++) {
		if (!r->present[m])
			continue;
		g_string_append_printf(o, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
					  "<text x=\"%d\" y=\"%d\">",
				       lx, ly, colors[m], lx + 18, ly + 10);
		xesc(o, r->models[m].name);
		g_string_append_printf(o, " (%s)</text>\n", cap_source_name(r->models[m].pool_src));
		ly += 18;
	}
	g_string_append(o, "</svg>\n");
	return g_string_free(o, FALSE);
}

/* A label value in the exposition format: backslash, quote and newline escaped. */
