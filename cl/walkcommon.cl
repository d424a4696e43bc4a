/* Shared by the group walks (treewalk.cl, walklist.cl): defines, the changeover weight,
 * the opening test and the evaluation of an interaction list in local memory.
 * Included textually by hybridtree.opencl.kernel_source.
 */
#include "rsqrt.cl"
#include "softening.cl"

/* IN_ORDER, at the start of a block: its float arithmetic keeps the order written.
 * -cl-fast-relaxed-math lets a compiler reassociate, and Intel's CPU runtime (2026.2)
 * does: in REL it forms gch + gcl and h + l first, which drops the lo parts, and differently
 * for sinks and for list entries, so that a sink's own particle no longer lay at the sink
 * (the list walk's self term then gave a force m dx / eps^3, inf with eps = 0, and near
 * pairs lost the hi/lo precision); in the quadrupole terms it cost accuracy too.
 * Clang-based compilers (PoCL, Intel, AMD, ...) take the pragma from clang 12 on (older
 * ones reject the option); other compilers have no such pragma and get nothing. */
#if defined(__clang__) && __clang_major__ >= 12
#define IN_ORDER _Pragma("clang fp reassociate(off)")
#else
#define IN_ORDER
#endif
#ifndef WG
#define WG 64
#endif
#ifndef CAP
#define CAP 256
#endif
#ifndef QUAD
#define QUAD 0
#endif
#if QUAD && SOFTENING == 2
#error "the spline softening takes monopole cells only"
#endif

#ifndef SPLIT
#define SPLIT 0
#endif
#if SPLIT
#ifndef CHANGEOVER
#define CHANGEOVER 1
#endif
/* W(r) from the squared distance d2; works on float and on float vectors (VF) */
#define CO_Y(d2) clamp((sqrt(d2) - (R_IN)) * (1.0f / ((R_OUT) - (R_IN))), 0.0f, 1.0f)
#if CHANGEOVER == 1
#define CO_W(y) ((y) * (y) / (2.0f * (y) * (y) - 2.0f * (y) + 1.0f))
#else
#define CO_W(y) ((y) * (y) * (y) * (y) * (35.0f + (y) * (-84.0f + (y) * (70.0f - 20.0f * (y)))))
#endif
#if SPLIT == 1
#define WEIGHT(y) CO_W(y)
#else
#define WEIGHT(y) (1.0f - CO_W(y))
#endif
#endif
/* the spline softening's acceleration factor mr3 of a term at squared distance d2,
   weighted for the soft or hard part (SPLIT 0: unchanged); float or VF */
#if SPLIT
#define SPLIT_WEIGHT(mr3, d2) ((mr3) *= WEIGHT(CO_Y(d2)))
#else
#define SPLIT_WEIGHT(mr3, d2) ((void)0)
#endif

/* ZERO_GUARD = 1: a pair at zero distance (eps = 0) contributes nothing instead of inf;
   with eps > 0 the host sets 0 and the test is dropped. */
#ifndef ZERO_GUARD
#define ZERO_GUARD 1
#endif

/* OPENING = 0: the geometric test d^2 > S_eff = (l / theta + s)^2.
   OPENING = 1: GADGET's relative test, accept when M l^p <= alpha |a_old| d^(p+2) (p = 2
   for monopoles, 3 with quadrupoles) and d^2 > S_eff, S_eff then made with theta_max
   (GADGET-4's ErrTolThetaMax, which also keeps every sink outside the cell's bounding
   sphere).  alpha |a_old| is the smallest of the group's sinks, in the group's half-side
   w; l is the bounding radius over sqrt(3)/2: the side plus 1.15 times the offset of the
   centre of mass, never smaller than GADGET's side.  A cell is accepted in any case
   where d > l / theta_min (INV_THETA_MIN = 1 / theta_min): a sink at the centre of a
   system has |a_old| near 0 and would open the whole tree. */
#ifndef OPENING
#define OPENING 0
#endif
#ifndef INV_THETA_MIN
#define INV_THETA_MIN 3.3333333f
#endif

#define CELL_ENTRY (-2)   /* index of a list entry that is a cell (never a sink's own) */

/* PER_EPS = 1: a softening per particle (GADGET-4's softening per type).  A source's eps
   rides in the w of its lo part (src_lo[j].w; 0 without PER_EPS), a sink's likewise, and
   a cell has cell_eps[c] = (mass-weighted mean eps^2 of its particles, their largest eps,
   their smallest eps, 2.8 times the largest where they differ, else 0) (cl/treebuild.cl).
   A pair is softened with the larger of the sink's and the source's eps (GADGET-4's
   rule); a cell's eps^2 is its mean: to first order in eps^2 / d^2 the sum of its
   particles' softened terms, exact where they share one eps.  A cell of mixed softenings
   is opened within 2.8 times its largest eps by a group whose smallest sink eps (the w of
   the group centre's lo part, group_lo[g].w) is below that largest (MIXED_GUARD), as
   GADGET-4 opens such a node within its largest softening's h for a sink softened less:
   beyond it the spline is Newtonian for every particle of the cell, and the Plummer
   terms' second-order error stays below 0.7 % of the cell's force; a sink softened at
   least as much softens every pair of the cell with its own eps, exactly.
   PAIR_EPS2(sink, entry): the eps^2 of a pair from the sink's and the entry's eps^2;
   without PER_EPS the kernel's one eps2 (whatever is in scope by that name). */
#ifndef PER_EPS
#define PER_EPS 0
#endif
#if PER_EPS
#define PAIR_EPS2(se2, ee2) fmax((se2), (ee2))
/* decide's last argument for cell c: the squared radius within which it is opened (0:
   none), with cell_eps and the group's lo centre gcl in scope */
#define MIXED_GUARD(c) , (cell_eps[c].y > gcl.w ? cell_eps[c].w * cell_eps[c].w : 0.0f)
#define MIXED_PARAM , const float guard2
#else
#define PAIR_EPS2(se2, ee2) (eps2)
#define MIXED_GUARD(c)
#define MIXED_PARAM
#endif

/* SELF: how a sink's own source index (its "self", skipped in its list, or -1: none) is
   known.  0: the sinks are not the walked tree's sources (none); 1: sink i, in group order,
   is source i (a tree's walk for its own particles: sink_self is not read, so it needs no
   buffer of 4 bytes a sink); 2 (the default): read from sink_self (the packed sinks of a
   block step's active walk).
   SINK_COUNTS: 1 (the default): the interaction counts of each sink into counts[sink]
   (int2: particle-particle, particle-cell); 0: none per sink (a run sums them, and needs
   no buffer of 8 bytes a sink): tree_walk and tree_walk_simd write their group's
   (entries, cells) into counts[group], as walk_lists writes list_info, so that a sink's
   counts are (entries - cells - (self >= 0), cells) (hybridtree/device/reduce.py
   GroupCounts sums them). */
#ifndef SELF
#define SELF 2
#endif

/* OUT_AT: 0 (the default): sink si's float4 into out[si] (tree order; cl/prepare.cl
   sorts it back); 1: into out[out_at[si]], its caller index, the state's own float32
   part (hybridtree/state/parts4.py; an extra last argument out_at: the tree's order). */
#ifndef OUT_AT
#define OUT_AT 0
#endif
#if OUT_AT
#define OUT_AT_PARAM , __global const uint *out_at
#define OUT_ROW(si) (out_at[si])
#else
#define OUT_AT_PARAM
#define OUT_ROW(si) (si)
#endif
#if SELF == 0
#define SELF_OF(si) (-1)
#elif SELF == 1
#define SELF_OF(si) (si)
#else
#define SELF_OF(si) (sink_self[si])
#endif
#ifndef SINK_COUNTS
#define SINK_COUNTS 1
#endif

/* PERIODIC = 1: the short-range force of TreePM in a periodic cube (hybridtree.gravity.
   periodic).  BOX_HI + BOX_LO = L (a float pair: a wrapped separation keeps the hi/lo
   precision), INV_BOX = 1 / L, INV_2RS = 1 / (2 r_s), RCUT = r_cut.  Every position is
   made relative to the group centre on its nearest image (rel_pos), every pair again on
   its own nearest image (SEP: a group wider than L / 2 - r_cut); the pair force and
   potential are weighted by the short-range kernel (PM_WEIGHTS, PM_ADD) and vanish beyond
   r_cut; a cell wholly beyond r_cut of the group is skipped (decide: 3), and a cell that
   some other image could bring within r_cut is opened. */
#ifndef PERIODIC
#define PERIODIC 0
#endif
#if PERIODIC
#if SPLIT
#error "PERIODIC does not take the hybrid tree's force split"
#endif
#if QUAD
#error "PERIODIC takes monopole cells only"
#endif
#define SEP(d) ((d) - (BOX_HI) * rint((d) * (INV_BOX)))
/* Force and potential factors at squared separation d2 (float or a float vector T):
   erfc(u) + 2 u exp(-u^2) / sqrt(pi) and erfc(u), u = r / (2 r_s), 0 beyond r_cut;
   erfc by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7) on one exp. */
#define PM_WEIGHTS(T, d2, wf, wp) do {                                                 \
        const T u_ = sqrt(d2) * (INV_2RS);                                           \
        const T e_ = exp(-u_ * u_);                                                  \
        const T t_ = 1.0f / (1.0f + 0.3275911f * u_);                                \
        const T c_ = t_ * (0.254829592f + t_ * (-0.284496736f + t_ * (1.421413741f   \
                     + t_ * (-1.453152027f + t_ * 1.061405429f)))) * e_;              \
        const T in_ = select((T)(0.0f), (T)(1.0f), (d2) < (RCUT) * (RCUT));          \
        wp = c_ * in_;                                                               \
        wf = (c_ + 1.1283791671f * u_ * e_) * in_;                                   \
    } while (0)
/* A pair's Newtonian m / r^3 (mr3) and m / r (mr) with the short-range factors, added
   to the partial sums (ax, ay, az, pot): the one accumulation of every kernel. */
#define PM_ADD(T, d2, mr3, mr, dx, dy, dz, ax, ay, az, pot) do {                       \
        T wf_, wp_;                                                                  \
        PM_WEIGHTS(T, d2, wf_, wp_);                                                 \
        const T f_ = (mr3) * wf_;                                                    \
        ax += f_ * (dx);                                                             \
        ay += f_ * (dy);                                                             \
        az += f_ * (dz);                                                             \
        pot -= (mr) * wp_;                                                           \
    } while (0)
#else
#define SEP(d) (d)       /* a separation as it is: no images */
#endif

/* Position of a float4 hi/lo pair relative to the group centre (gch, gcl); w kept.
   Bit for bit the same wherever it is formed (sink or list entry): IN_ORDER.  Compilers
   without the pragma may reassociate: pass the loads themselves (REL(src_hi[j],
   src_lo[j])), not a float4 temporary of the lo word, which on the H100 (NVIDIA's driver,
   session 20) cost the hi/lo precision (theta = 0.01 against the direct kernel: 9e-5
   instead of < 2e-5). */
inline float4 rel_pos(const float4 h, const float4 l, const float4 gch, const float4 gcl)
{
    IN_ORDER
#if PERIODIC
    /* the image nearest the group centre: whole boxes off the hi part (exact where a
       wrap happens, Sterbenz) and the lo part of L off the lo part */
    const float dx = h.x - gch.x, dy = h.y - gch.y, dz = h.z - gch.z;
    const float kx = rint(dx * (INV_BOX)), ky = rint(dy * (INV_BOX)), kz = rint(dz * (INV_BOX));
    return (float4)((dx - kx * (BOX_HI)) + ((l.x - gcl.x) - kx * (BOX_LO)),
                    (dy - ky * (BOX_HI)) + ((l.y - gcl.y) - ky * (BOX_LO)),
                    (dz - kz * (BOX_HI)) + ((l.z - gcl.z) - kz * (BOX_LO)), h.w);
#else
    return (float4)((h.x - gch.x) + (l.x - gcl.x), (h.y - gch.y) + (l.y - gcl.y),
                    (h.z - gch.z) + (l.z - gcl.z), h.w);
#endif
}
#define REL(h, l) rel_pos((h), (l), gch, gcl)

/* Opening test of one cell against the group box: 1 accept, 2 leaf, 0 open,
   3 skip (hard part only: nothing of the cell is within R_OUT of the group). */
inline int decide(const float4 rel, const float s_eff, const int leaf_count, const float4 gh,
                  const float rad MIXED_PARAM)
{
    const float ex = fmax(fabs(rel.x) - gh.x, 0.0f);
    const float ey = fmax(fabs(rel.y) - gh.y, 0.0f);
    const float ez = fmax(fabs(rel.z) - gh.z, 0.0f);
    const float d2 = ex * ex + ey * ey + ez * ez;
#if PERIODIC
    /* another image of the cell lies at least L / 2 - gh - rad from the group box */
    if (rad + fmax(gh.x, fmax(gh.y, gh.z)) + (RCUT) >= 0.5f * (BOX_HI))
        return leaf_count > 0 ? 2 : 0;
    if (d2 > ((RCUT) + rad) * ((RCUT) + rad))
        return 3;
#endif
#if SPLIT == 2
    if (d2 > ((R_OUT) + rad) * ((R_OUT) + rad))
        return 3;
#endif
#if PER_EPS
    if (d2 <= guard2)                 /* mixed softenings within the largest's reach */
        return leaf_count > 0 ? 2 : 0;
#endif
#if OPENING == 1
    const float l = rad * 1.1547005f;
    const float lt = l * (INV_THETA_MIN);
#if QUAD
    const int far = d2 > s_eff && (rel.w * (l * l * l) <= gh.w * (d2 * d2) * sqrt(d2)
                                   || d2 > lt * lt);
#else
    const int far = d2 > s_eff && (rel.w * (l * l) <= gh.w * (d2 * d2) || d2 > lt * lt);
#endif
    return far ? 1 : (leaf_count > 0 ? 2 : 0);
#else
    return (d2 > s_eff) ? 1 : (leaf_count > 0 ? 2 : 0);
#endif
}

/* Interaction of list entry e (group frame; quadrupole Q for cells, 0 for particles)
   with the sink at (sx, sy, sz), added to the partial sums (pax, pay, paz, ppot). */
inline void interact(const float4 e,
#if QUAD
                     const float8 Q,
#endif
                     const float sx, const float sy, const float sz, const float eps2,
                     float *pax, float *pay, float *paz, float *ppot)
{
    IN_ORDER
    const float dx = SEP(e.x - sx), dy = SEP(e.y - sy), dz = SEP(e.z - sz);
    const float d2 = dx * dx + dy * dy + dz * dz;
#if SOFTENING == 2
    float mr, mr3;
    SOFT(float, d2, eps2, e.w, mr, mr3);
    SPLIT_WEIGHT(mr3, d2);
#else
    const float r2 = d2 + eps2;
#if ZERO_GUARD
    const float rinv = r2 > 0.0f ? RSQRT(r2) : 0.0f;
#else
    const float rinv = RSQRT(r2);
#endif
    const float mr = e.w * rinv;
    const float rinv2 = rinv * rinv;
#if SPLIT
    const float wgt = WEIGHT(CO_Y(d2));
    const float mr3 = mr * rinv2 * wgt;
#else
    const float mr3 = mr * rinv2;
#endif
#endif
#if QUAD
    /* d = source - sink, u = d / r (|u| <= 1); phi = -M/r - (u.Q.u)/(2 r^3);
       a = (M/r^2 + 5/2 (u.Q.u)/r^4) u - Q.u/r^4   (Q = 0 for particles; the potential
       never weighted).  In u, not d (d.Q.d / r^7): d.Q.d ~ M l^2 d^2 overflowed float32
       for a cell far out (a sphere of radius 1e8 and mass 1e10) while r^-5 underflowed:
       inf * 0 = NaN.  Q.u and u.Q.u stay below 3 M l^2; r^-4 underflows beyond 2^31 and
       drops the quadrupole terms there, never to a NaN. */
    const float ux = dx * rinv, uy = dy * rinv, uz = dz * rinv;
    const float qx = Q.s0 * ux + Q.s3 * uy + Q.s4 * uz;
    const float qy = Q.s3 * ux + Q.s1 * uy + Q.s5 * uz;
    const float qz = Q.s4 * ux + Q.s5 * uy + Q.s2 * uz;
    const float uqu = ux * qx + uy * qy + uz * qz;
#if SPLIT
    const float rinv4 = rinv2 * rinv2 * wgt;
#else
    const float rinv4 = rinv2 * rinv2;
#endif
    /* the monopole term rounded as without quadrupoles (mr3 d): the two walk kernels
       then agree as closely as before the u form; the quadrupole's terms in u */
    const float q4 = 2.5f * uqu * rinv4;
    *pax += mr3 * dx + (q4 * ux - rinv4 * qx);
    *pay += mr3 * dy + (q4 * uy - rinv4 * qy);
    *paz += mr3 * dz + (q4 * uz - rinv4 * qz);
    *ppot -= mr + 0.5f * uqu * rinv * rinv2;
#elif PERIODIC
    PM_ADD(float, d2, mr3, mr, dx, dy, dz, *pax, *pay, *paz, *ppot);
#else
    *pax += mr3 * dx;
    *pay += mr3 * dy;
    *paz += mr3 * dz;
    *ppot -= mr;
#endif
}

/* Partial sums (ax, ay, az, pot) of the first n list entries for a sink at sp
   (group frame) whose own source index is self (-1: none); eps2: the sink's (PER_EPS) or
   every pair's. */
inline float4 eval_list(__local const float4 *list, __local const int *idx,
#if QUAD
                        __local const float8 *quad,
#endif
#if PER_EPS
                        __local const float *leps,   /* each entry's eps^2 */
#endif
                        const int n, const int self, const float4 sp, const float eps2,
                        int *n_self)
{
    float ax = 0.0f, ay = 0.0f, az = 0.0f, pot = 0.0f;
    int ns = 0;
    for (int k = 0; k < n; k++) {
        if (idx[k] == self) {
            ns++;
            continue;
        }
        interact(list[k],
#if QUAD
                 quad[k],
#endif
                 sp.x, sp.y, sp.z, PAIR_EPS2(eps2, leps[k]), &ax, &ay, &az, &pot);
    }
    *n_self = ns;
    return (float4)(ax, ay, az, pot);
}
