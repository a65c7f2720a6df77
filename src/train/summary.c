// train/summary.c — summary.json of a run (see summary.h).
#include "train/summary.h"

#include <cjson/cJSON.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"
#include "git_commit.h"  // FRONTIER_GIT_COMMIT: the Makefile writes it into the build folder
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/peak.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "profile/profile.h"
#include "util/fileio.h"
#include "util/json_file.h"
#include "util/mem.h"


// The machine peaks of train.h (MFU's denominators, the roofline's slope).
double machine_peak_flops(void) { return machine_peak_fp32_flops(NULL); }

double machine_peak_bandwidth(void) {
    MachinePeak p;
    return machine_peak_get(NULL, &p) == 0 && p.triad_bw > 0 ? p.triad_bw : 29e9;
}

// bf16 training is held to the peak of the engine its GEMMs run on: AMX's tiles when the active
// table's matmul_nt is AMX's (FRONTIER_KERNELS=amx on an AMX CPU), else AVX512_BF16's vdpbf16ps.
double machine_peak_flops_for(KernelPrecision precision) {
    MachinePeak p;
    if (precision != KP_BF16 || machine_peak_get(NULL, &p) != 0) return machine_peak_flops();
    int amx = !strcmp(kernels_op_source(kernels_for(KP_BF16), kernel_op_index("matmul_nt")), "amx_bf16");
    if (amx && p.amx_all > 0) return p.amx_all;
    return p.bf16_all > 0 ? p.bf16_all : machine_peak_flops();
}

char *train_git_commit(void) { return xstrdup(FRONTIER_GIT_COMMIT); }

int train_write_summary(const TrainConfig *cfg, const TrainResult *res, const char *tokenizer_id) {
    cJSON *s = cJSON_CreateObject();
    if (res->stopped_by != STOP_AFTER && res->stopped_by != STOP_SIGNAL) {
        cJSON_AddNumberToObject(s, "val_bpb", res->val_bpb);
        if (res->val_bpb_raw == res->val_bpb_raw) cJSON_AddNumberToObject(s, "val_bpb_raw", res->val_bpb_raw);
        cJSON_AddNumberToObject(s, "eval_tokens", (double)res->eval_tokens);
        cJSON_AddNumberToObject(s, "eval_positions", (double)res->eval_positions);
        cJSON_AddNumberToObject(s, "eval_T", res->eval_T);
    }
    cJSON_AddNumberToObject(s, "tokens_trained", (double)res->tokens);
    cJSON_AddNumberToObject(s, "unique_tokens", (double)res->unique_tokens);
    cJSON_AddNumberToObject(s, "epochs", res->unique_tokens > 0 ? (double)res->tokens / res->unique_tokens : 0);
    // Per source of the training data (one, "train", without --mix): weight = its share of the
    // tokens drawn, tokens_trained = its part of tokens_trained above, epochs = that / its tokens.
    cJSON *sources = cJSON_AddArrayToObject(s, "sources");
    for (int i = 0; i < res->n_sources; i++) {
        const TrainSourceResult *src = &res->sources[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", src->name);
        cJSON_AddNumberToObject(o, "weight", src->weight);
        cJSON_AddNumberToObject(o, "unique_tokens", (double)src->unique_tokens);
        cJSON_AddNumberToObject(o, "tokens_trained", (double)src->tokens_trained);
        cJSON_AddNumberToObject(o, "epochs", src->unique_tokens > 0 ? (double)src->tokens_trained / src->unique_tokens : 0);
        cJSON_AddNumberToObject(o, "tokens_pulled", (double)src->tokens_pulled);
        cJSON_AddNumberToObject(o, "stream_epoch", (double)src->stream_epoch);
        cJSON_AddItemToArray(sources, o);
    }
    cJSON_AddNumberToObject(s, "steps", (double)res->steps);
    cJSON_AddNumberToObject(s, "final_loss", res->final_loss);
    cJSON_AddNumberToObject(s, "tok_per_s", res->tok_per_s);
    cJSON_AddNumberToObject(s, "mfu", res->mfu);
    cJSON_AddNumberToObject(s, "peak_flops", res->peak_flops);
    cJSON_AddNumberToObject(s, "ranks", res->ranks);
    cJSON_AddNumberToObject(s, "optimizer_state_bytes", (double)res->optim_state_bytes);
    cJSON_AddNumberToObject(s, "optimizer_state_bytes_per_rank", (double)res->optim_state_bytes_per_rank);
    cJSON_AddNumberToObject(s, "parameters", (double)res->params);
    cJSON_AddNumberToObject(s, "flops_per_token", res->flops_per_token);
    cJSON_AddNumberToObject(s, "budget_s", cfg->steps > 0 ? 0 : cfg->budget_s);
    cJSON_AddNumberToObject(s, "timed_s", res->timed_s);
    cJSON_AddNumberToObject(s, "startup_s", res->startup_s);
    cJSON_AddNumberToObject(s, "excluded_s", res->excluded_s);
    cJSON_AddNumberToObject(s, "total_s", res->total_s);
    cJSON_AddNumberToObject(s, "peak_rss_bytes", (double)res->peak_rss_bytes);
    cJSON_AddNumberToObject(s, "page_faults_per_step", res->faults_per_step);
    static const char *const STOPPED_BY[] = {"budget", "steps", "stop-after", "interrupted"};
    cJSON_AddStringToObject(s, "stopped_by", STOPPED_BY[res->stopped_by]);
    if (res->stopped_by == STOP_SIGNAL) {
        cJSON_AddBoolToObject(s, "interrupted", 1);
        cJSON_AddStringToObject(s, "signal", res->signal == SIGINT ? "SIGINT" : res->signal == SIGTERM ? "SIGTERM" : "?");
        char resume[1200];
        snprintf(resume, sizeof resume, "frontier train --resume %s", cfg->run_dir);
        cJSON_AddStringToObject(s, "resume_command", resume);
    }
    cJSON_AddNumberToObject(s, "checkpoints", (double)res->checkpoints);
    cJSON_AddNumberToObject(s, "checkpoint_s", res->checkpoint_s);
    cJSON_AddNumberToObject(s, "memory_estimate_bytes", (double)res->memory_estimate_bytes);
    cJSON_AddStringToObject(s, "tokenizer_id", tokenizer_id);
    cJSON *cfgj = cJSON_Parse(cfg->config_json ? cfg->config_json : "{}");
    cJSON_AddItemToObject(s, "config", cfgj ? cfgj : cJSON_CreateObject());
    const CpuInfo *ci = cpu_info();
    cJSON *hw = cJSON_AddObjectToObject(s, "hardware");
    cJSON_AddStringToObject(hw, "cpu", ci->model);
    cJSON_AddNumberToObject(hw, "logical_cpus", ci->logical_cpus);
    cJSON_AddNumberToObject(hw, "threads", omp_get_max_threads());
    cJSON_AddStringToObject(hw, "kernels", res->kernels);  // as trained (evaluation is fp32)
    cJSON_AddBoolToObject(hw, "avx512f", ci->avx512f);
    if (ci->avx512_emulated) cJSON_AddBoolToObject(hw, "avx512_emulated", 1);
    cJSON_AddBoolToObject(hw, "amx_bf16", ci->amx_bf16);
    char *commit = train_git_commit();
    cJSON_AddStringToObject(s, "git_commit", commit);
    free(commit);
    char *path = path_join(cfg->run_dir, "summary.json");
    int rc = json_write_atomic(path, s);
    cJSON_Delete(s);
    free(path);
    return rc;
}

#define PROFILE_TOP_SHAPES 12  // (op, shape) rows printed after the per-op table

int train_write_profile(const TrainConfig *cfg, double faults_per_step) {
    prof_enable(0);
    kernels_set_profiling(0);
    // bf16 training: the roofline's compute roof is the bf16 peak (the matmuls run on it)
    double peak = cfg->peak_flops > 0 ? cfg->peak_flops : machine_peak_flops_for(cfg->precision),
           bw = machine_peak_bandwidth();
    ProfSummary s;
    prof_summarize(&s);
    char *trace = path_join(cfg->run_dir, "trace.json"), *csv = path_join(cfg->run_dir, "profile.csv");
    char *shapes_csv = path_join(cfg->run_dir, "profile_shapes.csv");
    char *roof = path_join(cfg->run_dir, "roofline.json");
    char rj[160];
    int n = snprintf(rj, sizeof rj, "{\"peak_flops\": %.6g, \"peak_bw\": %.6g, \"precision\": \"%s\"}\n", peak, bw,
                     kernels_precision_name(cfg->precision));
    int rc = prof_write_trace(trace);
    if (rc == 0) rc = prof_write_csv(&s, csv, peak, bw);
    if (rc == 0) rc = prof_write_shapes_csv(&s, shapes_csv, peak, bw);
    if (rc == 0) rc = write_file_atomic(roof, rj, (size_t)n);
    if (rc == 0) {
        prof_print_table(&s, peak, bw, PROFILE_TOP_SHAPES);
        double fpt = model_config_flops_per_token(&cfg->model), hw = 0;
        for (int i = 0; i < s.n_ops; i++) hw += s.ops[i].flops;
        double per_step = s.steps ? s.step_s / s.steps : 0, tps = per_step > 0 ? cfg->batch_tokens / per_step : 0;
        // The profile is this rank's (its ops, its threads' peak): under MPI it trains 1/world of
        // the step's tokens, and its MFU counts those (tok/s stays the whole job's).
        double mfu = fpt * tps / dist_world() / peak;
        printf("step: %.1f ms, %.0f tok/s, MFU %.2f%% (model FLOPs), HFU %.2f%% (all op FLOPs incl. recompute) of "
               "%.0f GFLOP/s%s\n", 1e3 * per_step, tps, 100 * mfu, s.step_s > 0 ? 100 * hw / s.step_s / peak : 0,
               peak / 1e9, dist_world() > 1 ? " (rank 0: its share of the tokens, its own threads' peak)" : "");
        // faults land inside whichever op first touches fresh memory, so the table cannot show them
        printf("page faults: %.1f per step%s\n", faults_per_step,
               faults_per_step >= 50 ? " (something allocates every step; see docs/profiling.md)" : "");
        printf("trace: %s (open in ui.perfetto.dev or Chromium DevTools > Performance > Load profile)\n", trace);
    }
    prof_summary_free(&s);
    free(trace);
    free(csv);
    free(shapes_csv);
    free(roof);
    return rc;
}
