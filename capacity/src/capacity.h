/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dmem-capacity: metadata arithmetic and guest packing for dmem versus
 * struct-page backed memory, hugetlbfs 2M/1G with and without HVO.
 */
#ifndef DMEM_CAPACITY_H
#define DMEM_CAPACITY_H

#include <stdbool.h>
#include <stdint.h>

#include "dmemfs-host.h"

#define CAP_MAX_NODES 64 /* nodes a host model holds; their ids go up to DMEM_MAX_NODES - 1 */
#define CAP_MAX_CELLS 64

#define CAP_KIB (UINT64_C(1) << 10)
#define CAP_MIB (UINT64_C(1) << 20)
#define CAP_GIB (UINT64_C(1) << 30)
#define CAP_SECTION (128 * CAP_MIB) /* x86_64 memory section: the dmem= granule */
#define CAP_TIB (UINT64_C(1) << 40)
#define CAP_PIB (UINT64_C(1) << 50)

/*
 * The largest size taken as input, of one node, one guest, the reserve, and
 * of the host's and a guest's totals: 4 EiB (4096P).  Far above any real
 * machine, and sums of a few such figures still fit in 64 bits (and a JSON
 * integer).
 */
#define CAP_MAX_SIZE (UINT64_C(1) << 62)
/* --xml: a domain XML larger than this is refused unread */
#define CAP_XML_MAX (16 * CAP_MIB)

/* x86_64 facts the model uses. */
#define CAP_BASE_PAGE      UINT64_C(4096) /* base page */
#define CAP_STRUCT_PAGE    UINT64_C(64)   /* sizeof(struct page) */
#define CAP_HVO_2M_FREED   UINT64_C(7)    /* vmemmap pages freed per 2M page (of 8) */
#define CAP_HVO_1G_FREED   UINT64_C(4095) /* vmemmap pages freed per 1G page (of 4096) */
#define CAP_MIN_CELL       CAP_MIB        /* smallest guest cell accepted */
#define CAP_LIBVIRT_ALIGN  CAP_MIB        /* libvirt 9.0 x86 cell/memory alignment */
#define CAP_DEFAULT_RESERVE (4 * CAP_GIB) /* host kernel + QEMU, whole host */

/* Exit codes. */
#define CAP_EXIT_OK    0
#define CAP_EXIT_ERROR 1 /* environment: unreadable tree, libvirt down */
#define CAP_EXIT_USAGE 2 /* bad input */

/*
 * Bad input is a DMEM_ERROR (exit 2); CAP_ERROR_ENVIRONMENT is what
 * --libvirt could not read (exit 1).
 */
#define CAP_ERROR (cap_error_quark())
GQuark cap_error_quark(void);
enum { CAP_ERROR_ENVIRONMENT };

typedef enum {
	CAP_SRC_GIVEN,    /* from the command line */
	CAP_SRC_MEASURED, /* read from this host */
	CAP_SRC_MODELLED, /* derived by arithmetic */
} cap_source;

const char *cap_source_name(cap_source s);

typedef struct {
	int id;                 /* NUMA node id */
	uint64_t ram;           /* physical RAM on the node, dmem included */
	cap_source ram_src;
	uint64_t dmem_total;    /* dmem reserved on the node */
	uint64_t dmem_requested; /* live: what dmem= asked of it */
	uint64_t dmem_pinned;   /* live: pinned by devices and KVM */
	uint64_t dmem_poisoned; /* live: quarantined after memory errors */
	uint64_t dmem_zeroed;   /* live: free and zeroed in the background */
	unsigned dmem_present;  /* DmemStatField: which of those four the kernel reports */
	uint64_t reserve;       /* measured reserve share: RAM - dmem - its metadata */
	uint64_t dmem_free;
	uint64_t dmem_used;
	cap_source dmem_src;
	uint64_t memtotal;      /* live: node MemTotal */
	bool has_memtotal;
	uint64_t blocks_bytes;  /* live: onlined memory blocks */
	bool has_blocks;
} cap_node;

typedef struct {
	int nnodes;
	cap_node node[CAP_MAX_NODES];
	bool live;
	bool remote;            /* live, read over libvirt (--connect) */
	bool has_dmem;          /* live: a dmem stats directory was found */
	uint64_t memtotal;      /* live: /proc/meminfo MemTotal */
	bool has_memtotal;
	uint64_t reserve;       /* host kernel + QEMU reserve, whole host */
	bool reserve_given;
	bool reserve_measured;  /* live with dmem: each node's MemTotal is its share */
	bool has_dmem_spec;     /* --dmem gave a pool */
	uint64_t dmem_pagesize; /* dpage size guests are rounded to */
	uint64_t dpage_meta;    /* optional per-dpage metadata bytes */
} cap_host;

typedef struct {
	uint64_t bytes;
	uint64_t mask;          /* allowed host node indexes (bit i = node[i]) */
} cap_cell;

typedef struct {
	char *name;
	char *origin;           /* "--guest", "xml:FILE", "libvirt:URI" */
	int ncells;
	cap_cell cell[CAP_MAX_CELLS];
} cap_shape;

typedef enum {
	CAP_M_4K,
	CAP_M_2M,
	CAP_M_2M_HVO,
	CAP_M_1G,
	CAP_M_1G_HVO,
	CAP_M_DMEM,      /* the pool that the same host reserve leaves */
	CAP_M_DMEM_BOOTED, /* the pool as booted (live) or given (--dmem) */
	CAP_M_DMEM_FREE, /* live only: the pool free right now */
	CAP_M_COUNT,
} cap_model_id;

typedef struct {
	cap_model_id id;
	const char *key;        /* JSON id */
	const char *name;       /* table label */
	uint64_t page;          /* guests are rounded up to this */
	uint64_t meta[CAP_MAX_NODES];
	uint64_t pool[CAP_MAX_NODES];
	uint64_t host_left[CAP_MAX_NODES]; /* memory left for the host itself */
	cap_source meta_src;
	cap_source pool_src;
} cap_model;

typedef struct {
	uint64_t per_host;
	uint64_t cells_on[CAP_MAX_NODES]; /* guest cells placed on each node */
} cap_fit_result;

/* units.c */
gboolean cap_parse_size(const char *s, uint64_t *out, GError **error);
gboolean cap_parse_node(const char *s, int *id, GError **error);
char *cap_format_size(uint64_t bytes);
uint64_t cap_round_up(uint64_t v, uint64_t a);
uint64_t cap_round_down(uint64_t v, uint64_t a);

/* model.c */
void cap_host_init(cap_host *h);
int cap_host_index(const cap_host *h, int id);
char *cap_host_node_list(const cap_host *h);
uint64_t cap_host_ram(const cap_host *h);
uint64_t cap_reserve_share(const cap_host *h, int idx);
bool cap_host_dmem_booted(const cap_host *h);
void cap_host_measure_reserve(cap_host *h);
uint64_t cap_memmap_bytes(uint64_t ram);
uint64_t cap_dmem_bitmap_bytes(uint64_t dmem);
uint64_t cap_dmem_align(const cap_host *h);
uint64_t cap_dmem_equal_pool(const cap_host *h, int idx);
bool cap_model_present(const cap_host *h, cap_model_id id);
void cap_model_compute(const cap_host *h, cap_model_id id, cap_model *m);
uint64_t cap_model_meta_total(const cap_host *h, const cap_model *m);
uint64_t cap_model_pool_total(const cap_host *h, const cap_model *m);
void cap_fit(const cap_host *h, const cap_model *m, const cap_shape *s, cap_fit_result *r);
void cap_fit_mix(const cap_host *h, const cap_model *m, cap_shape *const *shapes,
		 const unsigned int *weight, int n, uint64_t *sets, uint64_t *guests);
gboolean cap_parse_host_spec(cap_host *h, const char *spec, GError **error);
gboolean cap_parse_dmem_spec(cap_host *h, const char *spec, GError **error);
gboolean cap_host_validate(const cap_host *h, GError **error);

/* shapes.c */
cap_shape *cap_shape_new(const char *name, const char *origin);
void cap_shape_free(cap_shape *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cap_shape, cap_shape_free)
cap_shape *cap_shape_from_spec(const cap_host *h, const char *spec, GError **error);
/* the domain's memory backends as the hook plans them (plan_from_xml) */
cap_shape *cap_shape_from_xml(const cap_host *h, const char *xml, gsize len,
			      const char *origin, GError **error);
cap_shape *cap_shape_from_xml_file(const cap_host *h, const char *path, GError **error);
uint64_t cap_shape_total(const cap_shape *s);
char *cap_shape_describe(const cap_host *h, const cap_shape *s);

/* live.c */
gboolean cap_host_from_root(cap_host *h, const char *root, GError **error);
/* node @id, added (sorted by id) when the host does not have it yet */
cap_node *cap_host_node(cap_host *h, guint64 id, GError **error);
void cap_host_node_ram(cap_host *h);
/* the host's RAM, node by node and in all, is at most CAP_MAX_SIZE */
gboolean cap_host_check_ram(const cap_host *h, const char *what, GError **error);

/* libvirt_src.c: one shape per defined domain, appended to out */
gboolean cap_shapes_from_libvirt(const cap_host *h, const char *uri, GPtrArray *out,
				 GError **error);

/* A host read over libvirt (--connect). */
typedef struct {
	const char *uri;
	char *hostname;
	char *uuid;             /* of the host, from its capabilities */
	bool refresh;           /* --refresh: connect read-write and refresh the pools */
	bool refreshed;         /* they were refreshed */
	int pools;              /* dmem-node<N> pools found */
} cap_remote;

gboolean cap_host_from_libvirt(cap_host *h, cap_remote *r, GError **error);

/* report.c: every model and shape computed once; render-*.c: one output format each */
typedef struct {
	const cap_host *host;
	cap_model models[CAP_M_COUNT];
	bool present[CAP_M_COUNT];
	cap_shape **shapes;
	int nshapes;
	cap_fit_result *fits;   /* nshapes * CAP_M_COUNT */
	char **warnings;
	int nwarnings;
	bool recommend;         /* --recommend: add the dmem= line to boot with */
	uint64_t keep;          /* its "!size": what every node keeps for the host */
	bool keep_uneven;       /* nodes need different amounts: keep is the largest */
	unsigned int *mix;      /* --mix: guests of each shape a set, or NULL */
	uint64_t mix_sets[CAP_M_COUNT], mix_guests[CAP_M_COUNT];
} cap_report;

void cap_report_build(cap_report *r, const cap_host *h, cap_shape **shapes, int nshapes);
void cap_report_clear(cap_report *r);
/* --mix W:W...: its weights (1..1000), before any host is read */
gboolean cap_mix_parse(const char *spec, unsigned int **weights, int *n, GError **error);
/* one weight a shape, at least two */
gboolean cap_mix_count(const char *spec, int n, int nshapes, GError **error);
/* --mix W:W:...: one weight a shape, in order */
gboolean cap_report_mix(cap_report *r, const char *spec, GError **error);
char *cap_report_table(const cap_report *r);      /* render-table.c */
char *cap_report_json(const cap_report *r);       /* render-json.c */
char *cap_report_prometheus(const cap_report *r); /* render-prometheus.c */
char *cap_report_svg(const cap_report *r);        /* render-svg.c */

/* --connect: hosts read over libvirt, a report each */
typedef struct {
	cap_remote remote;
	cap_host host;
	GPtrArray *shapes;      /* built against this host's nodes */
	cap_report rep;         /* when error is NULL */
	char *error;            /* the host could not be read */
	int same_as;            /* an earlier entry is the same host (UUID), or -1 */
} cap_fleet_host;

char *cap_fleet_table(const cap_fleet_host *f, int n);      /* fleet.c */
/* the single-host renderers, looped over the hosts */
char *cap_fleet_json(const cap_fleet_host *f, int n);       /* render-json.c */
char *cap_fleet_prometheus(const cap_fleet_host *f, int n); /* render-prometheus.c */

#endif
