// util/hash.h — hashing: a fast non-cryptographic hash for hash tables, SHA-256 for content ids,
// and two open-addressing hash maps used by the tokenizer (bytes -> u64 and u64 -> u64).
#pragma once
#include <stddef.h>
#include <stdint.h>

// Fast 64-bit hash of a byte string (never returns 0, so 0 can mark an empty slot).
uint64_t hash_bytes(const void *data, size_t len);

// SHA-256 of data as 64 lowercase hex chars + NUL (OpenSSL libcrypto).
void sha256_hex(const void *data, size_t len, char out[65]);
// Incremental form.
typedef struct Sha256 Sha256;
Sha256 *sha256_begin(void);
void sha256_update(Sha256 *s, const void *data, size_t len);
void sha256_end(Sha256 *s, char out[65]);  // frees s

// ---------------------------------------------------------------------------------------------
// BytesMap: byte string -> uint64 value. Keys are copied into an internal arena. Open
// addressing with linear probing; grows at 50% load. Not thread-safe for writes.
// ---------------------------------------------------------------------------------------------
typedef struct {
    uint64_t *hash;     // (cap) key hash, 0 = empty slot
    uint64_t *key_off;  // (cap) offset of the key in arena
    uint32_t *key_len;  // (cap) key length in bytes
    uint64_t *val;      // (cap) value
    char *arena;        // (arena_len) all keys back to back
    size_t arena_len, arena_cap;
    size_t cap, count;  // cap is a power of two
} BytesMap;

void bmap_init(BytesMap *m, size_t expected);
void bmap_free(BytesMap *m);
void bmap_clear(BytesMap *m);  // drop all entries, keep the memory
// Pointer to the value for key, or NULL. `h` must be hash_bytes(key, len).
uint64_t *bmap_find(const BytesMap *m, const void *key, size_t len, uint64_t h);
// Pointer to the value for key, inserting it with value `init` if absent (*inserted says which).
uint64_t *bmap_upsert(BytesMap *m, const void *key, size_t len, uint64_t h, uint64_t init, int *inserted);
static inline const char *bmap_key(const BytesMap *m, size_t slot) { return m->arena + m->key_off[slot]; }

// ---------------------------------------------------------------------------------------------
// U64Map: uint64 key -> uint64 value (e.g. a token pair (a << 32 | b) -> count).
// ---------------------------------------------------------------------------------------------
typedef struct {
    uint64_t *key;  // (cap) key + 1, 0 = empty slot
    uint64_t *val;  // (cap)
    size_t cap, count;
} U64Map;

void u64map_init(U64Map *m, size_t expected);
void u64map_free(U64Map *m);
uint64_t *u64map_find(const U64Map *m, uint64_t key);
uint64_t *u64map_upsert(U64Map *m, uint64_t key, uint64_t init, int *inserted);
