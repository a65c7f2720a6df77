// util/hash.c — hashing and hash maps (see hash.h).
#include "util/hash.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

// ---------------------------------------------------------------------------------------------
// Fast hash: 8 bytes at a time, multiply-xorshift mixing (in the spirit of wyhash/murmur3's
// finaliser). Quality is ample for hash tables; it is not for anything adversarial.
// ---------------------------------------------------------------------------------------------

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

uint64_t hash_bytes(const void *data, size_t len) {
    const uint8_t *p = data;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (len * 0x100000001b3ULL);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ mix64(w)) * 0x9fb21c651e98df25ULL;
        p += 8;
        len -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, p, len);
    h = mix64(h ^ tail ^ ((uint64_t)len << 56));
    return h ? h : 1;
}

// ---------------------------------------------------------------------------------------------
// SHA-256 through OpenSSL's EVP interface
// ---------------------------------------------------------------------------------------------

struct Sha256 { EVP_MD_CTX *ctx; };

Sha256 *sha256_begin(void) {
    Sha256 *s = xmalloc(sizeof *s);
    s->ctx = EVP_MD_CTX_new();
    if (!s->ctx || EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1) abort();
    return s;
}

void sha256_update(Sha256 *s, const void *data, size_t len) {
    if (EVP_DigestUpdate(s->ctx, data, len) != 1) abort();
}

void sha256_end(Sha256 *s, char out[65]) {
    unsigned char md[32];
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(s->ctx, md, &n) != 1 || n != 32) abort();
    EVP_MD_CTX_free(s->ctx);
    free(s);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = 0;
}

void sha256_hex(const void *data, size_t len, char out[65]) {
    Sha256 *s = sha256_begin();
    sha256_update(s, data, len);
    sha256_end(s, out);
}

// ---------------------------------------------------------------------------------------------
// BytesMap
// ---------------------------------------------------------------------------------------------

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c *= 2;
    return c;
}

static void bmap_alloc_slots(BytesMap *m, size_t cap) {
    m->cap = cap;
    m->hash = xcalloc(cap, sizeof *m->hash);
    m->key_off = xmalloc(cap * sizeof *m->key_off);
    m->key_len = xmalloc(cap * sizeof *m->key_len);
    m->val = xmalloc(cap * sizeof *m->val);
}

void bmap_init(BytesMap *m, size_t expected) {
    memset(m, 0, sizeof *m);
    bmap_alloc_slots(m, pow2_at_least(expected * 2));
}

void bmap_free(BytesMap *m) {
    free(m->hash);
    free(m->key_off);
    free(m->key_len);
    free(m->val);
    free(m->arena);
    memset(m, 0, sizeof *m);
}

void bmap_clear(BytesMap *m) {
    memset(m->hash, 0, m->cap * sizeof *m->hash);
    m->count = 0;
    m->arena_len = 0;
}

static size_t bmap_slot(const BytesMap *m, const void *key, size_t len, uint64_t h) {
    size_t mask = m->cap - 1, i = h & mask;
    while (m->hash[i]) {
        if (m->hash[i] == h && m->key_len[i] == len && memcmp(m->arena + m->key_off[i], key, len) == 0) return i;
        i = (i + 1) & mask;
    }
    return i;
}

uint64_t *bmap_find(const BytesMap *m, const void *key, size_t len, uint64_t h) {
    size_t i = bmap_slot(m, key, len, h);
    return m->hash[i] ? &m->val[i] : NULL;
}

static void bmap_grow(BytesMap *m) {
    BytesMap old = *m;
    bmap_alloc_slots(m, old.cap * 2);
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.hash[i]) continue;
        size_t mask = m->cap - 1, j = old.hash[i] & mask;
        while (m->hash[j]) j = (j + 1) & mask;
        m->hash[j] = old.hash[i];
        m->key_off[j] = old.key_off[i];
        m->key_len[j] = old.key_len[i];
        m->val[j] = old.val[i];
    }
    free(old.hash);
    free(old.key_off);
    free(old.key_len);
    free(old.val);
}

uint64_t *bmap_upsert(BytesMap *m, const void *key, size_t len, uint64_t h, uint64_t init, int *inserted) {
    size_t i = bmap_slot(m, key, len, h);
    if (m->hash[i]) {
        if (inserted) *inserted = 0;
        return &m->val[i];
    }
    if (2 * (m->count + 1) > m->cap) {
        bmap_grow(m);
        i = bmap_slot(m, key, len, h);
    }
    GROW(m->arena, m->arena_cap, m->arena_len + len);
    memcpy(m->arena + m->arena_len, key, len);
    m->hash[i] = h;
    m->key_off[i] = m->arena_len;
    m->key_len[i] = (uint32_t)len;
    m->val[i] = init;
    m->arena_len += len;
    m->count++;
    if (inserted) *inserted = 1;
    return &m->val[i];
}

// ---------------------------------------------------------------------------------------------
// U64Map
// ---------------------------------------------------------------------------------------------

void u64map_init(U64Map *m, size_t expected) {
    m->cap = pow2_at_least(expected * 2);
    m->count = 0;
    m->key = xcalloc(m->cap, sizeof *m->key);
    m->val = xmalloc(m->cap * sizeof *m->val);
}

void u64map_free(U64Map *m) {
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

static size_t u64map_slot(const U64Map *m, uint64_t key) {
    size_t mask = m->cap - 1, i = mix64(key) & mask;
    while (m->key[i] && m->key[i] != key + 1) i = (i + 1) & mask;
    return i;
}

uint64_t *u64map_find(const U64Map *m, uint64_t key) {
    size_t i = u64map_slot(m, key);
    return m->key[i] ? &m->val[i] : NULL;
}

uint64_t *u64map_upsert(U64Map *m, uint64_t key, uint64_t init, int *inserted) {
    size_t i = u64map_slot(m, key);
    if (m->key[i]) {
        if (inserted) *inserted = 0;
        return &m->val[i];
    }
    if (2 * (m->count + 1) > m->cap) {
        U64Map old = *m;
        m->cap *= 2;
        m->key = xcalloc(m->cap, sizeof *m->key);
        m->val = xmalloc(m->cap * sizeof *m->val);
        for (size_t j = 0; j < old.cap; j++) {
            if (!old.key[j]) continue;
            size_t s = u64map_slot(m, old.key[j] - 1);
            m->key[s] = old.key[j];
            m->val[s] = old.val[j];
        }
        free(old.key);
        free(old.val);
        i = u64map_slot(m, key);
    }
    m->key[i] = key + 1;
    m->val[i] = init;
    m->count++;
    if (inserted) *inserted = 1;
    return &m->val[i];
}
