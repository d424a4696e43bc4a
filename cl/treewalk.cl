/* Group tree walk over next/more links (OpenCL C 1.2).
 *
 * One work-group serves one group of at most WG sinks that lie close together in
 * Morton order.  The cells are stored in depth-first (pre-order) order, so the
 * "more" link of an internal cell is simply c + 1 and only "next" (the first cell
 * after c's subtree) is stored: the walk needs no stack.
 *
 * The walk is done in windows of WG consecutive cells: every work-item applies the
 * opening test to one cell of the window (coalesced loads, all in parallel), then
 * work-item 0 follows the links through the window (local memory only):
 *   opened internal cell -> c + 1,   accepted cell or leaf -> next[c].
 * Accepted cells and the particles of visited (not accepted) leaves go into one
 * interaction list in local memory.  When the list is full or the walk is over,
 * every work-item evaluates the list for its own sink and adds the partial sum
 * into its total (Chamomile-style partial sums).
 *
 * Opening test (modified Barnes-Hut, Nakasato): a cell is accepted when
 *   d^2 > S_eff = (l / theta + s)^2,
 * d = smallest distance from the group's bounding box to the cell's centre of mass.
 *
 * Coordinates: float32 hi + lo pairs relative to the root centre; list entries are
 * formed relative to the group centre, where float32 is precise.
 *
 * Defines: WG (work-group size, >= sinks per group), CAP (list size, >= largest
 * leaf), QUAD (0: monopole, 1: quadrupole moments of cells), RSQRT_MODE (how 1/sqrt
 * is computed: rsqrt.cl), VEC (SIMD width of tree_walk_simd, the CPU variant at the end),
 * PER_EPS (a softening per particle, with the cells' cell_eps: walkcommon.cl).
 *
 * Force splitting (hybrid tree, hybridtree/splitting.py has the same formulas):
 * SPLIT 0 full force; 1 soft part: every accelerations term times W(r); 2 hard
 * part: times 1 - W(r), and a cell whose bounding sphere (radius in cell_link.w,
 * around the centre of mass) lies farther than R_OUT from the group box is skipped
 * unopened (all its particles have W = 1).  r is the unsoftened distance to the
 * particle or the cell's centre of mass.  CHANGEOVER 1: W = y^2 / (2y^2 - 2y + 1)
 * (Duncan, Levison & Lee 1998), 2: W = 35y^4 - 84y^5 + 70y^6 - 20y^7,
 * y = clamp((r - R_IN) / (R_OUT - R_IN), 0, 1).  The potential is never weighted:
 * the soft walk returns the full potential (what the energy needs).
 */
#include "walkcommon.cl"

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void tree_walk(const int n_cells,
               __global const float4 *cell_hi,   /* com hi (x, y, z), mass      */
               __global const float4 *cell_lo,   /* com lo (x, y, z), S_eff     */
               __global const int4 *cell_link,   /* next, first particle, leaf count (0: internal),
                                                    bounding radius about the com (float bits) */
#if PER_EPS
               __global const float4 *cell_eps,  /* mean eps^2, max eps, min eps (walkcommon.cl) */
#endif
#if QUAD
               __global const float8 *cell_quad, /* Qxx Qyy Qzz Qxy Qxz Qyz - - (traceless) */
#endif
               __global const float4 *src_hi,    /* sources in tree order: x, y, z, m  */
               __global const float4 *src_lo,
               const int n_groups,
               __global const int2 *group_range, /* first sink, sink count */
               __global const float4 *group_hi,  /* bbox centre hi, - */
               __global const float4 *group_lo,  /* bbox centre lo, - */
               __global const float4 *group_half,/* bbox half sides, - */
               __global const float4 *sink_hi,   /* sinks in group order */
               __global const float4 *sink_lo,
               __global const int *sink_self,    /* source index of the sink itself, or -1 */
               const float eps2,
               __global float4 *out,             /* ax, ay, az, pot per sink */
               __global int2 *counts             /* particle-particle, particle-cell */
               OUT_AT_PARAM)
{
    __local float4 list[CAP];
    __local int idx[CAP];
#if QUAD
    __local float8 quad[CAP];
#endif
#if PER_EPS
    __local float leps[CAP];
#endif
    __local int win_dec[WG];   /* 0 open, 1 accept as cell, 2 leaf: take particles */
    __local int win_next[WG];
    __local int win_cnt[WG];
    __local int win_slot[WG];
    __local int state[4];      /* next cell, list size, cells in list, list full */

    const int g = get_group_id(0);
    const int lid = get_local_id(0);
    if (g >= n_groups)
        return;
    const int2 gr = group_range[g];
    const float4 gch = group_hi[g], gcl = group_lo[g], gh = group_half[g];
    const int si = gr.x + min(lid, gr.y - 1);
    const float4 sp = REL(sink_hi[si], sink_lo[si]);
    const int self = SELF_OF(si);
#if PER_EPS
    const float se2 = sink_lo[si].w * sink_lo[si].w;      /* the sink's own eps^2 */
#endif

    float ax = 0.0f, ay = 0.0f, az = 0.0f, pot = 0.0f;
    int n_pc = 0, n_pp = 0;
    int n_all = 0;             /* list entries, cells included (SINK_COUNTS 0) */
    int pos = 0, n = 0, ncell = 0;

    for (;;) {
        /* 1. every work-item tests one cell of the window (coalesced loads) */
        const int c = pos + lid;
        int dec = -1, pfirst = 0, pcnt = 0;
        float4 rel = (float4)(0.0f);
        win_next[lid] = 0;
        if (c < n_cells) {
            const float4 lo = cell_lo[c];
            rel = REL(cell_hi[c], lo);
            const int4 link = cell_link[c];
            dec = decide(rel, lo.w, link.z, gh, as_float(link.w) MIXED_GUARD(c));
            win_next[lid] = link.x;
            pfirst = link.y;
            pcnt = link.z;
        }
        win_dec[lid] = dec;
        win_cnt[lid] = (dec == 1) ? 1 : (dec == 3 ? 0 : pcnt);
        win_slot[lid] = -1;
        barrier(CLK_LOCAL_MEM_FENCE);

        /* 2. work-item 0 follows the links through the window (local memory only) */
        if (lid == 0) {
            int p = pos, ln = n, lc = ncell, full = 0;
            while (p < n_cells && p < pos + WG) {
                const int k = p - pos;
                const int d = win_dec[k];
                if (d == 0) {
                    p += 1;
                    continue;
                }
                if (d == 3) {          /* skipped subtree: no list entries */
                    p = win_next[k];
                    continue;
                }
                if (ln + win_cnt[k] > CAP) { full = 1; break; }
                win_slot[k] = ln;
                ln += win_cnt[k];
                lc += (d == 1);
                p = win_next[k];
            }
            state[0] = p; state[1] = ln; state[2] = lc; state[3] = full;
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        /* 3. the visited cells of the window write their list entries */
        const int slot = win_slot[lid];
        if (slot >= 0 && dec != 3) {
            if (dec == 1) {
                list[slot] = rel;
                idx[slot] = CELL_ENTRY;
#if PER_EPS
                leps[slot] = cell_eps[c].x;
#endif
#if QUAD
                quad[slot] = cell_quad[c];
#endif
            } else {
                for (int q = 0; q < pcnt; q++) {
                    const int j = pfirst + q;
                    list[slot + q] = REL(src_hi[j], src_lo[j]);
                    idx[slot + q] = j;
#if PER_EPS
                    leps[slot + q] = src_lo[j].w * src_lo[j].w;
#endif
#if QUAD
                    quad[slot + q] = (float8)(0.0f);
#endif
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        pos = state[0];
        n = state[1];
        ncell = state[2];
        const int done = pos >= n_cells;

        /* 4. evaluate the list when it is full and at the end */
        if (done || state[3]) {
            int n_self = 0;
            const float4 part = eval_list(list, idx,
#if QUAD
                                          quad,
#endif
#if PER_EPS
                                          leps,
#endif
                                          n, self, sp, PAIR_EPS2(se2, se2), &n_self);
            ax += part.x; ay += part.y; az += part.z; pot += part.w;
            n_pc += ncell;
            n_pp += n - ncell - n_self;
            n_all += n;
            n = 0;
            ncell = 0;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (done)
            break;
    }
    if (lid < gr.y) {
        out[OUT_ROW(si)] = (float4)(ax, ay, az, pot);
#if SINK_COUNTS
        counts[si] = (int2)(n_pp, n_pc);
#endif
    }
#if !SINK_COUNTS
    if (lid == 0)
        counts[g] = (int2)(n_all, n_pc);
#endif
}

/* The same walk for CPU devices: one work-item per group, no local memory and no
 * barriers.  The work-item follows the links cell by cell and applies every
 * accepted cell or leaf particle at once to all sinks of its group, packed into
 * OpenCL vectors of VEC lanes (explicit SIMD; PoCL does not vectorise the
 * work-group kernel above).  Per group the interactions are those of tree_walk;
 * the results agree to float32 summation order.  VEC is 4, 8 or 16.
 */
#ifndef VEC
#define VEC 8
#endif
#if VEC == 4
#define VF float4
#define VI int4
#define VLOAD vload4
#define VSTORE vstore4
#elif VEC == 8
#define VF float8
#define VI int8
#define VLOAD vload8
#define VSTORE vstore8
#else
#define VF float16
#define VI int16
#define VLOAD vload16
#define VSTORE vstore16
#endif
#define NV ((WG + VEC - 1) / VEC)

__kernel void tree_walk_simd(const int n_cells,
               __global const float4 *cell_hi, __global const float4 *cell_lo,
               __global const int4 *cell_link,
#if PER_EPS
               __global const float4 *cell_eps,
#endif
#if QUAD
               __global const float8 *cell_quad,
#endif
               __global const float4 *src_hi, __global const float4 *src_lo,
               const int n_groups, __global const int2 *group_range,
               __global const float4 *group_hi, __global const float4 *group_lo,
               __global const float4 *group_half,
               __global const float4 *sink_hi, __global const float4 *sink_lo,
               __global const int *sink_self, const float eps2,
               __global float4 *out, __global int2 *counts OUT_AT_PARAM)
{
    const int g = get_global_id(0);
    if (g >= n_groups)
        return;
    const int2 gr = group_range[g];
    const int ns = gr.y;
    const int nv = (ns + VEC - 1) / VEC;
    const float4 gch = group_hi[g], gcl = group_lo[g], gh = group_half[g];
    float tx[NV * VEC], ty[NV * VEC], tz[NV * VEC];
    int ts[NV * VEC];
#if PER_EPS
    float te[NV * VEC];
#endif
    for (int s = 0; s < NV * VEC; s++) {
        /* padding lanes sit far away (finite) and are never written back */
        const int sc = min(s, ns - 1);
        const float4 p = REL(sink_hi[gr.x + sc], sink_lo[gr.x + sc]);
        tx[s] = (s < ns) ? p.x : 1e18f; ty[s] = p.y; tz[s] = p.z;
        ts[s] = (s < ns) ? SELF_OF(gr.x + sc) : -1;
#if PER_EPS
        te[s] = sink_lo[gr.x + sc].w * sink_lo[gr.x + sc].w;
#endif
    }
    VF sx[NV], sy[NV], sz[NV], ax[NV], ay[NV], az[NV], pot[NV], pax[NV], pay[NV], paz[NV], ppot[NV];
    VI self[NV];
#if PER_EPS
    VF se2[NV];                       /* each lane's (sink's) eps^2 */
#endif
    for (int v = 0; v < nv; v++) {
        sx[v] = VLOAD(v, tx); sy[v] = VLOAD(v, ty); sz[v] = VLOAD(v, tz);
        self[v] = VLOAD(v, ts);
#if PER_EPS
        se2[v] = VLOAD(v, te);
#endif
        ax[v] = ay[v] = az[v] = pot[v] = (VF)(0.0f);
        pax[v] = pay[v] = paz[v] = ppot[v] = (VF)(0.0f);
    }
    int n_pc = 0, n_pp = 0, n_part = 0;
    int p = 0;
    while (p < n_cells) {
        const float4 lo = cell_lo[p];
        const float4 rel = REL(cell_hi[p], lo);
        const int4 link = cell_link[p];
        const int d = decide(rel, lo.w, link.z, gh, as_float(link.w) MIXED_GUARD(p));
        if (d == 0) {
            p += 1;
            continue;
        }
        if (d == 3) {
            p = link.x;
            continue;
        }
        if (d == 1) {
            IN_ORDER
#if QUAD
            const float8 Q = cell_quad[p];
#endif
#if PER_EPS
            const VF ce2 = (VF)(cell_eps[p].x);
#endif
            for (int v = 0; v < nv; v++) {
                const VF dx = SEP(rel.x - sx[v]), dy = SEP(rel.y - sy[v]), dz = SEP(rel.z - sz[v]);
                const VF d2 = dx * dx + dy * dy + dz * dz;
#if SOFTENING == 2
                VF mr, mr3;
                SOFT_V(VF, d2, PAIR_EPS2(se2[v], ce2), rel.w, mr, mr3);
                SPLIT_WEIGHT(mr3, d2);
#else
                const VF r2 = d2 + PAIR_EPS2(se2[v], ce2);
                const VF rinv = RSQRT(r2);
                const VF mr = rel.w * rinv;
                const VF rinv2 = rinv * rinv;
#if SPLIT
                const VF wgt = WEIGHT(CO_Y(d2));
                const VF mr3 = mr * rinv2 * wgt;
#else
                const VF mr3 = mr * rinv2;
#endif
#endif
#if QUAD
                /* in u = d / r: walkcommon.cl interact's terms, finite for far cells */
                const VF ux = dx * rinv, uy = dy * rinv, uz = dz * rinv;
                const VF qx = Q.s0 * ux + Q.s3 * uy + Q.s4 * uz;
                const VF qy = Q.s3 * ux + Q.s1 * uy + Q.s5 * uz;
                const VF qz = Q.s4 * ux + Q.s5 * uy + Q.s2 * uz;
                const VF uqu = ux * qx + uy * qy + uz * qz;
#if SPLIT
                const VF rinv4 = rinv2 * rinv2 * wgt;
#else
                const VF rinv4 = rinv2 * rinv2;
#endif
                const VF q4 = 2.5f * uqu * rinv4;   /* the monopole term as without Q */
                pax[v] += mr3 * dx + (q4 * ux - rinv4 * qx);
                pay[v] += mr3 * dy + (q4 * uy - rinv4 * qy);
                paz[v] += mr3 * dz + (q4 * uz - rinv4 * qz);
                ppot[v] -= mr + 0.5f * uqu * rinv * rinv2;
#elif PERIODIC
                PM_ADD(VF, d2, mr3, mr, dx, dy, dz, pax[v], pay[v], paz[v], ppot[v]);
#else
                pax[v] += mr3 * dx;
                pay[v] += mr3 * dy;
                paz[v] += mr3 * dz;
                ppot[v] -= mr;
#endif
            }
            n_pc++;
            n_part++;
        } else {
            for (int q = 0; q < link.z; q++) {
                const int j = link.y + q;
                const float4 e = REL(src_hi[j], src_lo[j]);
#if PER_EPS
                const VF je2 = (VF)(src_lo[j].w * src_lo[j].w);
#endif
                for (int v = 0; v < nv; v++) {
                    const VF dx = SEP(e.x - sx[v]), dy = SEP(e.y - sy[v]), dz = SEP(e.z - sz[v]);
                    const VF d2 = dx * dx + dy * dy + dz * dz;
#if SOFTENING == 2
                    const VI live = self[v] != (VI)(j);
                    VF mr, mr3;
                    SOFT_V(VF, d2, PAIR_EPS2(se2[v], je2), e.w, mr, mr3);
                    SPLIT_WEIGHT(mr3, d2);
                    mr = select((VF)(0.0f), mr, live);
                    mr3 = select((VF)(0.0f), mr3, live);
#else
                    const VF r2 = d2 + PAIR_EPS2(se2[v], je2);
                    const VI live = (self[v] != (VI)(j)) & (r2 > (VF)(0.0f));
                    const VF rinv = select((VF)(0.0f), RSQRT(r2), live);
                    const VF mr = e.w * rinv;
#if SPLIT
                    const VF mr3 = mr * rinv * rinv * WEIGHT(CO_Y(d2));
#else
                    const VF mr3 = mr * rinv * rinv;
#endif
#endif
#if PERIODIC
                    PM_ADD(VF, d2, mr3, mr, dx, dy, dz, pax[v], pay[v], paz[v], ppot[v]);
#else
                    pax[v] += mr3 * dx;
                    pay[v] += mr3 * dy;
                    paz[v] += mr3 * dz;
                    ppot[v] -= mr;
#endif
                }
            }
            n_pp += link.z;
            n_part += link.z;
        }
        if (n_part >= CAP) {   /* Chamomile partial sums: fold every CAP interactions */
            for (int v = 0; v < nv; v++) {
                ax[v] += pax[v]; ay[v] += pay[v]; az[v] += paz[v]; pot[v] += ppot[v];
                pax[v] = pay[v] = paz[v] = ppot[v] = (VF)(0.0f);
            }
            n_part = 0;
        }
        p = link.x;
    }
    for (int v = 0; v < nv; v++) {   /* tx.. reused as output staging */
        VSTORE(ax[v] + pax[v], v, tx);
        VSTORE(ay[v] + pay[v], v, ty);
        VSTORE(az[v] + paz[v], v, tz);
        VSTORE(pot[v] + ppot[v], v, (float *)ts);
    }
    for (int s = 0; s < ns; s++) {
        out[OUT_ROW(gr.x + s)] = (float4)(tx[s], ty[s], tz[s], ((float *)ts)[s]);
#if SINK_COUNTS
        const int self_in_tree = SELF_OF(gr.x + s) >= 0;     /* met itself in its leaf */
        counts[gr.x + s] = (int2)(n_pp - self_in_tree, n_pc);
#endif
    }
#if !SINK_COUNTS
    counts[g] = (int2)(n_pp + n_pc, n_pc);
#endif
}
