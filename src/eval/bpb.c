// eval/bpb.c — validation bits per byte (see bpb.h).
#include "eval/bpb.h"

#include <math.h>
#include <stdlib.h>

#include "data/loader.h"
#include "dist/dist.h"
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
    lc.vocab_size = m->cfg.vocab_size;  // an id past it would index past the embedding and the loss rows
    DataLoader *dl = loader_open(val_shards, n_shards, bos_id, &lc);
    if (!dl) return err_prefix("validation data");
    int32_t *in = xmalloc((size_t)B * T * sizeof *in), *tg = xmalloc((size_t)B * T * sizeof *tg);
    RunState s;
    runstate_build_forward(&s, &m->cfg, B, T);
    model_pin_weights(m, 0);  // the weights are read-only here
    // Data-parallel (dist.h): every rank packs the same row stream (cheap next to the forward) and
    // rank r scores batches r, r+W, ...; the rows counted and where a max_tokens cap cuts off are
    // decided from the targets alone, so the result is the one-process result whatever W is.
    const int rank = dist_rank(), world = dist_world();
    int rc;
    int64_t batch = 0;
    while ((rc = loader_next(dl, in, tg)) == 1) {
        int mine = batch++ % world == rank;
        if (mine) model_forward(m, &s, in, tg, B, T, NULL);
        int stop = 0;
        for (int r = 0; r < dl->rows && !stop; r++) {
            for (int t = 0; t < T; t++) {
                int i = r * T + t, y = tg[i];
                if (y < 0) continue;
                res->positions++;
                if (!mine || token_bytes[y] <= 0) continue;
                res->nats += s.losses[i];
                res->bytes += token_bytes[y];
                res->tokens++;
            }
            res->rows++;
            stop = max_tokens > 0 && res->positions >= max_tokens;
        }
        if (stop) { rc = 0; break; }
    }
    dist_allreduce_sum_f64(&res->nats, 1);
    int64_t counts[2] = {res->bytes, res->tokens};
    dist_allreduce_sum_i64(counts, 2);
    res->bytes = counts[0], res->tokens = counts[1];
    model_unpin_weights();
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
