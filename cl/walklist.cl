/* Group walk in two kernels, for GPUs (OpenCL C 1.2).
 *
 * tree_walk (treewalk.cl) walks and evaluates in one work-group: one work-item follows
 * the links while the others wait at barriers, and a window of WG cells is tested for
 * every few cells that are used.  On the H100 that ran at 8e10 interactions/s, a
 * twentieth of the direct kernel.  Here the two jobs are separated:
 *
 * walk_lists: one work-item per sink group follows the next/more links on its own
 *   (no barriers, no local memory; neighbouring groups in Morton order take nearly the
 *   same path, so the cell loads hit the caches) and writes its interaction list to
 *   global memory: a source index j >= 0 for a particle, -1 - c for an accepted cell c.
 *   list_info[g] = (entries, cells).  A list longer than list_max is counted but not
 *   stored; the host sees it in list_info and runs the batch again with room for it.
 * eval_lists: one work-group of WG work-items per group, the direct kernel's pattern:
 *   the list is staged through local memory TILE entries at a time (gathered, made
 *   relative to the group centre) and every work-item sums the tile for its SINKS
 *   sinks (sinks q * WG + lid of the group), so that one local load serves SINKS
 *   interactions.  Each tile's sum is a partial sum added into the total (Chamomile).
 *   The sink's own particle is not tested for per entry: its zero-separation term is
 *   taken out of the potential once at the end (ZERO_GUARD = 1, for eps = 0, makes
 *   every zero-distance pair contribute nothing instead).
 *
 * The interactions, and the opening test, are those of tree_walk; results agree to
 * float32 summation order.  Groups are processed in batches (g0 = first group) so
 * that the lists fit the device's memory.
 *
 * Two measures for the GPU's memory system and its idle lanes:
 * - LBUF (walk_lists): entries are gathered LBUF at a time in local memory and written
 *   as whole int4 vectors, so that a list reaches global memory in full 32-byte sectors
 *   instead of one scattered 4-byte store per entry (the lists of one warp lie
 *   list_max entries apart).  0: one store per entry.  The lists are the same.
 * - REPLICATE (eval_lists): a group with few sinks leaves work-items idle (packed
 *   groups are about half full).  Copies of the group's sinks are then spread over the
 *   work-group, up to the argument ``copies`` (REPLICATE > 1 compiles the copies in;
 *   a full walk passes REPLICATE, a block substep's walk of a few active sinks per
 *   group passes more); copy r sums the list entries k = r, r + R, ... and the
 *   copies' partial sums are added in copy order at the end (deterministic).
 *
 * Defines: those of walkcommon.cl (WG, QUAD, SPLIT, ...), TILE (entries per staging
 * step, a multiple of WG), SINKS (sinks per work-item: groups of up to WG * SINKS),
 * ZERO_GUARD (1 when eps = 0), LBUF (0 or a multiple of 4), REPLICATE (>= 1), LWG
 * (walk_lists work-group size, 64), PER_EPS (a softening per particle, every kernel taking
 * the cells' cell_eps: walkcommon.cl).
 */
#include "walkcommon.cl"

#ifndef TILE
#define TILE WG
#endif
#ifndef SINKS
#define SINKS 1
#endif
#ifndef LBUF
#define LBUF 0
#endif
#ifndef REPLICATE
#define REPLICATE 1
#endif
#ifndef LWG
#define LWG 64
#endif
#if LBUF % 4
#error "LBUF must be a multiple of 4"
#endif

#if LBUF
/* Entry e at position n of this work-item's list; a full buffer goes out as LBUF / 4
   int4 stores (list_max is a multiple of LBUF, so they stay aligned and in room). */
#define APPEND(e) do {                                                              \
        buf[((n) % LBUF) * LWG + lid] = (e);                                        \
        if (++(n) % LBUF == 0 && (n) <= list_max)                                    \
            for (int v = 0; v < LBUF / 4; v++)                                      \
                vlist[((n) - LBUF) / 4 + v] = (int4)(buf[(4 * v) * LWG + lid],      \
                    buf[(4 * v + 1) * LWG + lid], buf[(4 * v + 2) * LWG + lid],     \
                    buf[(4 * v + 3) * LWG + lid]);                                  \
    } while (0)
#else
#define APPEND(e) do { if ((n) < list_max) list[n] = (e); (n)++; } while (0)
#endif


#ifndef COOP
#define COOP 0
#endif

#if COOP
#if COOP > 64
#error "COOP must be at most 64 (the scan packs up to 2 * COOP pushes in 8 bits)"
#endif
#ifndef COOP_STACK
#define COOP_STACK 1024
#endif
/* Room kept free above a full batch of pops: the walk goes on one cell at a time (a
   depth-first walk, which holds at most one pending sibling per tree level) while the
   stack is within it.  A tree has at most 22 levels (63-bit keys), so 64 cannot fill. */
#define COOP_MARGIN 64
#if COOP_STACK < 2 * COOP + COOP_MARGIN
#error "COOP_STACK too small for COOP"
#endif

/* COOP > 0: a work-group of COOP work-items walks one group together (as Bonsai and
 * GOTHIC walk a group with a warp).  The serial walk (COOP = 0) follows up to ~25 000
 * cells one after another for a group at a system's centre (relative criterion,
 * |a_old| -> 0) and so waits a memory latency per cell; here the cells still to visit are a stack in local
 * memory of (cell, end) pairs, end being where the cell's parent's subtree ends, and each
 * round pops up to COOP of them, decides them at once and pushes for each its next sibling
 * (when that is before end) and, when opened, its first child.  Where each work-item's
 * entries and pushes go comes from a scan over the work-group, so the walk is
 * deterministic; the list holds the serial walk's entries in another order (the forces
 * then differ by float32 summation order).  list_info and the room rule are those of the
 * serial walk. */
#define LISTS_WG COOP
#else
#define LISTS_WG LWG          /* one work-item per group */
#endif

__kernel __attribute__((reqd_work_group_size(LISTS_WG, 1, 1)))
void walk_lists(const int n_cells,
                __global const float4 *cell_hi, __global const float4 *cell_lo,
                __global const int4 *cell_link,
#if PER_EPS
                __global const float4 *cell_eps,
#endif
                const int g0, const int n_batch,
                __global const float4 *group_hi, __global const float4 *group_lo,
                __global const float4 *group_half,
                const int list_max,
                __global int *lists,          /* n_batch x list_max */
                __global int2 *list_info)     /* per group: entries, cells */
{
#if COOP
    __local int2 stack[COOP_STACK];
    __local int scan[COOP];
    const int lid = get_local_id(0);
    const int b = get_group_id(0);        /* launched with exactly n_batch work-groups */
    const int g = g0 + b;
    const float4 gch = group_hi[g], gcl = group_lo[g], gh = group_half[g];
    __global int *list = lists + (size_t)b * (size_t)list_max;
    if (lid == 0)
        stack[0] = (int2)(0, n_cells);    /* the root and whatever follows it */
    barrier(CLK_LOCAL_MEM_FENCE);
    int top = 1, n = 0, nc = 0;           /* the same in every work-item */
    while (top > 0) {
        const int k = max(1, min(min(COOP, top), COOP_STACK - COOP_MARGIN - top));
        const int base = top - k;
        int c = 0, d = 3, end = 0, sib = 0;
        int4 link = (int4)(0);
        if (lid < k) {
            const int2 it = stack[base + lid];
            c = it.x;
            end = it.y;
            const float4 lo = cell_lo[c];
            link = cell_link[c];
            d = decide(REL(cell_hi[c], lo), lo.w, link.z, gh, as_float(link.w) MIXED_GUARD(c));
            sib = link.x < end;
        }
        const int ne = d == 1 ? 1 : (d == 2 ? link.z : 0);
        const int v = (ne << 8) | (sib + (d == 0));
        nc += d == 1;
        barrier(CLK_LOCAL_MEM_FENCE);     /* the pops are read before pushes overwrite them */
        scan[lid] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int off = 1; off < COOP; off <<= 1) {    /* inclusive scan, Hillis-Steele */
            const int t = lid >= off ? scan[lid - off] : 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            scan[lid] += t;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const int excl = scan[lid] - v, total = scan[COOP - 1];
        const int at = n + (excl >> 8);
        if (d == 1) {
            if (at < list_max)
                list[at] = -1 - c;
        } else if (d == 2) {
            for (int q = 0; q < link.z; q++)
                if (at + q < list_max)
                    list[at + q] = link.y + q;
        }
        int sp = base + (excl & 0xff);    /* the child above its sibling: popped first */
        if (sib && sp < COOP_STACK)
            stack[sp++] = (int2)(link.x, end);
        if (d == 0 && sp < COOP_STACK)
            stack[sp] = (int2)(c + 1, link.x);
        n += total >> 8;
        top = base + (total & 0xff);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    scan[lid] = nc;                       /* the accepted cells, summed over the items */
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        int all = 0;
        for (int i = 0; i < COOP; i++)
            all += scan[i];
        list_info[g] = (int2)(n, all);
    }
#else
    const int b = get_global_id(0);
#if LBUF
    __local int buf[LBUF * LWG];      /* entry k of work-item i at k * LWG + i: no conflicts */
    const int lid = get_local_id(0);
#endif
    if (b >= n_batch)
        return;                       /* no barriers below */
    const int g = g0 + b;
    const float4 gch = group_hi[g], gcl = group_lo[g], gh = group_half[g];
    __global int *list = lists + (size_t)b * (size_t)list_max;
#if LBUF
    __global int4 *vlist = (__global int4 *)list;
#endif
    int n = 0, nc = 0, p = 0;
    while (p < n_cells) {
        const float4 lo = cell_lo[p];
        const float4 rel = REL(cell_hi[p], lo);
        const int4 link = cell_link[p];
        const int d = decide(rel, lo.w, link.z, gh, as_float(link.w) MIXED_GUARD(p));
        if (d == 0) {            /* opened: first child is the next cell */
            p += 1;
            continue;
        }
        if (d == 1) {
            APPEND(-1 - p);
            nc++;
        } else if (d == 2) {
            for (int q = 0; q < link.z; q++)
                APPEND(link.y + q);
        }
        p = link.x;              /* accepted, leaf or skipped (3): past the subtree */
    }
#if LBUF
    for (int k = n - n % LBUF; k < min(n, list_max); k++)    /* the partial buffer */
        list[k] = buf[(k % LBUF) * LWG + lid];
#endif
    list_info[g] = (int2)(n, nc);
#endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void eval_lists(__global const float4 *cell_hi, __global const float4 *cell_lo,
#if PER_EPS
                __global const float4 *cell_eps,
#endif
#if QUAD
                __global const float8 *cell_quad,
#endif
                __global const float4 *src_hi, __global const float4 *src_lo,
                const int g0,
                __global const int2 *group_range,
                __global const float4 *group_hi, __global const float4 *group_lo,
                __global const float4 *sink_hi, __global const float4 *sink_lo,
                __global const int *sink_self,
                const int list_max,
                __global const int *lists, __global const int2 *list_info,
                const float eps2, const int copies,
                __global float4 *out, __global int2 *counts OUT_AT_PARAM)
{
    __local float4 tile[TILE];
#if QUAD
    __local float8 tquad[TILE];
#endif
#if PER_EPS
    __local float teps[TILE];             /* each entry's eps^2 */
#endif
#if REPLICATE > 1
    __local float4 part[WG * SINKS];      /* partial sums of copies 1 ... R - 1 */
#endif
    const int b = get_group_id(0);
    const int g = g0 + b;
    const int lid = get_local_id(0);
    const int2 gr = group_range[g];
    const float4 gch = group_hi[g], gcl = group_lo[g];
    const int2 info = list_info[g];
    const int n = min(info.x, list_max);
    __global const int *list = lists + (size_t)b * (size_t)list_max;

    /* w work-items hold one copy of the group's sinks (SINKS each); R copies fit. */
#if REPLICATE > 1
    const int w = (gr.y + SINKS - 1) / SINKS;
    const int R = clamp(WG / w, 1, copies);
    const int rep = lid / w, slot = lid - rep * w;
#else
    const int w = WG, R = 1, rep = 0, slot = lid;
#endif
    const int k0 = rep < R ? rep : TILE;  /* first entry of each tile; idle items: none */

    /* sink q of this work-item: the group's sink q * w + slot */
    float sx[SINKS], sy[SINKS], sz[SINKS];
    float ax[SINKS], ay[SINKS], az[SINKS], pot[SINKS];
#if PER_EPS
    float se2[SINKS];
#endif
    #pragma unroll
    for (int q = 0; q < SINKS; q++) {
        const int si = gr.x + min(q * w + slot, gr.y - 1);
        const float4 sp = REL(sink_hi[si], sink_lo[si]);
        sx[q] = sp.x; sy[q] = sp.y; sz[q] = sp.z;
#if PER_EPS
        se2[q] = sink_lo[si].w * sink_lo[si].w;
#endif
        ax[q] = ay[q] = az[q] = pot[q] = 0.0f;
    }
    for (int base = 0; base < n; base += TILE) {
        const int m = min(TILE, n - base);
        for (int t = lid; t < m; t += WG) {
            const int e = list[base + t];
            if (e >= 0) {
                tile[t] = REL(src_hi[e], src_lo[e]);
#if PER_EPS
                teps[t] = src_lo[e].w * src_lo[e].w;
#endif
#if QUAD
                tquad[t] = (float8)(0.0f);
#endif
            } else {
                const int c = -1 - e;
                tile[t] = REL(cell_hi[c], cell_lo[c]);     /* w: the cell's mass */
#if PER_EPS
                teps[t] = cell_eps[c].x;
#endif
#if QUAD
                tquad[t] = cell_quad[c];
#endif
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        float pax[SINKS], pay[SINKS], paz[SINKS], ppot[SINKS];
        #pragma unroll
        for (int q = 0; q < SINKS; q++)
            pax[q] = pay[q] = paz[q] = ppot[q] = 0.0f;
        for (int k = k0; k < m; k += R) {
            const float4 e = tile[k];
#if QUAD
            const float8 Q = tquad[k];
#endif
            #pragma unroll
            for (int q = 0; q < SINKS; q++)
                interact(e,
#if QUAD
                         Q,
#endif
                         sx[q], sy[q], sz[q], PAIR_EPS2(se2[q], teps[k]), &pax[q], &pay[q],
                         &paz[q], &ppot[q]);
        }
        #pragma unroll
        for (int q = 0; q < SINKS; q++) {
            ax[q] += pax[q]; ay[q] += pay[q]; az[q] += paz[q]; pot[q] += ppot[q];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#if REPLICATE > 1
    if (rep > 0 && rep < R) {
        #pragma unroll
        for (int q = 0; q < SINKS; q++)
            part[((rep - 1) * SINKS + q) * w + slot] = (float4)(ax[q], ay[q], az[q], pot[q]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);         /* unconditional: PoCL wants barriers at top level */
    if (rep == 0) {
        for (int r = 1; r < R; r++) {
            #pragma unroll
            for (int q = 0; q < SINKS; q++) {
                const float4 t = part[((r - 1) * SINKS + q) * w + slot];
                ax[q] += t.x; ay[q] += t.y; az[q] += t.z; pot[q] += t.w;
            }
        }
    }
#endif
    #pragma unroll
    for (int q = 0; q < SINKS; q++) {
        if (rep == 0 && q * w + slot < gr.y) {
            const int si = gr.x + q * w + slot;
            const int self = SELF_OF(si);
            /* A sink's own particle is always in its list (its leaf lies in the group box,
               so it is never accepted as a cell nor skipped): it added nothing to the
               acceleration (zero separation) and -m / eps to the potential, removed here.
               With eps = 0 (ZERO_GUARD) it added nothing at all. */
#if !ZERO_GUARD
            if (self >= 0)
                pot[q] += sink_hi[si].w * RSQRT(PAIR_EPS2(se2[q], se2[q]));
#elif PER_EPS
            if (self >= 0 && se2[q] > 0.0f)     /* a softened sink among unsoftened ones */
                pot[q] += sink_hi[si].w * RSQRT(se2[q]);
#endif
            out[OUT_ROW(si)] = (float4)(ax[q], ay[q], az[q], pot[q]);
#if SINK_COUNTS
            counts[si] = (int2)(info.x - info.y - (self >= 0), info.y);
#endif
        }
    }
}

/* The longest list of n_groups (list_info[g].x) into *longest (zeroed before): the host
   reads one int to learn whether a list outgrew its room, not every group's sizes. */
__kernel void longest_list(const int n_groups, __global const int2 *list_info,
                           __global int *longest)
{
    __local int m;
    if (get_local_id(0) == 0)
        m = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    int x = 0;
    for (int g = get_global_id(0); g < n_groups; g += get_global_size(0))
        x = max(x, list_info[g].x);
    atomic_max(&m, x);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0)
        atomic_max(longest, m);
}
