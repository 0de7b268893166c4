// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The memory models and the packing of guests into them.
 *
 * Per node, with P = physical RAM and R = the node's share of the host
 * reserve (host kernel, QEMU, libvirtd):
 *
 *   4K        memmap P/64 for everything; guests get P - P/64 - R.
 *   2M, 1G    hugetlbfs without HVO: same memmap, pool rounded down to the
 *             huge page size.
 *   2M HVO    each 2M page keeps 1 of its 8 vmemmap pages (frees 7*4K);
 *   1G HVO    each 1G page keeps 1 of 4096 (frees 4095*4K).  The pool is
 *             the most pages n with n*page + P/64 - n*freed + R <= P.
 *   dmem      the dmem= part D has no struct page: memmap (P-D)/64 for the
 *             rest, plus the allocator bitmap, one bit per 4 KiB of D, plus
 *             optional per-dpage metadata (--dpage-meta).  On equal terms D
 *             is the largest multiple of the reservation granule (a 128 MiB
 *             section, or the dpage size if bigger) that leaves R to the
 *             host: D + metadata + R <= P.
 *   dmem, as booted
 *             the D that the host booted with (live) or --dmem gave: the
 *             host lives on P - D - metadata, which should cover R.
 *
 * R is --reserve, else on a live host with dmem what each node keeps outside
 * the pool and its metadata as booted, else a 4 GiB default.
 */
#include <string.h>

#include "capacity.h"

const char *cap_source_name(cap_source s)
{
	switch (s) {
	case CAP_SRC_GIVEN:
		return "given";
	case CAP_SRC_MEASURED:
		return "measured";
	case CAP_SRC_MODELLED:
		return "modelled";
	}
	return "?";
}

void cap_host_init(cap_host *h)
{
	memset(h, 0, sizeof(*h));
	h->reserve = CAP_DEFAULT_RESERVE;
	h->dmem_pagesize = 2 * CAP_MIB;
}

int cap_host_index(const cap_host *h, int id)
{
	for (int i = 0; i < h->nnodes; i++)
		if (h->node[i].id == id)
			return i;
	return -1;
}

char *cap_host_node_list(const cap_host *h)
{
	GString *s = g_string_new(NULL);

	for (int i = 0; i < h->nnodes; i++)
		g_string_append_printf(s, "%snode%d", i ? ", " : "", h->node[i].id);
	if (!h->nnodes)
		g_string_append(s, "none");
	return g_string_free(s, FALSE);
}

uint64_t cap_host_ram(const cap_host *h)
{
	uint64_t t = 0;

	for (int i = 0; i < h->nnodes; i++)
		t += h->node[i].ram;
	return t;
}

/*
 * The reserve is split evenly; node index 0 takes the remainder.  Measured:
 * the node's MemTotal.
 */
uint64_t cap_reserve_share(const cap_host *h, int idx)
{
	if (!h->nnodes)
		return 0;
	if (h->reserve_measured)
		return h->node[idx].reserve;
	uint64_t share = h->reserve / (uint64_t)h->nnodes;

	return idx == 0 ? share + h->reserve % (uint64_t)h->nnodes : share;
}

uint64_t cap_memmap_bytes(uint64_t ram)
{
	return ram / CAP_BASE_PAGE * CAP_STRUCT_PAGE;
}

uint64_t cap_dmem_bitmap_bytes(uint64_t dmem)
{
	uint64_t bits = cap_round_up(dmem, CAP_BASE_PAGE) / CAP_BASE_PAGE;

	return (bits + 7) / 8;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t dmem_meta(const cap_host *h, uint64_t P, uint64_t D)
{
	return cap_memmap_bytes(sub0(P, D)) + cap_dmem_bitmap_bytes(D) +
	       D / h->dmem_pagesize * h->dpage_meta;
}

/* A live host whose dmem stats show a pool on at least one node. */
bool cap_host_dmem_booted(const cap_host *h)
{
	if (!h->has_dmem)
		return false;
	for (int i = 0; i < h->nnodes; i++)
		if (h->node[i].dmem_total)
			return true;
	return false;
}

/*
 * A live host booted with dmem keeps for itself what is outside the pool
 * and its metadata: without --reserve, that is each node's reserve, so
 * that every model leaves the host what it has now (and the equal-terms
 * dmem pool is the booted one).
 */
void cap_host_measure_reserve(cap_host *h)
{
	uint64_t t = 0;

	/* without a pool, "what is outside it" would be all of RAM */
	if (h->reserve_given || !h->live || !cap_host_dmem_booted(h))
		return;
	for (int i = 0; i < h->nnodes; i++) {
		cap_node *n = &h->node[i];

		n->reserve = sub0(n->ram, n->dmem_total + dmem_meta(h, n->ram, n->dmem_total));
		t += n->reserve;
	}
	h->reserve = t;
	h->reserve_measured = true;
}

/* dmem= reserves whole memory sections, in ranges of the dpage size */
uint64_t cap_dmem_align(const cap_host *h)
{
	return MAX(CAP_SECTION, h->dmem_pagesize);
}

/* The largest dmem pool of node @idx that leaves its reserve share. */
uint64_t cap_dmem_equal_pool(const cap_host *h, int idx)
{
	uint64_t P = h->node[idx].ram, R = cap_reserve_share(h, idx);
	uint64_t a = cap_dmem_align(h), lo = 0, hi = P / a;

	/* D + metadata grows with D: the last k with k*a fitting */
	while (lo < hi) {
		uint64_t k = lo + (hi - lo + 1) / 2, D = k * a;

		if (D + dmem_meta(h, P, D) + R <= P)
			lo = k;
		else
			hi = k - 1;
	}
	return lo * a;
}

bool cap_model_present(const cap_host *h, cap_model_id id)
{
	if (id == CAP_M_DMEM_FREE)
		return h->live && cap_host_dmem_booted(h);
	if (id == CAP_M_DMEM_BOOTED)
		return (h->live && cap_host_dmem_booted(h)) || h->has_dmem_spec;
	return id < CAP_M_COUNT;
}

static void hvo(uint64_t P, uint64_t R, uint64_t page, uint64_t freed,
		uint64_t *pool, uint64_t *meta)
{
	uint64_t full = cap_memmap_bytes(P);
	uint64_t avail = sub0(P, full + R);
	uint64_t saved = freed * CAP_BASE_PAGE;
	uint64_t n = avail / (page - saved);

	*pool = n * page;
	*meta = sub0(full, n * saved);
}

void cap_model_compute(const cap_host *h, cap_model_id id, cap_model *m)
{
	static const struct {
		const char *key, *name;
		uint64_t page;
	} info[CAP_M_COUNT] = {
		[CAP_M_4K] = { "struct-page-4k", "4K, all struct page", 4096 },
		[CAP_M_2M] = { "hugetlb-2m", "hugetlbfs 2M", 2 * CAP_MIB },
		[CAP_M_2M_HVO] = { "hugetlb-2m-hvo", "hugetlbfs 2M + HVO", 2 * CAP_MIB },
		[CAP_M_1G] = { "hugetlb-1g", "hugetlbfs 1G", CAP_GIB },
		[CAP_M_1G_HVO] = { "hugetlb-1g-hvo", "hugetlbfs 1G + HVO", CAP_GIB },
		[CAP_M_DMEM] = { "dmem", "dmem, same reserve", 0 },
		[CAP_M_DMEM_BOOTED] = { "dmem-booted", "dmem, as booted", 0 },
		[CAP_M_DMEM_FREE] = { "dmem-free", "dmem, free now", 0 },
	};

	memset(m, 0, sizeof(*m));
	m->id = id;
	m->key = info[id].key;
	m->name = info[id].name;
	m->page = info[id].page ? info[id].page : h->dmem_pagesize;
	m->meta_src = CAP_SRC_MODELLED;
	m->pool_src = CAP_SRC_MODELLED;

	for (int i = 0; i < h->nnodes; i++) {
		const cap_node *n = &h->node[i];
		uint64_t P = n->ram, R = cap_reserve_share(h, i);
		uint64_t full = cap_memmap_bytes(P);

		switch (id) {
		case CAP_M_4K:
		case CAP_M_2M:
		case CAP_M_1G:
			m->meta[i] = full;
			m->pool[i] = cap_round_down(sub0(P, full + R), m->page);
			break;
		case CAP_M_2M_HVO:
			hvo(P, R, 2 * CAP_MIB, CAP_HVO_2M_FREED, &m->pool[i], &m->meta[i]);
			break;
		case CAP_M_1G_HVO:
			hvo(P, R, CAP_GIB, CAP_HVO_1G_FREED, &m->pool[i], &m->meta[i]);
			break;
		case CAP_M_DMEM: {
			uint64_t D = cap_dmem_equal_pool(h, i);

			m->meta[i] = dmem_meta(h, P, D);
			m->pool[i] = D;
			break;
		}
		case CAP_M_DMEM_BOOTED:
		case CAP_M_DMEM_FREE: {
			uint64_t D = n->dmem_total;

			m->meta[i] = dmem_meta(h, P, D);
			m->pool[i] = cap_round_down(id == CAP_M_DMEM_BOOTED ? D : n->dmem_free,
						    h->dmem_pagesize);
			m->pool_src = n->dmem_src;
			break;
		}
		case CAP_M_COUNT:
			break;
		}
		m->host_left[i] = sub0(P, m->meta[i] + m->pool[i]);
	}
}

uint64_t cap_model_meta_total(const cap_host *h, const cap_model *m)
{
	uint64_t t = 0;

	for (int i = 0; i < h->nnodes; i++)
		t += m->meta[i];
	return t;
}

uint64_t cap_model_pool_total(const cap_host *h, const cap_model *m)
{
	uint64_t t = 0;

	for (int i = 0; i < h->nnodes; i++)
		t += m->pool[i];
	return t;
}

/* A shape's cells in a model: page-rounded sizes, allowed nodes, packing order. */
typedef struct {
	int ncells;
	uint64_t need[CAP_MAX_CELLS], mask[CAP_MAX_CELLS];
	int order[CAP_MAX_CELLS]; /* the biggest, most constrained cell first */
	bool pinned;              /* every cell allowed on one node only */
} packing;

/* false when a cell may go on no node of the host */
static bool prepare(const cap_host *h, const cap_model *m, const cap_shape *s, packing *p)
{
	int nn = h->nnodes;
	uint64_t all = nn >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << nn) - 1;

	p->ncells = s->ncells;
	p->pinned = true;
	if (!s->ncells || !nn)
		return false;
	for (int c = 0; c < s->ncells; c++) {
		p->need[c] = cap_round_up(s->cell[c].bytes, m->page);
		p->mask[c] = s->cell[c].mask & all;
		if (!p->mask[c])
			return false;
		if (__builtin_popcountll(p->mask[c]) != 1)
			p->pinned = false;
		p->order[c] = c;
	}
	for (int a = 1; a < s->ncells; a++) {
		for (int b = a; b > 0; b--) {
			int x = p->order[b - 1], y = p->order[b];
			int px = __builtin_popcountll(p->mask[x]), py = __builtin_popcountll(p->mask[y]);

			if (px < py || (px == py && p->need[x] >= p->need[y]))
				break;
			p->order[b - 1] = y;
			p->order[b] = x;
		}
	}
	return true;
}

/*
 * Place one guest in @room: each cell, in packing order, on the allowed
 * node with the most room, preferring nodes this guest does not use yet
 * (one guest cell per host node, as libvirt would place a NUMA guest).
 * Counts its cells in @cells_on; false, with @room untouched, when it does
 * not fit.
 */
static bool place_guest(int nn, uint64_t *room, const packing *p, uint64_t *cells_on)
{
	uint64_t left[CAP_MAX_NODES], used = 0;
	int place[CAP_MAX_CELLS];

	memcpy(left, room, sizeof(left[0]) * (size_t)nn);
	for (int c = 0; c < p->ncells; c++) {
		int cc = p->order[c], best = -1;
		bool best_fresh = false;

		for (int i = 0; i < nn; i++) {
			uint64_t bit = UINT64_C(1) << i;
			bool fresh = !(used & bit);

			if (!(p->mask[cc] & bit) || left[i] < p->need[cc])
				continue;
			if (best < 0 || (fresh && !best_fresh) ||
			    (fresh == best_fresh && left[i] > left[best])) {
				best = i;
				best_fresh = fresh;
			}
		}
		if (best < 0)
			return false;
		left[best] -= p->need[cc];
		used |= UINT64_C(1) << best;
		place[cc] = best;
	}
	memcpy(room, left, sizeof(left[0]) * (size_t)nn);
	for (int c = 0; c < p->ncells; c++)
		cells_on[place[c]]++;
	return true;
}

/*
 * Count how many guests of shape s fit in model m.  Every guest cell must fit
 * whole on one host node in its allowed mask.  All-pinned shapes and
 * single-cell shapes have exact closed forms; other shapes are packed
 * greedily one guest at a time (place_guest()).
 */
void cap_fit(const cap_host *h, const cap_model *m, const cap_shape *s, cap_fit_result *r)
{
	int nn = h->nnodes;
	uint64_t room[CAP_MAX_NODES];
	packing p;

	memset(r, 0, sizeof(*r));
	if (!prepare(h, m, s, &p))
		return;
	for (int i = 0; i < nn; i++)
		room[i] = m->pool[i];

	if (p.pinned) {
		uint64_t demand[CAP_MAX_NODES] = { 0 }, cells[CAP_MAX_NODES] = { 0 };
		uint64_t n = UINT64_MAX;

		for (int c = 0; c < p.ncells; c++) {
			int i = __builtin_ctzll(p.mask[c]);

			demand[i] += p.need[c];
			cells[i]++;
		}
		for (int i = 0; i < nn; i++)
			if (demand[i] && room[i] / demand[i] < n)
				n = room[i] / demand[i];
		r->per_host = n;
		for (int i = 0; i < nn; i++)
			r->cells_on[i] = n * cells[i];
		return;
	}
	if (p.ncells == 1) {
		for (int i = 0; i < nn; i++) {
			if (!(p.mask[0] & (UINT64_C(1) << i)))
				continue;
			r->cells_on[i] = room[i] / p.need[0];
			r->per_host += r->cells_on[i];
		}
		return;
	}
	while (place_guest(nn, room, &p, r->cells_on))
		r->per_host++;
}

/*
 * --mix: guests of several shapes in the ratio @weight (weight[k] guests of
 * shape k a set), placed set after set, each guest greedily
 * (place_guest()), until a guest does not fit.  @sets counts the whole
 * sets, @guests every guest placed, the last, partial set included.
 */
void cap_fit_mix(const cap_host *h, const cap_model *m, cap_shape *const *shapes,
		 const unsigned int *weight, int n, uint64_t *sets, uint64_t *guests)
{
	g_autofree packing *p = g_new0(packing, (size_t)(n ? n : 1));
	uint64_t room[CAP_MAX_NODES], cells_on[CAP_MAX_NODES] = { 0 };

	*sets = 0;
	*guests = 0;
	for (int k = 0; k < n; k++)
		if (!prepare(h, m, shapes[k], &p[k]))
			return;
	for (int i = 0; i < h->nnodes; i++)
		room[i] = m->pool[i];
	for (;;) {
		for (int k = 0; k < n; k++)
			for (unsigned int w = 0; w < weight[k]; w++) {
				if (!place_guest(h->nnodes, room, &p[k], cells_on))
					return;
				(*guests)++;
			}
		(*sets)++;
	}
}

static gboolean parse_node_sizes(cap_host *h, const char *opt, const char *spec, bool create,
				 GError **error)
{
	g_auto(GStrv) parts = g_strsplit(spec, ",", -1);

	if (!parts[0]) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
			    "%s: empty list (use node0=SIZE,node1=SIZE)", opt);
		return FALSE;
	}
	for (int k = 0; parts[k]; k++) {
		char *eq = strchr(parts[k], '=');
		uint64_t size;
		int id, idx;

		if (!eq) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: '%s' is not nodeN=SIZE",
				    opt, parts[k]);
			return FALSE;
		}
		*eq = '\0';
		if (!cap_parse_node(parts[k], &id, error) || !cap_parse_size(eq + 1, &size, error)) {
			g_prefix_error(error, "%s: ", opt);
			return FALSE;
		}
		idx = cap_host_index(h, id);
		if (create) {
			if (idx >= 0) {
				g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: node%d given twice",
					    opt, id);
				return FALSE;
			}
			if (h->nnodes >= CAP_MAX_NODES) {
				g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "%s: more than %d nodes",
					    opt, CAP_MAX_NODES);
				return FALSE;
			}
			idx = h->nnodes++;
			h->node[idx].id = id;
			h->node[idx].ram = size;
			h->node[idx].ram_src = CAP_SRC_GIVEN;
			h->node[idx].dmem_src = CAP_SRC_GIVEN;
		} else {
			if (idx < 0) {
				g_autofree char *list = cap_host_node_list(h);

				g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
					    "%s: unknown node 'node%d' (host has %s)", opt, id, list);
				return FALSE;
			}
			h->node[idx].dmem_total = size;
			h->node[idx].dmem_free = size;
			h->node[idx].dmem_used = 0;
			h->node[idx].dmem_src = CAP_SRC_GIVEN;
		}
	}
	return TRUE;
}

gboolean cap_parse_host_spec(cap_host *h, const char *spec, GError **error)
{
	h->nnodes = 0;
	h->live = false;
	return parse_node_sizes(h, "--host", spec, true, error);
}

gboolean cap_parse_dmem_spec(cap_host *h, const char *spec, GError **error)
{
	return parse_node_sizes(h, "--dmem", spec, false, error);
}

gboolean cap_host_validate(const cap_host *h, GError **error)
{
	uint64_t total = 0;

	if (!h->nnodes) {
		g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED, "no NUMA nodes found");
		return FALSE;
	}
	for (int i = 0; i < h->nnodes; i++) {
		const cap_node *n = &h->node[i];

		/* each node is at most CAP_MAX_SIZE: the sum cannot wrap before this */
		total += MIN(n->ram, CAP_MAX_SIZE);
		if (n->ram > CAP_MAX_SIZE || total > CAP_MAX_SIZE) {
			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "--host: the nodes add up to more than %" G_GUINT64_FORMAT "P",
				    CAP_MAX_SIZE / CAP_PIB);
			return FALSE;
		}

		if (n->dmem_total > n->ram) {
			g_autofree char *d = cap_format_size(n->dmem_total);
			g_autofree char *r = cap_format_size(n->ram);

			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "dmem on node%d (%s) exceeds its memory (%s)", n->id, d, r);
			return FALSE;
		}
		if (n->dmem_total % h->dmem_pagesize && !h->live) {
			g_autofree char *d = cap_format_size(h->dmem_pagesize);

			g_set_error(error, DMEM_ERROR, DMEM_ERROR_FAILED,
				    "dmem on node%d is not a multiple of the dmem page size %s", n->id, d);
			return FALSE;
		}
	}
	return TRUE;
}
