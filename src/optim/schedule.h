// optim/schedule.h — the training schedules (as nanochat's): learning-rate multiplier, Muon momentum
// and Muon weight decay, each a pure function of the step count and/or the progress.
//
// `step` counts optimizer steps from 0 (the step about to be taken). `progress` is the fraction
// of the budget used so far, p = timed_train_seconds / budget; values outside [0, 1] are clamped.
#pragma once

// Learning-rate multiplier (time-based):
//   step < warmup_steps            (step + 1) / warmup_steps          linear warmup, by steps
//   p >= 1 - warmdown_frac         final + (1 - final)·(1 - p)/w      linear warmdown, by progress
//   otherwise                      1                                   flat
// Warmup takes precedence over warmdown (as in autoresearch). At p = 1 the multiplier is
// final_lr_frac. warmup_steps <= 0 disables warmup; warmdown_frac <= 0 disables warmdown;
// warmdown_frac is meant to lie in [0, 1].
// Defaults: warmup_steps 10, warmdown_frac 0.5, final_lr_frac 0.05.
float lr_multiplier(int step, double progress, int warmup_steps, double warmdown_frac, double final_lr_frac);

// Muon momentum: linear from `start` at step 0 to `end` at step `ramp_steps`, then `end`
// (nanochat: frac = min(step/ramp, 1); (1 - frac)·start + frac·end). ramp_steps <= 0: `end`.
// Defaults: 0.85 → 0.95 over 300 steps.
float muon_momentum(int step, int ramp_steps, float start, float end);

// Muon weight decay: `wd` decaying linearly to 0 over the budget, wd·(1 - p). Default wd 0.2.
float muon_weight_decay(double progress, float wd);
