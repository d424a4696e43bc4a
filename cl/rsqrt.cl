/* RSQRT(x): 1/sqrt(x) of a float or a float vector, for the force kernels.
 *
 * Under -cl-fast-relaxed-math an implementation may compute rsqrt from a hardware
 * estimate: Intel's CPU runtime gives 5.9e-5 relative error, NVIDIA and PoCL about 1e-7.
 * So the way it is computed is chosen per device (hybridtree/probe.py measures each way
 * with the same build options and picks the first that reaches 2^-21 relative):
 *   RSQRT_MODE 0: rsqrt(x)
 *   RSQRT_MODE 1: rsqrt(x) and one Newton step (squares the estimate's error)
 *   RSQRT_MODE 2: 1 / sqrt(x)
 * A define RSQRT(x) given at build time (tuning) takes precedence.
 * Included textually by hybridtree.opencl.kernel_source.
 */
#define RSQRT_PLAIN(x) rsqrt(x)
#define RSQRT_NEWTON(x) (rsqrt(x) * (1.5f - 0.5f * (x) * rsqrt(x) * rsqrt(x)))
#define RSQRT_DIV(x) (1.0f / sqrt(x))
#ifndef RSQRT
#if defined(RSQRT_MODE) && RSQRT_MODE == 1
#define RSQRT(x) RSQRT_NEWTON(x)
#elif defined(RSQRT_MODE) && RSQRT_MODE == 2
#define RSQRT(x) RSQRT_DIV(x)
#else
#define RSQRT(x) RSQRT_PLAIN(x)
#endif
#endif
