/* The acceleration of a float32 part widened (included by state.cl and blocks.cl, after
 * their cl_khr_fp64 pragma and with FP_CONTRACT OFF).
 *
 * A float32 part (float4 per particle: ax, ay, az, pot, as the walk wrote them) and its
 * net force s = (sum m ax, sum m ay, sum m az, sum m) (nothing removed where s[3] = 0):
 * component c of an acceleration widened to double, less s[c] / s[3].  These are the bits
 * of the float64 part that cl/reduce.cl subtract_net left (one double division, one
 * rounded subtraction), so a kick of it is axpy's on that part, and group_floor4's bound
 * group_floor's.
 */
static inline double wide4(const float a, __global const double *s, const int c)
{
    double x = (double)a;
    if (s[3] != 0.0)
        x = x - s[c] / s[3];
    return x;
}
