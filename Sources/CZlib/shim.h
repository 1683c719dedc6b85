#include <zlib.h>

/* deflateInit2/inflateInit2 are macros; these wrappers make raw DEFLATE (RFC 1951) callable from Swift. */
static inline int tidemark_deflate_init(z_streamp stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}
static inline int tidemark_inflate_init(z_streamp stream) {
    return inflateInit2(stream, -15);
}
