#!/usr/bin/python3
"""Independent Python CORE evaluator, cross-checked against frontier's `eval --core`.

Usage:
  /usr/bin/python3 tests/eval/core_ref.py RUN_DIR CORE_DIR [--tasks a,b,c] [--max-per-task N]
        [--threads N] [--margins]

Shares no code with the C side. Pieces:
  * model: tests/model/torch_ref.py's forward (float64, softcapped logits); weights from
    RUN_DIR/model.safetensors, config from its __metadata__ "model_config" JSON.
  * tokenizer: RUN_DIR/tokenizer/tokenizer.tiktoken (base64 rank lines) + tokenizer.json (split
    pattern, <|bos|> id); chunks split with the `regex` module, each chunk BPE-encoded with
    tiktoken's algorithm (whole-chunk lookup first, else merge the lowest-rank adjacent pair,
    leftmost on ties, until no adjacent pair concatenates to a token).
  * data/rendering: core.yaml read and prompts rendered by tests/fixtures/gen_core_prompts.py.
  * nanochat's procedure: random.Random(1337).shuffle(rows); rows[:max_per_task]; for row idx the
    few-shot indices random.Random(1234 + idx).sample([i != idx], k); each prompt tokenized with
    <|bos|> first; spans: MC common token prefix, schema common token suffix, LM tokens past
    prompt_without; MC/schema: argmin of the mean CE over the continuation (first minimum on
    ties), LM: greedy argmax equals every continuation token.

Prints a JSON object {label: accuracy}, then a table against RUN_DIR/core.json. Exit 0 iff every
task's accuracy equals frontier's exactly; 1 on a disagreement (per-row margins of the disagreeing
tasks are printed so a near-tie from fp32 vs fp64 is visible); 2 on bad input.
"""
import argparse
import base64
import json
import os
import random
import struct
import sys

import regex
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "model"))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import torch_ref  # noqa: E402
import gen_core_prompts as gcp  # noqa: E402


# ----------------------------------------------------------------------------- model
def load_model(run_dir):
    tensors, meta = torch_ref.load_safetensors(os.path.join(run_dir, "model.safetensors"))
    if "model_config" not in meta:
        raise torch_ref.DumpError("model.safetensors: no model_config in __metadata__")
    cfg = torch_ref.Cfg(json.loads(meta["model_config"]))
    P = {n: torch.from_numpy(a).to(torch.float64) for n, a in tensors.items()}
    for n, shp in cfg.shapes().items():
        if n not in P or tuple(P[n].shape) != tuple(shp):
            raise torch_ref.DumpError(f"model.safetensors: {n} missing or not of shape {shp}")
    return P, cfg


# ----------------------------------------------------------------------------- tokenizer
class Tokenizer:
    def __init__(self, tok_dir):
        self.ranks = {}
        with open(os.path.join(tok_dir, "tokenizer.tiktoken"), "rb") as f:
            for line in f:
                if not line.strip():
                    continue
                b64, r = line.split()
                self.ranks[base64.b64decode(b64)] = int(r)
        with open(os.path.join(tok_dir, "tokenizer.json"), encoding="utf-8") as f:
            j = json.load(f)
        self.pat = regex.compile(j["pattern"])
        self.bos = int(j["special_tokens"]["<|bos|>"])

    def _bpe(self, piece):
        r = self.ranks.get(piece)
        if r is not None:
            return [r]
        parts = [piece[i:i + 1] for i in range(len(piece))]
        while len(parts) > 1:
            best, bi = None, -1
            for i in range(len(parts) - 1):
                rk = self.ranks.get(parts[i] + parts[i + 1])
                if rk is not None and (best is None or rk < best):
                    best, bi = rk, i
            if bi < 0:
                break
            parts[bi:bi + 2] = [parts[bi] + parts[bi + 1]]
        return [self.ranks[p] for p in parts]

    def encode(self, text):
        ids = [self.bos]
        for m in self.pat.finditer(text):
            ids.extend(self._bpe(m.group().encode("utf-8")))
        return ids


# ----------------------------------------------------------------------------- scoring
def common_prefix(seqs):
    p = min(len(s) for s in seqs)
    for s in seqs[1:]:
        k = 0
        while k < p and s[k] == seqs[0][k]:
            k += 1
        p = k
    return p


def common_suffix(seqs):
    q = min(len(s) for s in seqs)
    for s in seqs[1:]:
        k = 0
        while k < q and s[-1 - k] == seqs[0][-1 - k]:
            k += 1
        q = k
    return q


@torch.no_grad()
def score_row(P, cfg, tok, kind, pairs, gold):
    """Returns (correct, margin, detail). margin: MC/schema: second-lowest minus lowest mean loss
    (how far from a tie the pick is); LM: smallest gap between the top logit and the runner-up
    over the continuation positions (a near-tie in any greedy pick)."""
    seqs = [tok.encode(p + c) for p, c in pairs]
    if kind == "language_modeling":
        without = tok.encode(pairs[0][0])
        full = seqs[0]
        if full[:len(without)] != without:
            raise ValueError("LM: prompt tokens are not a prefix of prompt+continuation tokens")
        spans = [(len(without), len(full))]
    elif kind == "multiple_choice":
        p = common_prefix(seqs)
        spans = [(p, len(s)) for s in seqs]
    else:
        q = common_suffix(seqs)
        spans = [(len(s) - q, len(s)) for s in seqs]
    if kind == "language_modeling":
        s, e = spans[0]
        idx = torch.tensor([seqs[0]], dtype=torch.long)
        z = torch_ref.forward_logits(P, cfg, idx)[0]
        if s >= e:
            return False, float("nan"), "empty continuation"
        zz = z[s - 1:e - 1]
        top2 = zz.topk(2, dim=-1)
        pred = zz.argmax(dim=-1)
        tgt = idx[0, s:e]
        correct = bool((pred == tgt).all())
        margin = float((top2.values[:, 0] - top2.values[:, 1]).min())
        return correct, margin, f"{int((pred == tgt).sum())}/{e - s} tokens"
    means = []
    for sq, (s, e) in zip(seqs, spans):
        idx = torch.tensor([sq], dtype=torch.long)
        z = torch_ref.forward_logits(P, cfg, idx)[0]
        if e - s <= 0:
            means.append(float("inf"))
            continue
        ce = F.cross_entropy(z[s - 1:e - 1], idx[0, s:e], reduction="none")
        means.append(float(ce.mean()))
    pred = min(range(len(means)), key=lambda i: (means[i], i))  # first minimum
    srt = sorted(means)
    margin = srt[1] - srt[0] if len(srt) > 1 else float("inf")
    return pred == gold, margin, f"pred {pred} gold {gold} means " + " ".join(f"{m:.6f}" for m in means)


def evaluate_task(P, cfg, tok, core_dir, t, max_per_task):
    path = os.path.join(core_dir, "eval_data", t["dataset_uri"])
    with open(path, "r", encoding="utf-8") as f:
        rows = [json.loads(line.strip()) for line in f if line.strip()]
    random.Random(1337).shuffle(rows)
    if max_per_task and max_per_task > 0:
        rows = rows[:max_per_task]
    kind = t["icl_task_type"]
    delim = t.get("continuation_delimiter", " ")
    k = t["num_fewshot"][0]
    render = {"multiple_choice": gcp.render_mc, "schema": gcp.render_schema,
              "language_modeling": gcp.render_lm}[kind]
    if k > 0 and len(rows) <= k:
        raise ValueError(f"task {t['label']}: {len(rows)} rows, too few for {k} few-shot examples")
    results = []
    for idx, item in enumerate(rows):
        shots = []
        if k > 0:
            few = random.Random(1234 + idx).sample([i for i in range(len(rows)) if i != idx], k)
            shots = [rows[i] for i in few]
        pairs = render(item, delim, shots)
        results.append(score_row(P, cfg, tok, kind, pairs, item.get("gold")))
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("core_dir")
    ap.add_argument("--tasks", default=None, help="comma-separated labels (default: all in RUN_DIR/core.json)")
    ap.add_argument("--max-per-task", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--margins", action="store_true", help="print per-row margins of every task")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    try:
        P, cfg = load_model(a.run_dir)
        tok = Tokenizer(os.path.join(a.run_dir, "tokenizer"))
        tasks = gcp.load_core_yaml(os.path.join(a.core_dir, "core.yaml"))
        cj_path = os.path.join(a.run_dir, "core.json")
        ref = {}
        if os.path.exists(cj_path):
            with open(cj_path, encoding="utf-8") as f:
                ref = {x["label"]: x for x in json.load(f)["tasks"]}
    except (OSError, ValueError, KeyError, torch_ref.DumpError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    want = a.tasks.split(",") if a.tasks else list(ref)
    by_label = {t["label"]: t for t in tasks}
    bad = [w for w in want if w not in by_label]
    if bad or not want:
        print(f"error: unknown or no tasks: {bad}", file=sys.stderr)
        return 2
    acc, per_row = {}, {}
    for lab in want:
        try:
            res = evaluate_task(P, cfg, tok, a.core_dir, by_label[lab], a.max_per_task)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        per_row[lab] = res
        acc[lab] = sum(1 for c, _, _ in res if c) / len(res) if res else 0.0
    print(json.dumps(acc))
    fails = 0
    print(f"{'task':<28} {'type':<18} {'rows':>5} {'python':>8} {'frontier':>9} {'min margin':>11}  verdict")
    for lab in want:
        res = per_row[lab]
        r = ref.get(lab)
        fa = r["accuracy"] if r else None
        same = r is not None and r["rows"] == len(res) and fa == acc[lab]
        fails += not same
        mm = min((m for _, m, _ in res), default=float("nan"))
        print(f"{lab:<28} {by_label[lab]['icl_task_type']:<18} {len(res):>5} {acc[lab]:>8.4f} "
              f"{'-' if fa is None else format(fa, '.4f'):>9} {mm:>11.3e}  {'ok' if same else 'DIFFER'}")
        if not same or a.margins:
            for i, (c, m, d) in enumerate(res):
                print(f"    row {i:3d} {'correct' if c else 'wrong  '} margin {m:.3e}  {d}")
    print("PASS: all tasks agree" if not fails else f"FAIL: {fails} task(s) disagree")
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main())
