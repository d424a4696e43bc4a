/* Kicks, drifts and the net force of particles kept on the device between the hybrid
 * tree's hard steps (OpenCL C 1.2 with cl_khr_fp64; hybridtree/resident.py drives it).
 * Positions, velocities, masses and accelerations are float64 (n x 3 or n), as on the
 * host, so a step on the device is the host's step to the last bit of the float64
 * arithmetic (the same operations in the same order).
 *
 * Defines: WG (work-group size of weighted_sum).
 */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
/* no fused multiply-adds: a kick must round as numpy's vel += dt * acc does */
#pragma OPENCL FP_CONTRACT OFF

#ifndef WG
#define WG 256
#endif

/* vel += dt * (acc - shift): a kick with the net acceleration shift removed */
__kernel void kick(const int n, const double dt, const double sx, const double sy,
                   const double sz, __global const double *acc, __global double *vel)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const size_t k = 3 * (size_t)i;
    vel[k] += dt * (acc[k] - sx);
    vel[k + 1] += dt * (acc[k + 1] - sy);
    vel[k + 2] += dt * (acc[k + 2] - sz);
}

/* pos += dt * vel */
__kernel void drift(const int n, const double dt, __global const double *vel,
                    __global double *pos)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const size_t k = 3 * (size_t)i;
    pos[k] += dt * vel[k];
    pos[k + 1] += dt * vel[k + 1];
    pos[k + 2] += dt * vel[k + 2];
}

/* Per work-group sums of m * acc (x, y, z) and m over a strided share: out[4 g ..]. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void weighted_sum(const int n, __global const double *mass, __global const double *acc,
                  __global double *out)
{
    __local double l[4][WG];
    const int lid = get_local_id(0);
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
        const double m = mass[i];
        s[0] += m * acc[3 * (size_t)i];
        s[1] += m * acc[3 * (size_t)i + 1];
        s[2] += m * acc[3 * (size_t)i + 2];
        s[3] += m;
    }
    for (int k = 0; k < 4; k++)
        l[k][lid] = s[k];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = WG / 2; h > 0; h >>= 1) {
        if (lid < h)
            for (int k = 0; k < 4; k++)
                l[k][lid] += l[k][lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        for (int k = 0; k < 4; k++)
            out[4 * get_group_id(0) + k] = l[k][0];
}
