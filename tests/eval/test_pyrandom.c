// tests/eval/test_pyrandom.c — the CPython `random` port against CPython itself.
//
// tests/fixtures/pyrandom_cases.json holds what CPython 3.11 returned (generator:
// tests/fixtures/gen_pyrandom.py): raw MT outputs, random(), getrandbits(k), randrange(n),
// shuffles of range(n), sample(range(n) + 1000, k) on both of sample()'s paths and at their
// boundaries, the CORE few-shot draws, and the pool/set threshold of sample(). Every number must
// match, and so must the next getrandbits(32) after each shuffle/sample (same state consumption).
#include "test_util.h"

#include <cjson/cJSON.h>

#include "eval/pyrandom.h"

static cJSON *load_cases(void) {
    size_t len;
    char *text = read_file("tests/fixtures/pyrandom_cases.json", &len);
    assert_non_null(text);
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    assert_non_null(root);
    return root;
}

static const cJSON *get(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) {
        print_error("fixture lacks \"%s\"\n", key);
        fail();
    }
    return v;
}

// A JSON value written as a decimal string (integers that may exceed 2**53).
static uint64_t get_u64s(const cJSON *o, const char *key) {
    const cJSON *v = get(o, key);
    assert_true(cJSON_IsString(v));
    return strtoull(v->valuestring, NULL, 10);
}

static uint64_t u64s(const cJSON *v) {
    assert_true(cJSON_IsString(v));
    return strtoull(v->valuestring, NULL, 10);
}

static int64_t get_int(const cJSON *o, const char *key) { return (int64_t)get(o, key)->valuedouble; }

// Compare x[0..n) with a gen_pyrandom.py digest: length, sum(i * v) mod 2**61-1, head and tail.
static int digest_matches(const int64_t *x, size_t n, const cJSON *d, const char *what) {
    if ((size_t)get_int(d, "len") != n) {
        print_error("%s: length %zu, python says %lld\n", what, n, (long long)get_int(d, "len"));
        return 0;
    }
    const uint64_t mod = (1ULL << 61) - 1;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) sum = (uint64_t)(((unsigned __int128)i * (uint64_t)x[i] + sum) % mod);
    if (sum != get_u64s(d, "checksum")) {
        print_error("%s: checksum %llu, python says %s\n", what, (unsigned long long)sum,
                    get(d, "checksum")->valuestring);
        return 0;
    }
    const cJSON *head = get(d, "head"), *tail = get(d, "tail");
    size_t nh = (size_t)cJSON_GetArraySize(head), nt = (size_t)cJSON_GetArraySize(tail);
    assert_true(nh <= n && nt <= n);  // head and tail may overlap for short lists
    for (size_t i = 0; i < nh; i++)
        if (x[i] != (int64_t)cJSON_GetArrayItem(head, (int)i)->valuedouble) {
            print_error("%s: [%zu] = %lld, python says %.0f\n", what, i, (long long)x[i],
                        cJSON_GetArrayItem(head, (int)i)->valuedouble);
            return 0;
        }
    for (size_t i = 0; i < nt; i++)
        if (x[n - nt + i] != (int64_t)cJSON_GetArrayItem(tail, (int)i)->valuedouble) {
            print_error("%s: [%zu] = %lld, python says %.0f\n", what, n - nt + i, (long long)x[n - nt + i],
                        cJSON_GetArrayItem(tail, (int)i)->valuedouble);
            return 0;
        }
    return 1;
}

static void test_fixture_is_cpython_311(void **state) {
    (void)state;
    cJSON *root = load_cases();
    const char *v = get(root, "python")->valuestring;
    assert_true(strncmp(v, "3.11.", 5) == 0);
    cJSON_Delete(root);
}

static void test_per_seed_streams(void **state) {
    (void)state;
    cJSON *root = load_cases();
    const cJSON *c;
    int n_seeds = 0, n_checks = 0, bad = 0;
    cJSON_ArrayForEach(c, get(root, "seeds")) {
        uint64_t seed = get_u64s(c, "seed");
        PyRandom r;
        pyrandom_seed(&r, seed);
        const cJSON *v;
        int i = 0;
        cJSON_ArrayForEach(v, get(c, "u32")) {
            uint32_t got = pyrandom_u32(&r);
            if (got != (uint32_t)v->valuedouble) {
                print_error("seed %llu: u32[%d] = %u, python says %.0f\n", (unsigned long long)seed, i, got,
                            v->valuedouble);
                bad++;
            }
            i++, n_checks++;
        }
        i = 0;
        cJSON_ArrayForEach(v, get(c, "random")) {
            double want = strtod(v->valuestring, NULL), got = pyrandom_random(&r);
            if (got != want) {
                print_error("seed %llu: random[%d] = %.17g, python says %s\n", (unsigned long long)seed, i, got,
                            v->valuestring);
                bad++;
            }
            i++, n_checks++;
        }
        cJSON_ArrayForEach(v, get(c, "getrandbits")) {
            int k = (int)cJSON_GetArrayItem(v, 0)->valuedouble;
            uint64_t want = u64s(cJSON_GetArrayItem(v, 1)), got = pyrandom_getrandbits(&r, k);
            if (got != want) {
                print_error("seed %llu: getrandbits(%d) = %llu, python says %llu\n", (unsigned long long)seed, k,
                            (unsigned long long)got, (unsigned long long)want);
                bad++;
            }
            n_checks++;
        }
        cJSON_ArrayForEach(v, get(c, "randrange")) {
            uint64_t n = u64s(cJSON_GetArrayItem(v, 0)), want = u64s(cJSON_GetArrayItem(v, 1));
            uint64_t got = pyrandom_randbelow(&r, n);
            if (got != want) {
                print_error("seed %llu: randrange(%llu) = %llu, python says %llu\n", (unsigned long long)seed,
                            (unsigned long long)n, (unsigned long long)got, (unsigned long long)want);
                bad++;
            }
            n_checks++;
        }
        cJSON_ArrayForEach(v, get(c, "shuffle")) {
            size_t n = (size_t)get_int(v, "n");
            int64_t *x = malloc((n ? n : 1) * sizeof *x);
            for (size_t j = 0; j < n; j++) x[j] = (int64_t)j;
            pyrandom_shuffle(&r, x, n);
            char what[96];
            snprintf(what, sizeof what, "seed %llu: shuffle(range(%zu))", (unsigned long long)seed, n);
            if (!digest_matches(x, n, get(v, "digest"), what)) bad++;
            uint32_t after = pyrandom_u32(&r);
            if (after != (uint32_t)get(v, "after")->valuedouble) {
                print_error("%s: next getrandbits(32) = %u, python says %.0f\n", what, after,
                            get(v, "after")->valuedouble);
                bad++;
            }
            free(x);
            n_checks++;
        }
        n_seeds++;
    }
    assert_int_equal(n_seeds, 8);
    assert_true(n_checks > 8 * 40);
    assert_int_equal(bad, 0);
    cJSON_Delete(root);
}

static void test_samples(void **state) {
    (void)state;
    cJSON *root = load_cases();
    const cJSON *c;
    int n_cases = 0, n_pool = 0, n_set = 0, bad = 0;
    cJSON_ArrayForEach(c, get(root, "samples")) {
        uint64_t seed = get_u64s(c, "seed");
        size_t n = (size_t)get_int(c, "n"), k = (size_t)get_int(c, "k");
        int pool = cJSON_IsTrue(get(c, "pool"));
        int my_pool = n <= pyrandom_sample_setsize(k);
        char what[96];
        snprintf(what, sizeof what, "seed %llu: sample(range(%zu), %zu)", (unsigned long long)seed, n, k);
        if (pool != my_pool) {
            print_error("%s: pool path %d, python says %d\n", what, my_pool, pool);
            bad++;
        }
        n_pool += pool, n_set += !pool;
        int64_t *popu = malloc((n ? n : 1) * sizeof *popu), *out = malloc((k ? k : 1) * sizeof *out);
        for (size_t j = 0; j < n; j++) popu[j] = 1000 + (int64_t)j;
        PyRandom r;
        pyrandom_seed(&r, seed);
        assert_int_equal(pyrandom_sample(&r, popu, n, k, out), 0);
        for (size_t j = 0; j < n; j++) assert_int_equal(popu[j], 1000 + (int64_t)j);  // untouched
        if (!digest_matches(out, k, get(c, "digest"), what)) bad++;
        uint32_t after = pyrandom_u32(&r);
        if (after != (uint32_t)get(c, "after")->valuedouble) {
            print_error("%s: next getrandbits(32) = %u, python says %.0f\n", what, after,
                        get(c, "after")->valuedouble);
            bad++;
        }
        free(popu);
        free(out);
        n_cases++;
    }
    assert_true(n_cases >= 100);
    assert_true(n_pool >= 30 && n_set >= 30);  // both algorithms are exercised
    assert_int_equal(bad, 0);
    cJSON_Delete(root);
}

// nanochat's CORE few-shot draw: random.Random(1234 + idx).sample([i for i in range(50) if i != idx], 5).
static void test_core_fewshot(void **state) {
    (void)state;
    cJSON *root = load_cases();
    const cJSON *c;
    int n_cases = 0;
    cJSON_ArrayForEach(c, get(root, "core")) {
        int64_t idx = get_int(c, "idx"), others[49], out[5];
        size_t m = 0;
        for (int64_t i = 0; i < 50; i++)
            if (i != idx) others[m++] = i;
        PyRandom r;
        pyrandom_seed(&r, 1234 + (uint64_t)idx);
        assert_int_equal(pyrandom_sample(&r, others, m, 5, out), 0);
        const cJSON *want = get(c, "out");
        assert_int_equal(cJSON_GetArraySize(want), 5);
        for (int i = 0; i < 5; i++) {
            if (out[i] != (int64_t)cJSON_GetArrayItem(want, i)->valuedouble)
                print_error("core idx %lld: out[%d] = %lld, python says %.0f\n", (long long)idx, i,
                            (long long)out[i], cJSON_GetArrayItem(want, i)->valuedouble);
            assert_int_equal(out[i], (int64_t)cJSON_GetArrayItem(want, i)->valuedouble);
        }
        n_cases++;
    }
    assert_int_equal(n_cases, 20);
    cJSON_Delete(root);
}

// sample()'s pool/set threshold for every k in 0..100000 (given as the k where it changes).
static void test_setsize_threshold(void **state) {
    (void)state;
    cJSON *root = load_cases();
    const cJSON *steps = get(root, "setsize_steps");
    int n_steps = cJSON_GetArraySize(steps);
    assert_true(n_steps >= 8);
    for (int s = 0; s < n_steps; s++) {
        const cJSON *st = cJSON_GetArrayItem(steps, s);
        size_t k0 = (size_t)cJSON_GetArrayItem(st, 0)->valuedouble;
        uint64_t want = (uint64_t)cJSON_GetArrayItem(st, 1)->valuedouble;
        size_t k1 = s + 1 < n_steps ? (size_t)cJSON_GetArrayItem(cJSON_GetArrayItem(steps, s + 1), 0)->valuedouble
                                    : 100001;
        for (size_t k = k0; k < k1; k++) {
            if (pyrandom_sample_setsize(k) != want)
                print_error("setsize(%zu) = %llu, python says %llu\n", k,
                            (unsigned long long)pyrandom_sample_setsize(k), (unsigned long long)want);
            assert_true(pyrandom_sample_setsize(k) == want);
        }
    }
    cJSON_Delete(root);
}

static void test_errors_and_edges(void **state) {
    (void)state;
    PyRandom r, r0;
    pyrandom_seed(&r, 7);
    r0 = r;
    int64_t pop[3] = {1, 2, 3}, out[4];
    err_clear();
    assert_int_equal(pyrandom_sample(&r, pop, 3, 4, out), -1);
    assert_error_contains("larger than population");
    assert_memory_equal(&r, &r0, sizeof r);  // a failed sample consumes nothing
    assert_int_equal(pyrandom_getrandbits(&r, 0), 0);
    assert_int_equal(pyrandom_randbelow(&r, 0), 0);
    assert_int_equal(pyrandom_randbelow(&r, 1), 0);  // getrandbits(1) until 0: consumes state
    pyrandom_shuffle(&r, NULL, 0);
    assert_int_equal(pyrandom_sample(&r, pop, 3, 0, out), 0);
    // random() stays in [0, 1)
    for (int i = 0; i < 10000; i++) {
        double d = pyrandom_random(&r);
        assert_true(d >= 0.0 && d < 1.0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_is_cpython_311), cmocka_unit_test(test_per_seed_streams),
        cmocka_unit_test(test_samples),                cmocka_unit_test(test_core_fewshot),
        cmocka_unit_test(test_setsize_threshold),      cmocka_unit_test(test_errors_and_edges),
    };
    return cmocka_run_group_tests_name("eval/pyrandom", tests, NULL, NULL);
}
