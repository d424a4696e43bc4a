/* The softening of a pair (included by walkcommon.cl and direct.cl).
 *
 * SOFTENING = 1 (default): Plummer, phi = -m / sqrt(r^2 + eps^2).
 * SOFTENING = 2: GADGET's cubic spline (Springel, Yoshida & White 2001, as GADGET-2 and
 *   GADGET-4 apply it) with the Plummer-equivalent eps: h = 2.8 eps, exactly Newtonian
 *   beyond h, and phi(0) = -m / eps as Plummer's (so a sink's own term, where a kernel
 *   removes it as m / eps, is the same).
 *
 * SOFT(T, d2, eps2, m, mr, mr3) for T float (SOFT_V for a float vector): with d2 the
 * squared distance (0 allowed) and eps2 = eps^2 > 0 (a float), mr := m g(r)
 * (phi = -mr) and mr3 := m f(r) (a = mr3 d, d = source - sink), what the Plummer
 * kernels call m / r and m / r^3; eps2 may also be a T (a softening per lane: PER_EPS).
 * Where the polynomials are formed, both are and one
 * is selected, with their arguments kept finite in the lanes not taken (no inf under
 * -cl-fast-relaxed-math). */
#ifndef SOFTENING
#define SOFTENING 1
#endif
#if SOFTENING == 2
/* Newton's first; the polynomials only where some lane of T lies within h (NEAR: how a
   T of comparisons says "any": the comparison itself for float, any() for vectors):
   most pairs of a walk (every accepted cell) lie beyond h. */
#define SOFT_(T, d2, eps2, m, mr, mr3, NEAR) do {                                       \
        const T ri_ = RSQRT(fmax(d2, (T)(1e-30f)));                                     \
        mr = (m) * ri_;                                                                 \
        mr3 = mr * ri_ * ri_;                                                           \
        const T ih_ = RSQRT(eps2) * 0.35714285714f;   /* 1 / h (eps2: float, or T per lane) */ \
        if (NEAR((d2) * (ih_ * ih_) < (T)(1.0f))) {                                     \
            const T u_ = sqrt(d2) * ih_;                                                \
            const T u2_ = u_ * u_;                                                      \
            const T w_ = fmax(u_, (T)(0.5f));            /* the middle branch's u */     \
            const T w2_ = w_ * w_;                                                      \
            const T ih3_ = ih_ * ih_ * ih_;                                             \
            const T fi_ = ih3_ * (10.666666667f + u2_ * (32.0f * u_ - 38.4f));          \
            const T fm_ = ih3_ * (21.333333333f - 48.0f * w_ + 38.4f * w2_              \
                                  - 10.666666667f * w2_ * w_ - 0.066666667f / (w2_ * w_)); \
            const T pi_ = ih_ * (2.8f - u2_ * (5.333333333f + u2_ * (6.4f * u_ - 9.6f))); \
            const T pm_ = ih_ * (3.2f - 0.066666667f / w_ - w2_ * (10.666666667f        \
                                 + w_ * (-16.0f + w_ * (9.6f - 2.133333333f * w_))));   \
            mr3 = select(mr3, (m) * select(fm_, fi_, u_ < 0.5f), u_ < 1.0f);            \
            mr = select(mr, (m) * select(pm_, pi_, u_ < 0.5f), u_ < 1.0f);              \
        }                                                                               \
    } while (0)
#define SOFT_ANY_SCALAR(c) (c)
#define SOFT(T, d2, eps2, m, mr, mr3) SOFT_(T, d2, eps2, m, mr, mr3, SOFT_ANY_SCALAR)
#define SOFT_V(T, d2, eps2, m, mr, mr3) SOFT_(T, d2, eps2, m, mr, mr3, any)
#elif SOFTENING != 1
#error "SOFTENING is 1 (Plummer) or 2 (spline)"
#endif
