/* Morton keys' integer grid (included by treebuild.cl and prepare.cl, so that a key
   formed from the same hi/lo pair in either file is the same key: treebuild.cl
   morton_keys, prepare.cl split_keys). */
/* Insert two zero bits between each of the low 21 bits of v. */
inline ulong spread3(ulong v)
{
    v &= 0x1FFFFFUL;
    v = (v | (v << 32)) & 0x1F00000000FFFFUL;
    v = (v | (v << 16)) & 0x1F0000FF0000FFUL;
    v = (v | (v << 8)) & 0x100F00F00F00F00FUL;
    v = (v | (v << 4)) & 0x10C30C30C30C30C3UL;
    v = (v | (v << 2)) & 0x1249249249249249UL;
    return v;
}

/* floor((hi + lo) * scale) + 2^20 clipped to [0, 2^21 - 1]; scale is a power of two, so
   hi * scale and lo * scale are exact and only the final fraction is rounded. */
inline ulong grid_coord(const float hi, const float lo, const float scale)
{
    const float a = hi * scale;
    const float fa = floor(a);
    const float r = (a - fa) + lo * scale;          /* in about [-0.06, 1.06) */
    long u = (long)fa + (long)floor(r) + 1048576L;
    u = clamp(u, 0L, 2097151L);
    return (ulong)u;
}
