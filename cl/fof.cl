/* Friends of friends on the device (hybridtree/analysis/halos/fof_device.py; the host's
 * reference is hybridtree/analysis/halos/fof.py's friends_of_friends).
 *
 * The particles come sorted by cell of a grid of nx * ny * nz cells of side w >= the
 * linking length (key = (cz * ny + cy) * nx + cx, ascending), each with its position
 * relative to its own cell's corner (float32: small numbers, so a difference of two
 * near particles keeps about 1e-7 of the linking length); start/end give each occupied
 * cell's particles (an empty cell's are never written nor read: its cell_min is
 * INT_MAX).  Labels are sorted indices: label[s] is a particle of s's group, label[s] <=
 * s; at the end every particle holds the smallest sorted index of its group.
 *
 * One round: fof_cell_min gives each occupied cell its particles' smallest label;
 * fof_link (read labels `in`, write `out`, a copy of `in` made before) takes for each
 * particle the smallest label among the particles of the 27 cells around it within the
 * linking length, lowers its own label and its label's label (hooking the old root onto
 * the new one) with atomic_min, and raises the flag if anything changed; fof_jump (read
 * `out`, write `in`) follows each label to its root (pointer jumping).  Every write goes
 * to a buffer not read in the same launch, so no work-item reads what another writes (no
 * race; atomic_min makes the results the same bits whatever the order of the
 * work-items).  A cell whose labels did not change in the last round, or whose smallest
 * label is not below a particle's best so far, is passed over without reading its
 * particles (fof_cell_min), so that a round costs little where the labels have settled,
 * however dense the group; a cell's scan stops at a partner holding the cell's smallest
 * label, and in the first round (labels still the sorted indices, `identity`) at the
 * particle's own best.  Rounds repeat until the flag stays 0: then labels agree along
 * every link.
 *
 * Plain OpenCL C 1.2, no double precision.
 */

__kernel void fof_cell_bounds(const uint n, __global const ulong *key,
                              __global uint *start, __global uint *end)
{
    const uint s = get_global_id(0);
    if (s >= n)
        return;
    const ulong k = key[s];
    if (s == 0 || key[s - 1] != k)
        start[k] = s;
    if (s == n - 1 || key[s + 1] != k)
        end[k] = s + 1;
}

/* the sorted particles' offsets (from the unsorted ones, 3 floats each) and labels */
__kernel void fof_gather(const uint n, __global const uint *order,
                         __global const float *offset, __global float4 *sorted,
                         __global int *label)
{
    const uint s = get_global_id(0);
    if (s >= n)
        return;
    const uint i = order[s];
    const size_t k = 3 * (size_t)i;          /* 3 i passes 2^32 above 1.4e9 particles */
    sorted[s] = (float4)(offset[k], offset[k + 1], offset[k + 2], 0.0f);
    label[s] = (int)s;
}

/* each occupied cell's smallest label where a label of the cell changed in the last
 * round (`prev`: the labels at that round's start; every cell in the first round,
 * `identity`), INT_MAX elsewhere: a particle whose partners' labels all stayed has
 * nothing to learn from them (its own label is at most theirs since that round), so
 * fof_link passes over such cells.  Written by the cell's first particle. */
__kernel void fof_cell_min(const uint n, __global const ulong *key,
                           __global const uint *end, __global const int *in,
                           __global const int *prev, const uint identity,
                           __global int *cell_min)
{
    const uint s = get_global_id(0);
    if (s >= n)
        return;
    const ulong k = key[s];
    if (s > 0 && key[s - 1] == k)
        return;
    const uint hi = end[k];
    int m = INT_MAX;
    int moved = (int)identity;
    for (uint j = s; j < hi; j++) {
        const int l = in[j];
        m = min(m, l);
        if (!identity && l != prev[j])
            moved = 1;
    }
    cell_min[k] = moved ? m : INT_MAX;
}

/* the neighbour cell c + d along an axis of m cells: -1 where there is none (open) */
static inline int step_cell(const int c, const int d, const int m, const uint periodic)
{
    int t = c + d;
    if (t < 0)
        t = periodic ? t + m : -1;
    else if (t >= m)
        t = periodic ? t - m : -1;
    return t;
}

__kernel void fof_link(const uint n, __global const ulong *key,
                       __global const uint *start, __global const uint *end,
                       __global const int *cell_min, __global const float4 *pos,
                       const uint nx, const uint ny, const uint nz, const uint periodic,
                       const float w, const float link2, const uint identity,
                       __global const int *in, __global int *out, __global int *changed)
{
    const uint s = get_global_id(0);
    if (s >= n)
        return;
    const ulong k = key[s];
    const int cx = (int)(k % nx);
    const int cy = (int)((k / nx) % ny);
    const int cz = (int)(k / ((ulong)nx * ny));
    const float4 p = pos[s];
    const int own = in[s];
    int best = own;
    for (int dz = -1; dz <= 1; dz++) {
        const int z = step_cell(cz, dz, (int)nz, periodic);
        if (z < 0)
            continue;
        for (int dy = -1; dy <= 1; dy++) {
            const int y = step_cell(cy, dy, (int)ny, periodic);
            if (y < 0)
                continue;
            for (int dx = -1; dx <= 1; dx++) {
                const int x = step_cell(cx, dx, (int)nx, periodic);
                if (x < 0)
                    continue;
                const uint c = ((uint)z * ny + (uint)y) * nx + (uint)x;
                const int floor_c = cell_min[c];
                if (floor_c >= best)
                    continue;           /* nothing new there, or empty */
                uint hi = end[c];
                /* the image of cell c next to s's: its corner dx, dy, dz cells away */
                const float ox = (float)dx * w - p.x;
                const float oy = (float)dy * w - p.y;
                const float oz = (float)dz * w - p.z;
                for (uint j = start[c]; j < hi; j++) {
                    if (identity && (int)j >= best)
                        break;          /* labels are the indices: none smaller left */
                    const int other = in[j];
                    if (other >= best)
                        continue;       /* nothing to learn: no distance needed */
                    const float4 q = pos[j];
                    const float ex = q.x + ox;
                    const float ey = q.y + oy;
                    const float ez = q.z + oz;
                    if (ex * ex + ey * ey + ez * ez <= link2) {
                        best = other;
                        if (best == floor_c)
                            break;      /* the cell's smallest: nothing lower there */
                    }
                }
            }
        }
    }
    if (best < own) {
        atomic_min(&out[s], best);
        atomic_min(&out[own], best);
        *changed = 1;
    }
}

/* each label followed to its root: out[s] = root of s in the forest `in` */
__kernel void fof_jump(const uint n, __global const int *in, __global int *out)
{
    const uint s = get_global_id(0);
    if (s >= n)
        return;
    int l = in[s];
    int next = in[l];
    while (next != l) {
        l = next;
        next = in[l];
    }
    out[s] = l;
}

/* the smallest original index of each group, at its root's place (first: INT_MAX) */
__kernel void fof_first(const uint n, __global const uint *order,
                        __global const int *label, __global int *first)
{
    const uint s = get_global_id(0);
    if (s >= n)
        return;
    atomic_min(&first[label[s]], (int)order[s]);
}

/* each particle's root as the host's union-find gives it (its group's smallest original
 * index), by original index */
__kernel void fof_roots(const uint n, __global const uint *order,
                        __global const int *label, __global const int *first,
                        __global int *root)
{
    const uint s = get_global_id(0);
    if (s >= n)
        return;
    root[order[s]] = first[label[s]];
}
