// util/base64.c — standard base64 (see base64.h).
#include "util/base64.h"

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encode(const uint8_t *in, size_t n, char *out) {
    size_t k = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[k++] = ALPHABET[v >> 18];
        out[k++] = ALPHABET[(v >> 12) & 63];
        out[k++] = ALPHABET[(v >> 6) & 63];
        out[k++] = ALPHABET[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[k++] = ALPHABET[v >> 18];
        out[k++] = ALPHABET[(v >> 12) & 63];
        out[k++] = i + 1 < n ? ALPHABET[(v >> 6) & 63] : '=';
        out[k++] = '=';
    }
    out[k] = 0;
    return k;
}

static int sextet(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

long base64_decode(const char *in, size_t n, uint8_t *out) {
    if (n % 4) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        int pad = (in[i + 3] == '=') + (in[i + 2] == '=');
        if (pad && i + 4 != n) return -1;
        if (in[i + 2] == '=' && in[i + 3] != '=') return -1;
        int s[4];
        for (int j = 0; j < 4 - pad; j++)
            if ((s[j] = sextet(in[i + j])) < 0) return -1;
        for (int j = 4 - pad; j < 4; j++) s[j] = 0;
        uint32_t v = (uint32_t)s[0] << 18 | (uint32_t)s[1] << 12 | (uint32_t)s[2] << 6 | (uint32_t)s[3];
        out[k++] = (uint8_t)(v >> 16);
        if (pad < 2) out[k++] = (uint8_t)(v >> 8);
        if (pad < 1) out[k++] = (uint8_t)v;
    }
    return (long)k;
}
