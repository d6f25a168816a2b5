/*
 * x86space.c - the encoding-space walk of x86space.h.
 */
#include <string.h>

#include "x86space.h"

void x86space_each(const char *const *pre, size_t npre,
                   const char *const *esc, size_t nesc, unsigned mstep,
                   x86space_fn fn, void *ctx)
{
    for (size_t p = 0; p < npre; p++)
        for (size_t x = 0; x < nesc; x++)
            for (unsigned op = 0; op < 256; op++)
                for (unsigned m = 0; m < 256; m += mstep) {
                    uint8_t buf[24];
                    size_t n = strlen(pre[p]), ne = strlen(esc[x]);
                    memcpy(buf, pre[p], n);
                    memcpy(buf + n, esc[x], ne);
                    n += ne;
                    buf[n++] = (uint8_t)op;
                    buf[n++] = (uint8_t)m;
                    for (unsigned t = 0; t < 10; t++)
                        buf[n++] = (uint8_t)(0x11 * t + 1);
                    fn(buf, n, ctx);
                }
}
