// research/stats.c — distributions, the Pocock boundary and the sequential paired rule (see stats.h).
#include "research/stats.h"

#include <math.h>

#include "util/rng.h"

double stats_norm_cdf(double z) { return 0.5 * erfc(-z / sqrt(2.0)); }

double stats_norm_quantile(double p) {
    // bisection on the CDF: 200 halvings of [-40, 40] reach double precision
    double lo = -40, hi = 40;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (stats_norm_cdf(mid) < p) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

// The continued fraction of the regularised incomplete beta function (modified Lentz).
static double beta_cf(double a, double b, double x) {
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 500; m++) {
        double m2 = 2.0 * m, num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
        d = 1 + num * d;
        c = 1 + num / c;
        d = 1 / (fabs(d) < tiny ? tiny : d);
        c = fabs(c) < tiny ? tiny : c;
        h *= d * c;
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
        d = 1 + num * d;
        c = 1 + num / c;
        d = 1 / (fabs(d) < tiny ? tiny : d);
        c = fabs(c) < tiny ? tiny : c;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15) break;
    }
    return h;
}

// I_x(a, b), the regularised incomplete beta function.
static double inc_beta(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
    return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double stats_t_cdf(double t, double df) {
    if (isinf(df)) return stats_norm_cdf(t);
    double tail = 0.5 * inc_beta(df / 2, 0.5, df / (df + t * t));  // P(T > |t|)
    return t >= 0 ? 1 - tail : tail;
}

double stats_t_quantile(double p, double df) {
    double lo = -1e6, hi = 1e6;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (stats_t_cdf(mid, df) < p) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

double stats_boundary(double alpha, int first, int last) {
    enum { PATHS = 1 << 18 };
    static double cached_alpha = -1, cached_c;
    static int cached_first, cached_last;
    if (alpha == cached_alpha && first == cached_first && last == cached_last) return cached_c;
    // each path's largest standardised partial sum over the looks; c = their (1 - alpha) quantile,
    // found by bisection on the count above it
    static float maxz[PATHS];
    Rng r;
    rng_seed(&r, 20261204);
    for (int i = 0; i < PATHS; i++) {
        double s = 0, m = -INFINITY;
        for (int n = 1; n <= last; n++) {
            s += rng_normal(&r);
            double z = s / sqrt(n);
            if (n >= first && z > m) m = z;
        }
        maxz[i] = (float)m;
    }
    double lo = 0, hi = 10;
    for (int it = 0; it < 60; it++) {
        double mid = 0.5 * (lo + hi);
        long above = 0;
        for (int i = 0; i < PATHS; i++) above += maxz[i] > mid;
        if ((double)above / PATHS > alpha) lo = mid;
        else hi = mid;
    }
    cached_alpha = alpha, cached_first = first, cached_last = last, cached_c = 0.5 * (lo + hi);
    return cached_c;
}

void stats_pool_add(StatsPool *p, const double *x, int n, double scale) {
    if (n < 2) return;
    double mean = 0, ss = 0;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
    p->ss += scale * ss;
    p->df += n - 1;
}

void stats_pool_add_candidate(StatsPool *p, const double *d, int n) {
    if (n < 2) return;
    double x = d[0] - d[1], delta = x - p->open_mean;
    p->open_n++;
    p->open_mean += delta / p->open_n;
    p->open_m2 += delta * (x - p->open_mean);
}

void stats_pool_new_incumbent(StatsPool *p) {
    if (p->open_n >= 2) p->ss += p->open_m2, p->df += p->open_n - 1;
    p->open_n = 0, p->open_mean = 0, p->open_m2 = 0;
}

double stats_pool_df(const StatsPool *p) { return p->df + (p->open_n >= 2 ? p->open_n - 1 : 0); }

double stats_pool_sd(const StatsPool *p) {
    double df = stats_pool_df(p);
    return df > 0 ? sqrt((p->ss + (p->open_n >= 2 ? p->open_m2 : 0)) / df) : NAN;
}

void stats_seq_init(SeqTest *t, double alpha, int max_seeds) {
    t->alpha = alpha;
    t->max_seeds = max_seeds < 2 ? 2 : max_seeds;
    t->boundary = stats_boundary(alpha, 2, t->max_seeds);
}

SeqDecision stats_seq_decide(const SeqTest *t, const double *d, int n, double sd, double df, double *z,
                             double *p, double *half) {
    double mean = 0;
    for (int i = 0; i < n; i++) mean += d[i];
    mean /= n;
    double se = sd / sqrt(n), zn = -mean / se;
    // the boundary in Student's t: the same tail probability at the pool's degrees of freedom
    double c = stats_t_quantile(stats_norm_cdf(t->boundary), df);
    if (z) *z = zn;
    if (p) *p = 1 - stats_t_cdf(zn, df);
    if (half) *half = stats_t_quantile(1 - t->alpha, df) * se;
    if (zn < -STATS_CLEARLY_WORSE) return SEQ_DISCARD;
    if (n == 1) return SEQ_CONTINUE;
    if (zn > c) return SEQ_KEEP;
    if (mean >= 0 || n >= t->max_seeds) return SEQ_DISCARD;
    return SEQ_CONTINUE;
}
