// planner/scaling.h — the loss model: val_bpb as a function of the model's scaling parameters N,
// the tokens trained D and the unique tokens U they were drawn from,
//
//     L(N, D, U) = E + A / N^alpha + B / D'^beta
//     D' = D                                           when D <= U (no token seen twice)
//     D' = U + U * R* * (1 - exp(-R / R*)),  R = D/U - 1   when D > U
//
// Chinchilla's form (Hoffmann et al. 2022) with the effective data of Muennighoff et al. 2023
// ("Scaling Data-Constrained Language Models"): the R-th repetition of the data is worth less
// than new tokens, and repetitions beyond ~R* are worth almost nothing; D' never exceeds
// U * (1 + R*). R* is fitted when some points repeat their data (D > U); without such points it
// cannot be identified, and the fit keeps the paper's R* = 15.4 (and says so).
//
// The fit is a variable projection: for fixed (alpha, beta, R*) the law is linear in (E, A, B),
// solved exactly by least squares with E, A, B >= 0 (the best of the feasible active sets); the
// exponents and R* are searched on a grid that shrinks around the best. Uncertainty is a
// bootstrap over the points (resampled with replacement, refit): a prediction's spread at any
// (N, D, U) is the spread of the resampled laws there, which widens where the points did not reach.
#pragma once
#include <stddef.h>

#define SCALING_RSTAR_PRIOR 15.4  // Muennighoff et al.'s fitted R*_D

typedef struct {
    double N, D, U, L;  // scaling parameters, tokens trained, unique tokens they came from (0: unlimited), val_bpb
    double P;           // all parameters, embeddings included (0: unknown; the domain check then uses N)
} ScalingPoint;

// The law's domain. A run that reads its data more than once while holding fewer than
// SCALING_MIN_UNIQUE_PER_PARAM unique tokens per parameter memorises it: its val_bpb rises with
// training, far above the same model's on fresh data (docs/planning.md has the measurements),
// which no D' of this monotone law can represent. The count is of all parameters, not N: the
// token and value embeddings are lookup tables that memorise too, and at this vocabulary they
// are most of a small model. Such runs are left out of the fit, and such candidates are not
// ranked by the law.
#define SCALING_MIN_UNIQUE_PER_PARAM 1.0
// 1 when a run of P parameters training D tokens drawn from U unique ones is in the domain above
// (U <= 0: unlimited data, always).
int scaling_in_domain(double P, double D, double U);
// Reorder p[0..n): the points in the domain first, in their order, then the others (in theirs);
// returns how many are outside.
int scaling_split_domain(ScalingPoint *p, int n);

typedef struct {
    double E, A, alpha, B, beta, rstar;
} ScalingLaw;

#define SCALING_BOOT 100

typedef struct {
    ScalingLaw law;                 // the fit to all points
    int n_points;
    int rstar_fitted;               // 1: some points repeated their data and R* was fitted; 0: the prior
    double rms_resid;               // root-mean-square residual (bpb)
    int n_boot;                     // resamples kept (<= SCALING_BOOT; degenerate ones are skipped)
    ScalingLaw boot[SCALING_BOOT];  // the laws of the resamples
} ScalingFit;

// D' above (U <= 0: unlimited data, D' = D).
double scaling_effective_data(double D, double U, double rstar);
double scaling_eval(const ScalingLaw *l, double N, double D, double U);

// A mixture of sources (--mix): D tokens drawn w_s D from source s of U_s unique tokens, each
// source repeated on its own and each token of s worth (1 - delta_s) of one of the validation
// set's own kind of text:
//     D' = max(1, sum over s of (1 - delta_s) D'(w_s D, U_s)).
// delta_s, the source's discount, prices how far its text is from the validation set's: 0 for
// the training corpus (the law is fitted on it), measured for other sources by `frontier plan
// --worth` (planner/worth.h); above 1 a source does harm beyond adding nothing. One source of
// weight 1 and discount 0 is the law above. The shares are what the trainer draws by (they add
// up to 1).
#define SCALING_MAX_SOURCES 16
typedef struct {
    int n;                              // sources (>= 1)
    double w[SCALING_MAX_SOURCES];      // shares of the tokens trained
    double U[SCALING_MAX_SOURCES];      // unique tokens of each (<= 0: unlimited)
    double discount[SCALING_MAX_SOURCES];     // delta_s (0: worth the corpus's own tokens)
    double discount_se[SCALING_MAX_SOURCES];  // its standard error (0: exact; the planner adds it to a prediction's spread)
} ScalingData;
double scaling_effective_mix(double D, const ScalingData *d, double rstar);
double scaling_eval_mix(const ScalingLaw *l, double N, double D, const ScalingData *d);

// Fit n >= 6 points (N, D > 0, spanning at least 2 distinct N and 2 distinct D). seed: the
// bootstrap's. 0, or -1 + err.
int scaling_fit(const ScalingPoint *p, int n, unsigned long long seed, ScalingFit *fit);

// The prediction at (N, D, U) and its bootstrap standard deviation (NaN with fewer than 2 resamples).
void scaling_predict(const ScalingFit *fit, double N, double D, double U, double *mean, double *sd);
// The same for D drawn from a mixture.
void scaling_predict_mix(const ScalingFit *fit, double N, double D, const ScalingData *d, double *mean, double *sd);

// The fit as JSON (law, counts, residual, the bootstrap laws) and back: one writer and reader of
// scaling.json. to_json returns a cJSON* (caller deletes); from_json: 0 or -1 + err naming `what`.
struct cJSON;
struct cJSON *scaling_fit_to_json(const ScalingFit *fit);
int scaling_fit_from_json(const struct cJSON *j, const char *what, ScalingFit *fit);
