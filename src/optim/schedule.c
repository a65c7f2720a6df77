// optim/schedule.c — learning-rate, momentum and weight-decay schedules (see schedule.h).
#include "optim/schedule.h"

static double clamp01(double p) { return p < 0.0 ? 0.0 : p > 1.0 ? 1.0 : p; }

float lr_multiplier(int step, double progress, int warmup_steps, double warmdown_frac, double final_lr_frac) {
    if (warmup_steps > 0 && step < warmup_steps) return (float)((double)(step + 1) / warmup_steps);
    double p = clamp01(progress);
    if (warmdown_frac > 0.0 && p >= 1.0 - warmdown_frac) {
        return (float)(final_lr_frac + (1.0 - final_lr_frac) * (1.0 - p) / warmdown_frac);
    }
    return 1.0f;
}

float muon_momentum(int step, int ramp_steps, float start, float end) {
    if (ramp_steps <= 0 || step >= ramp_steps) return end;
    double frac = step < 0 ? 0.0 : (double)step / ramp_steps;
    return (float)((1.0 - frac) * start + frac * end);
}

float muon_weight_decay(double progress, float wd) { return (float)(wd * (1.0 - clamp01(progress))); }
