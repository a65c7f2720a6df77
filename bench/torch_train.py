#!/usr/bin/python3
"""The PyTorch peer for bench/train_throughput.sh: the same model and optimizers as frontier
(tests/model/torch_ref.py: SPEC §1 GPT, Muon with Polar Express + AdamW), the same config and
batch (read from a frontier run's config.json), on the same number of threads, and reports
training tokens per second as one JSON line.

  /usr/bin/python3 bench/torch_train.py RUN_DIR/config.json --threads 2 --steps 5 [--dtype bf16|fp32]

bf16 (default) runs forward and backward under torch.autocast("cpu", bfloat16): matmuls in bf16
with fp32 weights and optimizer, which is PyTorch's mixed-precision recipe on CPU. Tokens are
random ids (throughput does not depend on the data). The first --warmup steps are not timed.
"""
import argparse
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "model"))
import torch_ref as tr  # noqa: E402


def model_cfg(c):
    return tr.Cfg({"depth": c["depth"], "n_embd": c["n-embd"], "n_head": c["n-head"], "n_kv_head": c["n-kv-head"],
                   "head_dim": c["head-dim"], "seq_len": c["seq-len"], "vocab_size": c["vocab-size"],
                   "mlp_ratio": c["mlp-ratio"], "rope_base": c["rope-base"], "softcap": c["softcap"],
                   "qk_norm": c["qk-norm"]})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config", help="a frontier run's config.json")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=5, help="timed steps")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    a = ap.parse_args()
    c = json.load(open(a.config))
    cfg = model_cfg(c)
    torch.set_num_threads(a.threads)
    T, B = cfg.seq_len, c["device-batch"]
    G = c["batch-tokens"] // (B * T)
    gen = torch.Generator().manual_seed(42)
    P = tr.init_params(cfg, gen, torch.float32)
    opt = tr.Optimizer(P)
    hp = tr.steps_schedule(a.warmup + a.steps, cfg.n_embd)
    names = list(P)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bf16")
    times = []
    for s in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        grads = {n: torch.zeros_like(p) for n, p in P.items()}
        for _ in range(G):
            idx = torch.randint(0, cfg.vocab_size, (B, T + 1), generator=gen)
            leaves = {n: p.detach().requires_grad_(True) for n, p in P.items()}
            with autocast:
                z = tr.forward_logits(leaves, cfg, idx[:, :-1])
            loss = torch.nn.functional.cross_entropy(z.float().reshape(-1, cfg.vocab_size), idx[:, 1:].reshape(-1))
            gs = torch.autograd.grad(loss / G, [leaves[n] for n in names])
            for n, g in zip(names, gs):
                grads[n] += g.float()
        opt.step(P, grads, hp[s])
        if not math.isfinite(loss.item()):
            sys.exit(f"torch_train: loss {loss.item()} at step {s}")
        if s >= a.warmup:
            times.append(time.perf_counter() - t0)
    tok = c["batch-tokens"] * len(times)
    print(json.dumps({"impl": f"pytorch {torch.__version__} {a.dtype}", "threads": a.threads, "steps": len(times),
                      "tok_per_s": tok / sum(times), "step_s": sum(times) / len(times),
                      "final_loss": loss.item()}))


if __name__ == "__main__":
    main()
