// eval/bpb.c — validation bits per byte (see bpb.h).
#include "eval/bpb.h"

#include <math.h>
#include <stdlib.h>

#include "data/loader.h"
#include "util/error.h"
#include "util/mem.h"
#include "util/timer.h"

int eval_bpb(Model *m, const char *const *val_shards, int n_shards, int bos_id, const int32_t *token_bytes, int B,
             int T, int64_t max_tokens, BpbResult *res) {
    double t0 = now_seconds();
    *res = (BpbResult){.T = T};
    if (T > m->cfg.seq_len) return err_set("eval: T %d exceeds the model's seq_len %d", T, m->cfg.seq_len);
    LoaderConfig lc = loader_defaults();
    lc.B = B;
    lc.T = T;
    lc.shuffle = 0;
    DataLoader *dl = loader_open(val_shards, n_shards, bos_id, &lc);
    if (!dl) return err_prefix("validation data");
    int32_t *in = xmalloc((size_t)B * T * sizeof *in), *tg = xmalloc((size_t)B * T * sizeof *tg);
    RunState s;
    runstate_build(&s, &m->cfg, B, T);
    int rc;
    while ((rc = loader_next(dl, in, tg)) == 1) {
        model_forward(m, &s, in, tg, B, T, NULL);
        for (int r = 0; r < dl->rows; r++) {
            for (int t = 0; t < T; t++) {
                int i = r * T + t, y = tg[i];
                if (y < 0) continue;
                res->positions++;
                if (token_bytes[y] <= 0) continue;
                res->nats += s.losses[i];
                res->bytes += token_bytes[y];
                res->tokens++;
            }
            res->rows++;
            if (max_tokens > 0 && res->positions >= max_tokens) break;
        }
        if (max_tokens > 0 && res->positions >= max_tokens) { rc = 0; break; }
    }
    runstate_free(&s);
    free(in);
    free(tg);
    loader_free(dl);
    if (rc < 0) return err_prefix("validation data");
    if (res->bytes == 0) return err_set("eval: no validation bytes were scored (empty validation set?)");
    res->bpb = res->nats / (log(2.0) * (double)res->bytes);
    res->seconds = now_seconds() - t0;
    return 0;
}
