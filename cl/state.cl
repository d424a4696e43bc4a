/* Operations on a run state kept on the device (hybridtree/state.py): kicks, drifts and
 * the sum of two force parts, on float64 arrays of n x 3 values (or any flat length).
 *
 * The arithmetic is the host's: one multiply rounded, then one add rounded, as numpy's
 * `vel += dt * acc` does.  Contraction into fused multiply-adds is switched off, so a
 * run with its state on the device and one with its state on the host step the same
 * particles to the same bits (tests/test_state.py).
 */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* v[i] += dt * a[i]: a kick (v: velocities, a: accelerations) or a drift (v: positions,
   a: velocities) */
__kernel void axpy(const int n, const double dt, __global const double *a, __global double *v)
{
    const int i = get_global_id(0);
    if (i < n)
        v[i] += dt * a[i];
}

/* out[i] = a[i] + b[i]: the whole acceleration of a hybrid state (hard + soft) */
__kernel void add(const int n, __global const double *a, __global const double *b,
                  __global double *out)
{
    const int i = get_global_id(0);
    if (i < n)
        out[i] = a[i] + b[i];
}
