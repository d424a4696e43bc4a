/* The device probe (hybridtree/probe.py): built with the force kernels' options before a
 * device is chosen, so a device whose compiler fails is known before a run starts; then
 * run to measure each way of computing 1/sqrt (cl/rsqrt.cl) on n inputs.
 * out[4 i + k]: RSQRT_PLAIN, RSQRT_NEWTON, RSQRT_DIV of x[i], and sqrt(x[i]).
 */
#include "rsqrt.cl"

__kernel void probe_rsqrt(const int n, __global const float *x, __global float *out)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float v = x[i];
    out[4 * i + 0] = RSQRT_PLAIN(v);
    out[4 * i + 1] = RSQRT_NEWTON(v);
    out[4 * i + 2] = RSQRT_DIV(v);
    out[4 * i + 3] = sqrt(v);
}
