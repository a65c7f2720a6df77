// tests/research/test_stats.c — the paired sequential keep rule's statistics (research/stats.h):
// the distributions against published values, the Pocock boundary against its known properties,
// the pooled variance, and the rule itself over many simulated researches with known effects and
// known noise: the false-keep rate stays at or under the level set, and a true improvement of 2
// noise standard deviations is kept in at least 80% of candidates when seeds are shared as
// frontier shares them (the correlation measured in docs/training.md's ablation), and the rates
// are printed for independent seeds too.
#include "test_util.h"

#include <math.h>

#include "research/stats.h"
#include "util/rng.h"

static void test_distributions(void **state) {
    (void)state;
    assert_float_equal(stats_norm_cdf(1.959963984540054), 0.975, 1e-12);
    assert_float_equal(stats_norm_quantile(0.975), 1.959963984540054, 1e-9);
    assert_float_equal(stats_norm_quantile(0.05), -1.644853626951472, 1e-9);
    assert_float_equal(stats_t_cdf(1.0, 1.0), 0.75, 1e-12);  // Cauchy
    assert_float_equal(stats_t_cdf(-1.0, 1.0), 0.25, 1e-12);
    // quantiles from the standard t table
    assert_float_equal(stats_t_quantile(0.975, 5), 2.570581835636314, 1e-7);
    assert_float_equal(stats_t_quantile(0.95, 10), 1.812461122811676, 1e-7);
    assert_float_equal(stats_t_quantile(0.99, 2), 6.964556734283274, 1e-6);
    assert_float_equal(stats_t_quantile(0.9, 30), 1.310415025391416, 1e-7);
    assert_float_equal(stats_t_quantile(0.95, INFINITY), 1.644853626951472, 1e-9);
}

static void test_boundary(void **state) {
    (void)state;
    double prev = 0;
    for (int k = 1; k <= 8; k++) {
        double c = stats_boundary(0.05, 1, k);
        double bonferroni = stats_norm_quantile(1 - 0.05 / k);
        if (k == 1) assert_float_equal(c, 1.644853626951472, 0.01);  // one look: the plain z test
        assert_true(c > prev);                        // more looks, a higher bar
        assert_true(c <= bonferroni + 1e-3);          // but no higher than splitting alpha evenly
        prev = c;
    }
    // one-sided 0.025 at 5 looks is two-sided 0.05's Pocock constant, 2.413 (Pocock 1977)
    assert_float_equal(stats_boundary(0.025, 1, 5), 2.413, 0.02);
    // skipping the first look lowers the bar: fewer chances to cross
    assert_true(stats_boundary(0.05, 2, 6) < stats_boundary(0.05, 1, 6));
    assert_float_equal(stats_boundary(0.05, 3, 3), 1.644853626951472, 0.01);  // one look again
}

static void test_pool(void **state) {
    (void)state;
    StatsPool p = {0};
    assert_true(isnan(stats_pool_sd(&p)));
    double a[] = {1, 2, 3}, b[] = {10, 14};
    stats_pool_add(&p, a, 3, 1);  // ss 2, df 2
    stats_pool_add(&p, b, 2, 1);  // ss 8, df 1: its own mean (12) taken out
    double one[] = {5};
    stats_pool_add(&p, one, 1, 1);  // one value says nothing about spread
    assert_float_equal(p.ss, 10, 1e-12);
    assert_float_equal(stats_pool_df(&p), 3, 1e-12);
    assert_float_equal(stats_pool_sd(&p), sqrt(10.0 / 3), 1e-12);
    stats_pool_add(&p, a, 3, 2);
    assert_float_equal(p.ss, 14, 1e-12);
    // candidates: d1 - d2 = 1, 3, 5 under one incumbent (ss 8, df 2), then 10, 20 under the next
    // (ss 50, df 1); a candidate with one seed adds nothing
    StatsPool q = {0};
    double c1[] = {2, 1, 7}, c2[] = {3, 0}, c3[] = {5, 0}, c4[] = {-4};
    stats_pool_add_candidate(&q, c1, 3), stats_pool_add_candidate(&q, c2, 2), stats_pool_add_candidate(&q, c3, 2);
    stats_pool_add_candidate(&q, c4, 1);
    assert_float_equal(stats_pool_df(&q), 2, 1e-12);
    assert_float_equal(stats_pool_sd(&q), 2, 1e-12);  // sqrt(8 / 2)
    stats_pool_new_incumbent(&q);
    double c5[] = {10, 0}, c6[] = {20, 0};
    stats_pool_add_candidate(&q, c5, 2);
    assert_float_equal(stats_pool_df(&q), 2, 1e-12);  // an open group of one: no df yet
    stats_pool_add_candidate(&q, c6, 2);
    assert_float_equal(stats_pool_df(&q), 3, 1e-12);
    assert_float_equal(stats_pool_sd(&q), sqrt(58.0 / 3), 1e-12);
}

static void test_decide(void **state) {
    (void)state;
    SeqTest t;
    stats_seq_init(&t, 0.05, 4);
    double better[] = {-0.05, -0.06}, worse[] = {0.05}, flat[] = {-0.001, 0.003}, small[] = {-0.01};
    double z, p, half;
    assert_int_equal(stats_seq_decide(&t, better, 2, 0.01, 20, &z, &p, &half), SEQ_KEEP);
    assert_true(z > 7 && p < 1e-6 && half > 0);
    assert_int_equal(stats_seq_decide(&t, better, 1, 0.01, 20, NULL, NULL, NULL), SEQ_CONTINUE);  // one seed never keeps
    assert_int_equal(stats_seq_decide(&t, worse, 1, 0.01, 20, NULL, NULL, NULL), SEQ_DISCARD);  // clearly worse
    double bit_worse[] = {0.02};
    assert_int_equal(stats_seq_decide(&t, bit_worse, 1, 0.01, 20, NULL, NULL, NULL), SEQ_CONTINUE);  // 2 s.e.: not yet
    assert_int_equal(stats_seq_decide(&t, flat, 2, 0.01, 20, NULL, NULL, NULL), SEQ_DISCARD);   // no better on average
    assert_int_equal(stats_seq_decide(&t, small, 1, 0.01, 20, NULL, NULL, NULL), SEQ_CONTINUE);  // promising: another seed
    double capped[] = {-0.01, -0.01, -0.01, -0.005};
    assert_int_equal(stats_seq_decide(&t, capped, 4, 0.05, 20, NULL, NULL, NULL), SEQ_DISCARD);  // the cap
    // few degrees of freedom raise the bar: the same evidence keeps with a well-known sd only
    double d[] = {-0.02, -0.02};
    assert_int_equal(stats_seq_decide(&t, d, 2, 0.01, 2, NULL, NULL, NULL), SEQ_CONTINUE);
    assert_int_equal(stats_seq_decide(&t, d, 2, 0.01, 1000, NULL, NULL, NULL), SEQ_KEEP);
}

// Simulated researches: a baseline of 3 seeds, then 20 candidates judged against the incumbent
// seed by seed, every other one with a true effect `effect` (the rest none); a kept candidate
// becomes the incumbent (its runs on the seeds it ran are the new incumbent's, later seeds are
// run for it when needed). A run's val_bpb, relative to its config's true value, is
// sigma·(sqrt(rho)·u_seed + sqrt(1 - rho)·e_run): u_seed is what the seed does to every config
// (data order, init), e_run the rest. Returns the fraction kept of the candidates with the effect
// and the seeds they used.
static double simulate(double rho, double effect, double alpha, int cap, int researches, double *seeds_per) {
    SeqTest t;
    stats_seq_init(&t, alpha, cap);
    Rng r;
    rng_seed(&r, 1234 + (uint64_t)(rho * 100) + (uint64_t)(effect * 10));
    const double sigma = 1, a = sqrt(rho), b = sqrt(1 - rho);
    long kept = 0, tried = 0, seeds = 0;
    for (int s = 0; s < researches; s++) {
        double u[16], inc[16], cand[16];
        for (int i = 0; i < cap; i++) u[i] = rng_normal(&r), inc[i] = sigma * (a * u[i] + b * rng_normal(&r));
        StatsPool pool = {0};
        stats_pool_add(&pool, inc, 3, 2);  // the baseline's 3 seeds: var(a - b) <= 2 var(a)
        for (int c = 0; c < 20; c++) {
            double eff = c % 2 ? effect : 0, d[16];
            SeqDecision dec = SEQ_CONTINUE;
            int n = 0;
            while (dec == SEQ_CONTINUE) {
                cand[n] = sigma * (a * u[n] + b * rng_normal(&r));  // relative to its true value
                d[n] = eff + cand[n] - inc[n];
                n++;
                dec = stats_seq_decide(&t, d, n, stats_pool_sd(&pool), stats_pool_df(&pool), NULL, NULL, NULL);
            }
            stats_pool_add_candidate(&pool, d, n);
            if (c % 2) tried++, kept += dec == SEQ_KEEP, seeds += n;
            if (dec == SEQ_KEEP) {
                for (int i = 0; i < cap; i++) inc[i] = i < n ? cand[i] : sigma * (a * u[i] + b * rng_normal(&r));
                stats_pool_new_incumbent(&pool);
            }
        }
    }
    *seeds_per = (double)seeds / tried;
    return (double)kept / tried;
}

static void test_rates(void **state) {
    (void)state;
    const double alpha = 0.05;
    const int cap = 6, R = 1500;  // 15,000 candidates of each kind per setting
    double rhos[] = {0.8, 0.0};
    for (int i = 0; i < 2; i++) {
        double rho = rhos[i], s_null, s_true;
        double false_keep = simulate(rho, 0.0, alpha, cap, R, &s_null);
        double power = simulate(rho, -2.0, alpha, cap, R, &s_true);
        print_message("rho %.1f: false keeps %.4f (level %.2f), 2-sigma improvement kept %.3f; seeds per "
                      "candidate %.2f (no effect) / %.2f (effect), cap %d\n",
                      rho, false_keep, alpha, power, s_null, s_true, cap);
        double mc = 3 * sqrt(alpha * (1 - alpha) / (R * 10.0));  // 3 Monte Carlo standard errors
        assert_true(false_keep <= alpha + mc);
        if (rho > 0) assert_true(power >= 0.80);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distributions), cmocka_unit_test(test_boundary), cmocka_unit_test(test_pool),
        cmocka_unit_test(test_decide), cmocka_unit_test(test_rates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
