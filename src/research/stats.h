// research/stats.h — the statistics of a paired, sequential keep rule: is a candidate better
// than the incumbent, judged on the same seeds, with as few runs as the evidence allows?
//
// A candidate and the incumbent are trained on the same seeds (same data order, same init where
// shapes allow), so what a seed does to both cancels in their difference d_i = candidate_i -
// incumbent_i (negative = the candidate is better). After each new seed n = 1..K (K = the cap) the
// rule looks at z_n = -mean(d_1..n) / (s / sqrt(n)), s the paired differences' standard deviation
// pooled over the whole research (StatsPool), and
//   n = 1:   discard when clearly worse (z_1 < -STATS_CLEARLY_WORSE), else run a second seed: a
//            single paired run is never kept;
//   n >= 2:  keep when z_n > c: c is the one-sided Pocock boundary for looks 2..K at level alpha
//            (stats_boundary: P(any z_n > c) = alpha when there is no effect and s is exact),
//            widened to Student's t at the pool's degrees of freedom; discard when no better on
//            average (mean >= 0), clearly worse, or at the cap; else run the next seed.
// The discard rules only stop early, so they lower the false-keep rate, never raise it.
//
// The spread s. Every candidate is paired with the same incumbent runs (seeds 1, 2, ... of the
// incumbent), so the incumbent's own luck on those seeds sits in every candidate's differences
// alike: the spread of d within one candidate sees it only through the incumbent's 2-3 seeds,
// and a pool of those spreads keeps the incumbent's few degrees of freedom however many
// candidates it holds (simulated: 7% false keeps at level 5% without pairing correlation). Across
// candidates the incumbent's part is a constant, so the spread of delta_j = d_j1 - d_j2 over the
// candidates j of one incumbent estimates var(c_1 - c_2) = 2 var(c) = var(d) when the incumbent's
// noise is a candidate's (it is just another config): that is the pool (stats_pool_add_candidate),
// with many degrees of freedom, and z is then standard normal with the incumbent's luck included.
// Only the first two seeds enter it: whether a candidate reaches seed 3 depends on them (later
// seeds are a selected sample, too alike), and the candidates that stop at seed 1 are almost only
// those far worse (the 0.6% tail beyond 2.5 s.e. when there is no effect). A keep starts a new
// incumbent and so a new group (stats_pool_new_incumbent).
#pragma once

// Standard normal CDF and its inverse.
double stats_norm_cdf(double z);
double stats_norm_quantile(double p);  // p in (0, 1)
// Student's t with df > 0 degrees of freedom: CDF and its inverse (df = INFINITY: the normal).
double stats_t_cdf(double t, double df);
double stats_t_quantile(double p, double df);

// The one-sided Pocock constant for looks after observations first..last of a random walk, at
// level alpha (known variance): P(max over n in [first, last] of S_n / sqrt(n) > c) = alpha. By a
// deterministic Monte Carlo of 2^18 walks (error in alpha about 4e-4).
double stats_boundary(double alpha, int first, int last);

// z below minus this: clearly worse, stop (a candidate that breaks training stops after one seed).
#define STATS_CLEARLY_WORSE 2.5

// Pooled variance: groups of values, each group's own mean taken out (a group's level, such as an
// incumbent's luck or a candidate's effect, does not inflate it), the squared deviations summed
// over the groups with their degrees of freedom. Closed groups are summed in ss/df; the open
// group (the current incumbent's candidates) is a running mean.
typedef struct {
    double ss;         // Σ over closed groups of scale · Σ (x - group mean)²
    double df;         // Σ over closed groups of (n - 1)
    long open_n;       // values in the open group
    double open_mean;  // their mean
    double open_m2;    // Σ (x - open_mean)² (Welford)
} StatsPool;

// Adds a closed group of n values. scale multiplies its squared deviations: 1 for paired
// differences, 2 for single runs of one config (var(a - b) = 2 var(a) when a and b are
// independent: the bound pairing can only improve on; the baseline's seeds go in this way).
void stats_pool_add(StatsPool *p, const double *x, int n, double scale);
// A candidate's n paired differences: d[0] - d[1] joins the open group when n >= 2.
void stats_pool_add_candidate(StatsPool *p, const double *d, int n);
// A new incumbent: the open group closes.
void stats_pool_new_incumbent(StatsPool *p);
// sqrt(Σ ss / Σ df) over every group, the open one included (NaN while df is 0), and that df.
double stats_pool_sd(const StatsPool *p);
double stats_pool_df(const StatsPool *p);

typedef enum { SEQ_CONTINUE, SEQ_KEEP, SEQ_DISCARD } SeqDecision;

typedef struct {
    double alpha;      // one-sided level of the whole sequence (default 0.05)
    int max_seeds;     // K, the cap on seeds per candidate (>= 2)
    double boundary;   // stats_boundary(alpha, 2, max_seeds), set by stats_seq_init
} SeqTest;

// max_seeds below 2 is raised to 2 (a keep needs two seeds).
void stats_seq_init(SeqTest *t, double alpha, int max_seeds);

// What seeds d[0..n) (n >= 1) say, given the pooled sd and its degrees of freedom. Fills (any may
// be NULL) z, the nominal one-sided p of this look, and the half-width of a one-sided-level
// confidence interval on mean(d) (mean ± half at 1 - 2 alpha two-sided).
SeqDecision stats_seq_decide(const SeqTest *t, const double *d, int n, double sd, double df, double *z,
                             double *p, double *half);
