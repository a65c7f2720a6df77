// util/base64.h — standard base64 (RFC 4648, with padding), as tiktoken files use.
#pragma once
#include <stddef.h>
#include <stdint.h>

// Writes 4*ceil(n/3) chars + NUL into out; returns the char count.
size_t base64_encode(const uint8_t *in, size_t n, char *out);
// Decodes `n` chars into out (room for 3*n/4 bytes); returns the byte count, or -1 if invalid.
long base64_decode(const char *in, size_t n, uint8_t *out);
