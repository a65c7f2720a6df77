// tests/fuzz/fuzz_tokenizer.c — the tokenizer files (tokenizer_parse, what tokenizer_load runs).
//
// Input: tokenizer.json, a NUL byte, tokenizer.tiktoken (no NUL: all of it is tokenizer.json
// and the ranks file is empty). A tokenizer that loads must be usable: its specials sit after the
// ranks, and decode(encode(text)) gives the text back, for a fixed text and for the input's bytes.
#include "fuzz_util.h"

#include "tokenizer/tokenizer.h"

static void round_trip(const Tokenizer *tok, Encoder *enc, const uint8_t *text, size_t n) {
    IdVec ids = {0};
    FUZZ_CHECK(encoder_encode(enc, text, n, &ids) == 0, "encode failed: %s", err_msg());
    for (size_t i = 0; i < ids.len; i++)
        FUZZ_CHECK(ids.data[i] < (uint32_t)tok->n_ranks, "encoded id %u is not a mergeable rank (%d)", ids.data[i],
                   tok->n_ranks);
    uint8_t *back = NULL;
    size_t len = 0, cap = 0;
    FUZZ_CHECK(tokenizer_decode(tok, ids.data, ids.len, &back, &len, &cap) == 0, "decode failed: %s", err_msg());
    FUZZ_CHECK(len == n && (n == 0 || !memcmp(back, text, n)), "decode(encode(text)) differs from the text");
    free(back);
    idvec_free(&ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t meta_len = nul ? (size_t)(nul - data) : size;
    const char *ranks = nul ? (const char *)nul + 1 : "";
    size_t ranks_len = nul ? size - meta_len - 1 : 0;
    // Copies of exactly their length, so that ASan sees a read past either end.
    char *meta = malloc(meta_len ? meta_len : 1), *rk = malloc(ranks_len ? ranks_len : 1);
    memcpy(meta, data, meta_len);
    memcpy(rk, ranks, ranks_len);
    Tokenizer *tok = tokenizer_parse(meta, meta_len, "tokenizer.json", rk, ranks_len, "tokenizer.tiktoken");
    if (!tok) {
        fuzz_expect_message();
    } else {
        FUZZ_CHECK(tok->vocab_size == tok->n_ranks + TOKENIZER_N_SPECIAL && tok->bos_id == tok->n_ranks &&
                       tok->vocab_size <= 65536,
                   "vocab %d, ranks %d, bos %d", tok->vocab_size, tok->n_ranks, tok->bos_id);
        Encoder *enc = encoder_new(tok);
        static const char text[] = "Hello world, it's 2024!\n\tNaïve café 東京 ... ok";
        round_trip(tok, enc, (const uint8_t *)text, sizeof text - 1);
        round_trip(tok, enc, data, size < 512 ? size : 512);
        encoder_free(enc);
        tokenizer_free(tok);
    }
    free(meta);
    free(rk);
    return 0;
}
