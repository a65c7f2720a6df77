#!/usr/bin/python3
"""Independent PyTorch reference for frontier's model and optimizers, plus a parity checker.

This file re-implements, from SPEC.md §1/§2/§5 only (no code shared with the C side), the
frontier baseline GPT and its Muon + AdamW optimizers, and compares them against a folder that
the C program dumps.  All math runs in float64 by default so this side is the "truth"; pass
``--dtype float32`` to see what an fp32 implementation with PyTorch's summation order gives.

Model (SPEC §1, exactly):
  x = norm(wte[idx]); for each block: x += attn(norm(x)); x += mlp(norm(x)); x = norm(x)
  With `bigram` (R rows): wte[idx] + bigram_embed[row(prev, idx)] before the first norm, row() a
  64-bit mix of (prev, token) mod R (prev = V at a row's first position). With `smear`: for t >= 1,
  x[t] += smear_lambda*sigmoid(x[t, :24] . smear_gate)*x[t-1] (x: the normed embedding, pre-smear).
  With `value_embeds`: on layers i % 2 == (depth-1) % 2, v += 3*sigmoid(norm(x)[:12] @ ve_gate^T)
  (one gate per kv head) * value_embeds[i][idx].
  With the config's `lambdas` (nanochat's resid/x0 lambdas): x0 = norm(wte[idx]) and before block
  i, x = resid_lambdas[i]*x + x0_lambdas[i]*x0. With `backout`: h = x after block depth//2, and
  the final norm sees x - backout_lambda*h. `qk_scale` multiplies q and k after the QK-norm.
  z = lm_head(x) (fp32 or fp64); z = softcap*tanh(z/softcap) (skipped if softcap == 0)
  loss = mean cross-entropy over targets != -1
  norm(x) = x * rsqrt(mean(x^2) + 1.1920929e-7), no weight.
  attn: q = c_q(x) (H*D), k = c_k(x) (Hkv*D), v = c_v(x) (Hkv*D); half-split RoPE on q, k
  (y1 = x1 cos + x2 sin, y2 = -x1 sin + x2 cos, inv_freq[j] = base^(-2j/D), angle = t*inv_freq[j],
  t = 0..T-1 in each row); QK-norm over D when qk_norm; causal softmax with scale 1/sqrt(D);
  q head h reads kv head h // (H/Hkv); out = c_proj(y) (C, H*D).
  mlp: c_proj(relu(c_fc(x))^2), hidden = mlp_ratio*C.
Optimizers (SPEC §2), with per-step lr/momentum/wd/betas taken from the dump (never re-derived):
  Muon (every matrix in the blocks): buf = m*buf + (1-m)*G; G' = (1-m)*G + m*buf;
  X = G' / (||G'||_F*1.01 + 1e-6); 5 Polar Express iterations (wide/square: A = X X^T,
  B = bA + cA A, X = aX + BX; tall: A = X^T X, X = aX + XB);
  W <- W - lr_eff*X - lr_eff*wd*W (W on the right = pre-update W), lr_eff = lr*max(1, out/in)^0.5.
  AdamW (wte, lm_head, and the groups resid/x0/gate/ve/bigram): p *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
  p -= lr/(1-b1^t) * m / (sqrt(v/(1-b2^t)) + eps), t = 1, 2, ...

Dump contract: see tests/model/README.md (config.json, model.safetensors, batches.safetensors,
grads.safetensors, losses.safetensors, optional val.safetensors).

Tolerances (why they are not tighter): the C side computes in fp32, this side in fp64.  fp32 has a
unit roundoff of 6e-8; a matmul of inner length K in fp32 carries a relative error of roughly
sqrt(K)*6e-8 (blocked / vectorised summation orders differ from ours, so the errors do not cancel),
and the error grows through the depth of the network, the softmax and the backward pass.  A
correct fp32 implementation therefore differs from fp64 truth by ~1e-7..1e-5 relative, while a
real bug (wrong sign, missing term, wrong index) shows up at 1e-2..1e0.  The thresholds sit in the
gap between the two:
  * loss at step 0:   |loss - loss_c| <= 1e-5 * max(1, |loss|)
  * each gradient:    max|g - g_c| <= grad_rtol * max|g| + 1e-7, grad_rtol = 2e-4 (--grad-rtol).
                      Measured against the tensor's largest entry, not elementwise: entries that
                      are tiny (or exactly zero in one implementation) carry only absolute noise.
                      After the 10 training steps (the val dump's extra step) the worst tensor,
                      layer 0's mlp.c_proj, measured 9.6e-5 of max|g| with full attention and
                      1.06e-4 with layer 0 windowed — the same with the reference kernels as with
                      the fast ones, so fp32's own error through a trained model, not a kernel's;
                      1e-4 had no margin left.
                      Note: mean-loss gradients of a freshly initialised model are small (~1e-4 per
                      entry), and there the 1e-7 absolute term dominates (~1e-3 relative);
                      --grad-atol 0 makes the check purely relative (fp32 noise is ~1e-6 of max|g|).
  * step losses:      |l_s - l_c,s| <= 1e-4 * |l_s| for every step s (the training trajectories of
                      fp32 and fp64 drift apart slowly: Adam's normalisation and the Muon
                      orthogonalisation amplify tiny differences, so this bound is looser)
  * val_bpb:          |bpb - bpb_c| <= 1e-4 (absolute), if val.safetensors exists.

Exit status: 0 all checks pass; 1 some check failed (the failures are listed); 2 missing or
malformed dump files.

Usage:
  /usr/bin/python3 tests/model/torch_ref.py DIR [--dtype float64|float32] [--grad-rtol X]
        [--grad-atol X] [--threads N] [--max-steps N]
  /usr/bin/python3 tests/model/torch_ref.py --selftest [--keep DIR]
"""
import argparse
import json
import math
import os
import shutil
import struct
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

RMS_EPS = 1.1920929e-7
VE_GATE_CHANNELS, SMEAR_CHANNELS = 12, 24
POLAR_EXPRESS = (
    (8.156554524902461, -22.48329292557795, 15.878769915207462),
    (4.042929935166739, -2.808917465908714, 0.5000178451051316),
    (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
    (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
    (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
)
MODEL_KEYS = ("depth", "n_embd", "n_head", "n_kv_head", "head_dim", "seq_len", "vocab_size",
              "mlp_ratio", "rope_base", "softcap", "qk_norm")
STEP_KEYS = ("muon_lr", "muon_momentum", "muon_wd", "wte_lr", "wte_beta1", "wte_beta2", "wte_wd",
             "lm_head_lr", "lm_head_beta1", "lm_head_beta2", "lm_head_wd", "adam_eps")
LOSS_RTOL = 1e-5
GRAD_RTOL = 2e-4
GRAD_ATOL = 1e-7
STEP_RTOL = 1e-4
BPB_ATOL = 1e-4


class DumpError(Exception):
    """A missing or malformed dump file (exit status 2)."""


# ----------------------------------------------------------------------------- safetensors I/O
_ST_DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}


def load_safetensors(path):
    """Returns ({name: np.ndarray}, metadata dict). Raises DumpError if missing or malformed."""
    if not os.path.isfile(path):
        raise DumpError(f"missing file: {path}")
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise DumpError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise DumpError(f"{path}: header length {n} exceeds file size {len(raw)}")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DumpError(f"{path}: header is not JSON: {e}")
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, info in header.items():
        try:
            dt = np.dtype(_ST_DTYPES[info["dtype"]]).newbyteorder("<")
            shape = tuple(int(s) for s in info["shape"])
            b, e = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError) as ex:
            raise DumpError(f"{path}: tensor {name!r}: bad header entry {info!r} ({ex})")
        count = int(np.prod(shape, dtype=np.int64))
        if not (0 <= b <= e <= len(data)) or e - b != count * dt.itemsize:
            raise DumpError(f"{path}: tensor {name!r}: offsets [{b},{e}] do not fit shape {shape} "
                            f"{info['dtype']} in a {len(data)}-byte buffer")
        out[name] = np.frombuffer(data, dtype=dt, count=count, offset=b).reshape(shape).astype(
            dt.newbyteorder("="))
    return out, meta


def save_safetensors(path, tensors, metadata=None):
    """Writes {name: np.ndarray} (float32/float64/int32/int64) in the safetensors format."""
    rev = {np.dtype(v): k for k, v in _ST_DTYPES.items()}
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        buf = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": rev[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(buf)]}
        blobs.append(buf)
        off += len(buf)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hb = json.dumps(header).encode("utf-8")
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)


# ----------------------------------------------------------------------------- config
class Cfg:
    def __init__(self, d):
        missing = [k for k in MODEL_KEYS if k not in d]
        if missing:
            raise DumpError(f"config.json: model lacks {missing}")
        try:
            self.depth = int(d["depth"])
            self.n_embd = int(d["n_embd"])
            self.n_head = int(d["n_head"])
            self.n_kv_head = int(d["n_kv_head"])
            self.head_dim = int(d["head_dim"])
            self.seq_len = int(d["seq_len"])
            self.vocab_size = int(d["vocab_size"])
            self.mlp_ratio = float(d["mlp_ratio"])
            self.rope_base = float(d["rope_base"])
            self.softcap = float(d["softcap"])
            self.qk_norm = bool(d["qk_norm"])
            # sliding windows (absent in configs written before them: every layer full)
            self.window_pattern = str(d.get("window_pattern", "L")) or "L"
            self.window = int(d.get("window", 0))
            # nanochat's residual-stream recipe (absent in older configs: off)
            self.lambdas = bool(d.get("lambdas", 0))
            self.backout = bool(d.get("backout", 0))
            self.qk_scale = float(d.get("qk_scale", 1.0)) or 1.0
            self.value_embeds = bool(d.get("value_embeds", 0))
            self.smear = bool(d.get("smear", 0))
            self.bigram = int(d.get("bigram", 0))
        except (TypeError, ValueError) as e:
            raise DumpError(f"config.json: bad model value: {e}")
        self.hidden = int(round(self.mlp_ratio * self.n_embd))
        if min(self.depth, self.n_embd, self.n_head, self.n_kv_head, self.head_dim, self.vocab_size) <= 0:
            raise DumpError("config.json: model sizes must be positive")
        if self.n_head % self.n_kv_head or self.head_dim % 2:
            raise DumpError("config.json: need n_kv_head | n_head and an even head_dim")
        if set(self.window_pattern) - set("SL") or ("S" in self.window_pattern and self.window < 1):
            raise DumpError("config.json: window_pattern must be letters S/L, with window >= 1 for S")

    def layer_window(self, i):
        """nanochat's _compute_window_sizes: the pattern tiled over the layers, the last layer
        full; 0 = full causal attention, w = each query sees the w keys before it and itself."""
        if i == self.depth - 1 or self.window_pattern[i % len(self.window_pattern)] != "S":
            return 0
        return self.window

    def as_dict(self):
        return {k: getattr(self, k) for k in MODEL_KEYS}

    def shapes(self):
        C, V, H, Hkv, D = self.n_embd, self.vocab_size, self.n_head, self.n_kv_head, self.head_dim
        s = {"transformer.wte.weight": (V, C), "lm_head.weight": (V, C)}
        for i in range(self.depth):
            p = f"transformer.h.{i}."
            s[p + "attn.c_q.weight"] = (H * D, C)
            s[p + "attn.c_k.weight"] = (Hkv * D, C)
            s[p + "attn.c_v.weight"] = (Hkv * D, C)
            s[p + "attn.c_proj.weight"] = (C, H * D)
            s[p + "mlp.c_fc.weight"] = (self.hidden, C)
            s[p + "mlp.c_proj.weight"] = (C, self.hidden)
        if self.lambdas:
            s["resid_lambdas"] = (self.depth,)
            s["x0_lambdas"] = (self.depth,)
        if self.backout:
            s["backout_lambda"] = (1,)
        for i in range(self.depth):
            if self.has_ve(i):
                s[f"value_embeds.{i}.weight"] = (V, Hkv * D)
                s[f"transformer.h.{i}.attn.ve_gate.weight"] = (Hkv, VE_GATE_CHANNELS)
        if self.smear:
            s["smear_gate.weight"] = (1, SMEAR_CHANNELS)
            s["smear_lambda"] = (1,)
        if self.bigram:
            s["bigram_embed.weight"] = (self.bigram, C)
        return s

    def has_ve(self, i):
        return self.value_embeds and i % 2 == (self.depth - 1) % 2


def is_muon(name):
    return name.startswith("transformer.h.")


# ----------------------------------------------------------------------------- model
def rms_norm(x):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + RMS_EPS)


def rope_tables(T, D, base, dtype):
    # computed in float64, then cast: the table itself is not a source of disagreement
    j = torch.arange(D // 2, dtype=torch.float64)
    inv_freq = base ** (-2.0 * j / D)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)  # (T, D/2)


def apply_rope(x, cos, sin):
    # x: (B, heads, T, D); half-split rotation
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos + x2 * sin, -x1 * sin + x2 * cos], dim=-1)


def attention_mask(T, window=0):
    """True where query row may NOT see key col: col > row, and with a window row - col > window
    (nanochat's SDPA fallback: visible iff col <= row and row - col <= window)."""
    r = torch.arange(T)[:, None]
    c = torch.arange(T)[None, :]
    hidden = c > r
    if window > 0:
        hidden = hidden | (r - c > window)
    return hidden


def causal_attention(q, k, v, window=0):
    # q: (B, H, T, D); k, v: (B, Hkv, T, D)
    H, Hkv, T, D = q.shape[1], k.shape[1], q.shape[2], q.shape[3]
    g = H // Hkv
    k = k.repeat_interleave(g, dim=1)  # q head h -> kv head h // g
    v = v.repeat_interleave(g, dim=1)
    att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(D))
    att = att.masked_fill(attention_mask(T, window), float("-inf"))
    return torch.softmax(att, dim=-1) @ v


def causal_attention_loop(q, k, v, window=0):
    """The same function written differently (per query position, explicit max/exp/sum, explicit
    kv-head index and key range); used only by the self-test to cross-check causal_attention."""
    B, H, T, D = q.shape
    g = H // k.shape[1]
    out = torch.empty_like(q)
    for h in range(H):
        kh, vh = k[:, h // g], v[:, h // g]
        for t in range(T):
            s0 = max(0, t - window) if window > 0 else 0
            s = torch.einsum("bd,bsd->bs", q[:, h, t], kh[:, s0:t + 1]) / math.sqrt(D)
            e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
            out[:, h, t] = torch.einsum("bs,bsd->bd", e / e.sum(dim=-1, keepdim=True), vh[:, s0:t + 1])
    return out


def bigram_rows(idx, V, R):
    """The bigram table's row of each position: k = prev*65537 + token in 64-bit arithmetic
    (prev = V where a row starts), k ^= k >> 31, k *= 0x9E3779B97F4A7C15, k ^= k >> 29, k mod R."""
    a = idx.numpy().astype(np.uint64)
    prev = np.concatenate([np.full((a.shape[0], 1), V, dtype=np.uint64), a[:, :-1]], axis=1)
    with np.errstate(over="ignore"):
        k = prev * np.uint64(65537) + a
        k ^= k >> np.uint64(31)
        k *= np.uint64(0x9E3779B97F4A7C15)
        k ^= k >> np.uint64(29)
    return torch.from_numpy((k % np.uint64(R)).astype(np.int64))


def forward_logits(P, cfg, idx, attn_fn=causal_attention):
    B, T = idx.shape
    H, Hkv, D = cfg.n_head, cfg.n_kv_head, cfg.head_dim
    wte = P["transformer.wte.weight"]
    cos, sin = rope_tables(T, D, cfg.rope_base, wte.dtype)
    e = F.embedding(idx, wte)
    if cfg.bigram:
        e = e + F.embedding(bigram_rows(idx, cfg.vocab_size, cfg.bigram), P["bigram_embed.weight"])
    x = rms_norm(e)
    if cfg.smear:  # each position takes in the previous one's (pre-smear) embedding
        g = P["smear_lambda"][0] * torch.sigmoid(x[:, 1:, :SMEAR_CHANNELS] @ P["smear_gate.weight"].t())
        x = torch.cat([x[:, :1], x[:, 1:] + g * x[:, :-1]], dim=1)
    x0, x_half = x, None
    for i in range(cfg.depth):
        p = f"transformer.h.{i}."
        if cfg.lambdas:
            x = P["resid_lambdas"][i] * x + P["x0_lambdas"][i] * x0
        h = rms_norm(x)
        q = (h @ P[p + "attn.c_q.weight"].t()).view(B, T, H, D).transpose(1, 2)
        k = (h @ P[p + "attn.c_k.weight"].t()).view(B, T, Hkv, D).transpose(1, 2)
        v = (h @ P[p + "attn.c_v.weight"].t()).view(B, T, Hkv, D)
        if cfg.has_ve(i):
            gate = 3 * torch.sigmoid(h[..., :VE_GATE_CHANNELS] @ P[p + "attn.ve_gate.weight"].t())  # (B, T, Hkv)
            v = v + gate[..., None] * F.embedding(idx, P[f"value_embeds.{i}.weight"]).view(B, T, Hkv, D)
        v = v.transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cfg.qk_norm:
            q, k = rms_norm(q), rms_norm(k)
        q, k = q * cfg.qk_scale, k * cfg.qk_scale
        y = attn_fn(q, k, v, cfg.layer_window(i)).transpose(1, 2).reshape(B, T, H * D)
        x = x + y @ P[p + "attn.c_proj.weight"].t()
        h = rms_norm(x)
        x = x + torch.relu(h @ P[p + "mlp.c_fc.weight"].t()).square() @ P[p + "mlp.c_proj.weight"].t()
        if cfg.backout and i == cfg.depth // 2:
            x_half = x
    if cfg.backout:
        x = x - P["backout_lambda"][0] * x_half
    z = rms_norm(x) @ P["lm_head.weight"].t()
    if cfg.softcap != 0:
        z = cfg.softcap * torch.tanh(z / cfg.softcap)
    return z


def token_losses(P, cfg, idx, targets, attn_fn=causal_attention):
    """Per-position CE in nats (0 where target == -1), shape (B, T)."""
    z = forward_logits(P, cfg, idx, attn_fn)
    V = z.shape[-1]
    return F.cross_entropy(z.reshape(-1, V), targets.reshape(-1), ignore_index=-1,
                           reduction="none").view(targets.shape)


def mean_loss(P, cfg, idx, targets, attn_fn=causal_attention):
    z = forward_logits(P, cfg, idx, attn_fn)
    return F.cross_entropy(z.reshape(-1, z.shape[-1]), targets.reshape(-1), ignore_index=-1)


def step_loss_and_grads(P, cfg, inputs, targets):
    """inputs/targets: (G, B, T). loss = mean over micro-batches of the micro-batch mean loss;
    grad = sum over micro-batches of grad(loss_mb)/G."""
    G = inputs.shape[0]
    grads = {n: torch.zeros_like(p) for n, p in P.items()}
    total = 0.0
    for g in range(G):
        leaves = {n: p.detach().requires_grad_(True) for n, p in P.items()}
        loss = mean_loss(leaves, cfg, inputs[g], targets[g])
        names = list(leaves)
        gs = torch.autograd.grad(loss / G, [leaves[n] for n in names])
        for n, gr in zip(names, gs):
            grads[n] += gr
        total += loss.item()
    return total / G, grads


@torch.no_grad()
def val_bpb(P, cfg, inputs, targets, token_bytes, rows_per_chunk=8):
    nats, nbytes = 0.0, 0
    tb = token_bytes.to(torch.int64)
    for r in range(0, inputs.shape[0], rows_per_chunk):
        x, y = inputs[r:r + rows_per_chunk], targets[r:r + rows_per_chunk]
        loss = token_losses(P, cfg, x, y).to(torch.float64)
        nb = torch.where(y >= 0, tb[y.clamp(min=0)], torch.zeros_like(y))
        nats += (loss * (nb > 0)).sum().item()
        nbytes += int(nb.sum().item())
    if nbytes == 0:
        raise DumpError("val.safetensors: no target with token_bytes > 0")
    return nats / (math.log(2) * nbytes)


# ----------------------------------------------------------------------------- optimizers
def polar_express(G):
    X = G / (torch.linalg.norm(G) * 1.01 + 1e-6)
    tall = X.shape[0] > X.shape[1]
    for a, b, c in POLAR_EXPRESS:
        if tall:
            A = X.t() @ X
            X = a * X + X @ (b * A + c * (A @ A))
        else:
            A = X @ X.t()
            X = a * X + (b * A + c * (A @ A)) @ X
    return X


class Optimizer:
    """Muon for transformer.h.* matrices, AdamW for wte and lm_head; hyperparameters per step."""

    def __init__(self, P):
        self.t = 0
        self.state = {n: ({"buf": torch.zeros_like(p)} if is_muon(n) else
                          {"m": torch.zeros_like(p), "v": torch.zeros_like(p)}) for n, p in P.items()}

    @torch.no_grad()
    def step(self, P, grads, hp):
        self.t += 1
        t = self.t
        for n, W in P.items():
            g, st = grads[n], self.state[n]
            if is_muon(n):
                mom, lr, wd = hp["muon_momentum"], hp["muon_lr"], hp["muon_wd"]
                st["buf"] = mom * st["buf"] + (1 - mom) * g
                X = polar_express((1 - mom) * g + mom * st["buf"])
                lr_eff = lr * max(1.0, W.shape[0] / W.shape[1]) ** 0.5
                P[n] = W - lr_eff * X - lr_eff * wd * W
            else:
                key = adamw_group(n)
                lr, b1, b2, wd = (hp[key + "_lr"], hp[key + "_beta1"], hp[key + "_beta2"], hp[key + "_wd"])
                W = W * (1 - lr * wd)
                st["m"] = b1 * st["m"] + (1 - b1) * g
                st["v"] = b2 * st["v"] + (1 - b2) * g * g
                denom = torch.sqrt(st["v"] / (1 - b2 ** t)) + hp["adam_eps"]
                P[n] = W - (lr / (1 - b1 ** t)) * st["m"] / denom


def adamw_group(name):
    if name.startswith("value_embeds."):
        return "ve"
    return {"transformer.wte.weight": "wte", "lm_head.weight": "lm_head", "resid_lambdas": "resid",
            "x0_lambdas": "x0", "backout_lambda": "gate", "smear_gate.weight": "gate", "smear_lambda": "gate",
            "bigram_embed.weight": "bigram"}[name]


def train(P, cfg, inputs, targets, steps_hp, max_steps=None, first=None):
    """Runs S steps; returns the list of losses (each measured before its step's update).
    first: optionally the already computed (loss, grads) of step 0."""
    P = dict(P)
    opt = Optimizer(P)
    S = inputs.shape[0] if max_steps is None else min(max_steps, inputs.shape[0])
    losses = []
    for s in range(S):
        if s == 0 and first is not None:
            loss, grads = first
        else:
            loss, grads = step_loss_and_grads(P, cfg, inputs[s], targets[s])
        losses.append(loss)
        opt.step(P, grads, steps_hp[s])
    return losses


# ----------------------------------------------------------------------------- the dump
def load_dump(d):
    path = os.path.join(d, "config.json")
    if not os.path.isfile(path):
        raise DumpError(f"missing file: {path}")
    try:
        with open(path) as f:
            conf = json.load(f)
    except json.JSONDecodeError as e:
        raise DumpError(f"{path}: not JSON: {e}")
    if not isinstance(conf, dict) or "model" not in conf or "steps" not in conf:
        raise DumpError(f"{path}: needs 'model' and 'steps'")
    cfg = Cfg(conf["model"])
    steps = conf["steps"]
    if not isinstance(steps, list):
        raise DumpError(f"{path}: 'steps' must be a list")
    for i, s in enumerate(steps):
        groups = sorted({adamw_group(n) for n in cfg.shapes() if not is_muon(n)} - {"wte", "lm_head"})
        keys = STEP_KEYS + tuple(f"{g}_{h}" for g in groups for h in ("lr", "beta1", "beta2", "wd"))
        miss = [k for k in keys if k not in s] if isinstance(s, dict) else list(keys)
        if miss:
            raise DumpError(f"{path}: steps[{i}] lacks {miss}")
        steps[i] = {k: float(s[k]) for k in keys}
    G = int(conf.get("grad_accum", 1))

    model, _ = load_safetensors(os.path.join(d, "model.safetensors"))
    shapes = cfg.shapes()
    for n, shp in shapes.items():
        if n not in model:
            raise DumpError(f"model.safetensors: missing tensor {n}")
        if tuple(model[n].shape) != shp:
            raise DumpError(f"model.safetensors: {n} has shape {model[n].shape}, config implies {shp}")
    extra = sorted(set(model) - set(shapes))

    bt, _ = load_safetensors(os.path.join(d, "batches.safetensors"))
    for k in ("inputs", "targets"):
        if k not in bt:
            raise DumpError(f"batches.safetensors: missing {k!r}")
        if bt[k].ndim != 4:
            raise DumpError(f"batches.safetensors: {k} must be (S, G, B, T), got {bt[k].shape}")
    if bt["inputs"].shape != bt["targets"].shape:
        raise DumpError("batches.safetensors: inputs and targets differ in shape")
    S, Gb, B, T = bt["inputs"].shape
    if Gb != G:
        raise DumpError(f"batches.safetensors: G = {Gb} but config grad_accum = {G}")
    if S < 1 or len(steps) < S:
        raise DumpError(f"need S >= 1 and one 'steps' entry per step: S = {S}, steps = {len(steps)}")
    if T > cfg.seq_len:
        print(f"note: batch T = {T} > seq_len {cfg.seq_len}")
    V = cfg.vocab_size
    if bt["inputs"].min() < 0 or bt["inputs"].max() >= V:
        raise DumpError("batches.safetensors: input id out of [0, V)")
    if bt["targets"].min() < -1 or bt["targets"].max() >= V:
        raise DumpError("batches.safetensors: target id out of [-1, V)")

    gr, _ = load_safetensors(os.path.join(d, "grads.safetensors"))
    if "loss" not in gr or gr["loss"].size != 1:
        raise DumpError("grads.safetensors: missing 'loss' of shape (1)")
    for n, shp in shapes.items():
        if n not in gr:
            raise DumpError(f"grads.safetensors: missing gradient {n}")
        if tuple(gr[n].shape) != shp:
            raise DumpError(f"grads.safetensors: {n} has shape {gr[n].shape}, expected {shp}")

    ls, _ = load_safetensors(os.path.join(d, "losses.safetensors"))
    if "losses" not in ls or ls["losses"].ndim != 1 or ls["losses"].shape[0] != S:
        raise DumpError(f"losses.safetensors: need 'losses' of shape ({S},)")

    val = None
    vpath = os.path.join(d, "val.safetensors")
    if os.path.exists(vpath):
        val, _ = load_safetensors(vpath)
        for k in ("inputs", "targets", "token_bytes", "val_bpb"):
            if k not in val:
                raise DumpError(f"val.safetensors: missing {k!r}")
        if val["inputs"].ndim != 2 or val["inputs"].shape != val["targets"].shape:
            raise DumpError("val.safetensors: inputs/targets must both be (N, T)")
        if val["token_bytes"].shape != (V,):
            raise DumpError(f"val.safetensors: token_bytes must be ({V},)")
        if val["inputs"].min() < 0 or val["inputs"].max() >= V or val["targets"].min() < -1 \
                or val["targets"].max() >= V:
            raise DumpError("val.safetensors: token id out of range")
    return dict(cfg=cfg, steps=steps, G=G, model=model, extra=extra, batches=bt, grads=gr,
                losses=ls["losses"], val=val)


def check(d, dtype=torch.float64, grad_rtol=GRAD_RTOL, max_steps=None, out=print, grad_atol=GRAD_ATOL):
    """Returns the list of failures (empty = pass). Raises DumpError on bad input."""
    t0 = time.time()
    D = load_dump(d)
    cfg = D["cfg"]
    S, G, B, T = D["batches"]["inputs"].shape
    out(f"dump {d}: depth {cfg.depth} C {cfg.n_embd} H {cfg.n_head} Hkv {cfg.n_kv_head} D {cfg.head_dim} "
        f"V {cfg.vocab_size} mlp x{cfg.mlp_ratio:g} rope {cfg.rope_base:g} softcap {cfg.softcap:g} "
        f"qk_norm {int(cfg.qk_norm)}; S {S} steps x G {G} x B {B} x T {T}; torch side in {dtype}")
    if D["extra"]:
        out(f"note: model.safetensors has tensors this reference ignores: {D['extra']}")
    P = {n: torch.from_numpy(D["model"][n]).to(dtype) for n in cfg.shapes()}
    inputs = torch.from_numpy(D["batches"]["inputs"]).long()
    targets = torch.from_numpy(D["batches"]["targets"]).long()
    fails = []

    # step-0 loss and gradients
    loss, grads = step_loss_and_grads(P, cfg, inputs[0], targets[0])
    loss_c = float(D["grads"]["loss"].reshape(-1)[0])
    dl = abs(loss - loss_c)
    tol = LOSS_RTOL * max(1.0, abs(loss))
    ok = dl <= tol
    out(f"\nstep-0 loss: torch {loss:.9f}  C {loss_c:.9f}  |diff| {dl:.3e}  tol {tol:.1e}  "
        f"{'ok' if ok else 'FAIL'}")
    if not ok:
        fails.append(f"step-0 loss differs by {dl:.3e} > {tol:.1e}")

    out(f"\ngradients (tol: max|diff| <= {grad_rtol:g}*max|g| + {grad_atol:g})")
    out(f"  {'tensor':<38} {'max|g|':>10} {'max|diff|':>10} {'rel':>9} {'elem rel(info)':>14}")
    for n in cfg.shapes():
        g = grads[n].to(torch.float64)
        gc = torch.from_numpy(D["grads"][n]).to(torch.float64)
        if not torch.isfinite(gc).all():
            out(f"  {n:<38} non-finite values in the C gradient  FAIL")
            fails.append(f"gradient {n}: non-finite values")
            continue
        gmax = g.abs().max().item()
        diff = (g - gc).abs()
        dmax = diff.max().item()
        elem = (diff / (g.abs() + 1e-30)).max().item()
        tol = grad_rtol * gmax + grad_atol
        ok = dmax <= tol
        out(f"  {n:<38} {gmax:10.3e} {dmax:10.3e} {dmax / max(gmax, 1e-30):9.2e} {elem:14.2e}"
            f"  {'ok' if ok else 'FAIL'}")
        if not ok:
            fails.append(f"gradient {n}: max|diff| {dmax:.3e} > tol {tol:.3e} (max|g| {gmax:.3e})")

    # training trajectory
    lc = D["losses"].astype(np.float64)
    losses = train(P, cfg, inputs, targets, D["steps"], max_steps, first=(loss, grads))
    out(f"\nstep losses (tol: |diff| <= {STEP_RTOL:g}*|loss|)")
    out(f"  {'step':>5} {'torch':>14} {'C':>14} {'|diff|':>10} {'rel':>9}")
    for s, l in enumerate(losses):
        dl = abs(l - lc[s])
        rel = dl / max(abs(l), 1e-30)
        ok = rel <= STEP_RTOL and math.isfinite(lc[s])
        out(f"  {s:5d} {l:14.9f} {lc[s]:14.9f} {dl:10.3e} {rel:9.2e}  {'ok' if ok else 'FAIL'}")
        if not ok:
            fails.append(f"step {s} loss: torch {l:.9f} vs C {lc[s]:.9f} (rel {rel:.2e} > {STEP_RTOL:g})")
    if len(losses) < S:
        out(f"  (steps {len(losses)}..{S - 1} not checked: --max-steps)")

    # val_bpb
    if D["val"] is not None:
        V_ = D["val"]
        bpb = val_bpb(P, cfg, torch.from_numpy(V_["inputs"]).long(), torch.from_numpy(V_["targets"]).long(),
                      torch.from_numpy(V_["token_bytes"]).long())
        bpb_c = float(V_["val_bpb"].reshape(-1)[0])
        db = abs(bpb - bpb_c)
        ok = db <= BPB_ATOL
        out(f"\nval_bpb over {V_['inputs'].shape[0]} rows of T {V_['inputs'].shape[1]}: torch {bpb:.9f}  "
            f"C {bpb_c:.9f}  |diff| {db:.3e}  tol {BPB_ATOL:g}  {'ok' if ok else 'FAIL'}")
        if not ok:
            fails.append(f"val_bpb differs by {db:.3e} > {BPB_ATOL:g}")
    else:
        out("\nval_bpb: no val.safetensors, skipped")
    out(f"\n{'PASS' if not fails else 'FAIL'} ({time.time() - t0:.1f} s)")
    return fails


# ----------------------------------------------------------------------------- self-test
def init_params(cfg, gen, dtype, proj_scale=0.0):
    """SPEC §1 init; proj_scale > 0 gives the c_proj matrices U(+-proj_scale*sqrt(3/C)) instead of
    zeros (self-test only, so that every gradient is non-zero)."""
    C = cfg.n_embd
    s = math.sqrt(3.0 / C)

    def U(shape, a):
        return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * a

    P = {}
    for n, shp in cfg.shapes().items():
        if n == "transformer.wte.weight":
            w = torch.randn(shp, generator=gen, dtype=torch.float64) * 0.8
        elif n == "lm_head.weight":
            w = torch.randn(shp, generator=gen, dtype=torch.float64) * 0.001
        elif n.endswith(("c_q.weight", "c_k.weight", "c_v.weight")):
            w = U(shp, s)
        elif n.endswith("c_fc.weight"):
            w = U(shp, 0.4 * s)
        else:  # c_proj
            w = U(shp, proj_scale * s) if proj_scale else torch.zeros(shp, dtype=torch.float64)
        P[n] = w.to(dtype)
    return P


def steps_schedule(S, C):
    """A plausible per-step hyperparameter list (warmup, momentum ramp, decaying wd)."""
    dm = (C / 768) ** -0.5
    out = []
    for s in range(S):
        mult = min(1.0, (s + 1) / 2)
        out.append({"muon_lr": 0.02 * mult, "muon_momentum": 0.85 + 0.1 * s / max(S - 1, 1),
                    "muon_wd": 0.2 * (1 - s / S), "wte_lr": 0.3 * dm * mult, "wte_beta1": 0.8,
                    "wte_beta2": 0.995, "wte_wd": 0.001, "lm_head_lr": 0.008 * dm * mult,
                    "lm_head_beta1": 0.8, "lm_head_beta2": 0.96, "lm_head_wd": 0.01, "adam_eps": 1e-10})
    return out


def write_selftest_dump(d, cfg, seed, S=4, G=2, B=2, N_val=3):
    """Writes a dump computed by this file in float32 (standing in for the C side)."""
    gen = torch.Generator().manual_seed(seed)
    V, T = cfg.vocab_size, cfg.seq_len
    P32 = init_params(cfg, gen, torch.float32, proj_scale=0.5)
    inputs = torch.randint(0, V, (S, G, B, T), generator=gen)
    targets = torch.randint(0, V, (S, G, B, T), generator=gen)
    targets[0, 0, 0, :3] = -1  # some ignored targets
    steps = steps_schedule(S, cfg.n_embd)
    loss0, grads = step_loss_and_grads(P32, cfg, inputs[0], targets[0])
    losses = train(P32, cfg, inputs, targets, steps, first=(loss0, grads))
    vin = torch.randint(0, V, (N_val, T), generator=gen)
    vtg = torch.randint(0, V, (N_val, T), generator=gen)
    vtg[1, -2:] = -1
    tb = torch.randint(1, 9, (V,), generator=gen)
    tb[-9:] = 0  # "special tokens"
    vtg[0, 0:2] = V - 1  # a few targets with 0 bytes
    bpb = val_bpb(P32, cfg, vin, vtg, tb)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"model": cfg.as_dict(), "steps": steps, "grad_accum": G}, f, indent=1)
    save_safetensors(os.path.join(d, "model.safetensors"), {n: p.numpy() for n, p in P32.items()},
                     {"config": json.dumps(cfg.as_dict())})
    i32 = lambda t: t.numpy().astype(np.int32)
    save_safetensors(os.path.join(d, "batches.safetensors"), {"inputs": i32(inputs), "targets": i32(targets)})
    g = {n: t.numpy().astype(np.float32) for n, t in grads.items()}
    g["loss"] = np.array([loss0], dtype=np.float32)
    save_safetensors(os.path.join(d, "grads.safetensors"), g)
    save_safetensors(os.path.join(d, "losses.safetensors"), {"losses": np.array(losses, dtype=np.float32)})
    save_safetensors(os.path.join(d, "val.safetensors"),
                     {"inputs": i32(vin), "targets": i32(vtg), "token_bytes": i32(tb),
                      "val_bpb": np.array([bpb], dtype=np.float64)})


def selftest(keep=None):
    t0 = time.time()
    results = []

    def rep(name, ok, detail=""):
        results.append((name, ok))
        print(f"[{'ok' if ok else 'FAIL'}] {name}{': ' + detail if detail else ''}", flush=True)

    gen = torch.Generator().manual_seed(1234)
    base = dict(depth=2, n_embd=64, n_head=2, n_kv_head=2, head_dim=32, seq_len=16, vocab_size=300,
                mlp_ratio=4, rope_base=100000.0, softcap=15.0, qk_norm=True)

    # 1. safetensors round trip
    with tempfile.TemporaryDirectory() as td:
        a = {"f": np.random.RandomState(0).randn(3, 4).astype(np.float32), "d": np.arange(5.0),
             "i": np.arange(-3, 3, dtype=np.int32).reshape(2, 3), "l": np.array([2**40], dtype=np.int64)}
        save_safetensors(os.path.join(td, "x.safetensors"), a, {"k": "v"})
        b, meta = load_safetensors(os.path.join(td, "x.safetensors"))
        rep("safetensors round trip", meta == {"k": "v"} and all(
            b[k].dtype == a[k].dtype and np.array_equal(b[k], a[k]) for k in a))
        with open(os.path.join(td, "bad.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", 10**6) + b"{}")
        try:
            load_safetensors(os.path.join(td, "bad.safetensors"))
            rep("malformed safetensors rejected", False)
        except DumpError as e:
            rep("malformed safetensors rejected", True, str(e).split(": ", 1)[1])

    # 2. attention: matrix form vs per-position loop, MHA and GQA, without and with a window
    for Hkv, W in ((4, 0), (2, 0), (1, 0), (2, 2), (1, 1)):
        q = torch.randn(2, 4, 7, 8, generator=gen, dtype=torch.float64)
        k = torch.randn(2, Hkv, 7, 8, generator=gen, dtype=torch.float64)
        v = torch.randn(2, Hkv, 7, 8, generator=gen, dtype=torch.float64)
        e = (causal_attention(q, k, v, W) - causal_attention_loop(q, k, v, W)).abs().max().item()
        rep(f"attention vs loop form (H 4, Hkv {Hkv}, window {W})", e < 1e-12, f"max|diff| {e:.1e}")
    if hasattr(F, "scaled_dot_product_attention"):
        q = torch.randn(2, 4, 7, 8, generator=gen, dtype=torch.float64)
        k = torch.randn(2, 4, 7, 8, generator=gen, dtype=torch.float64)
        v = torch.randn(2, 4, 7, 8, generator=gen, dtype=torch.float64)
        e = (causal_attention(q, k, v) - F.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max().item()
        rep("attention vs F.scaled_dot_product_attention", e < 1e-12, f"max|diff| {e:.1e}")
        sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=~attention_mask(7, 3))  # True = may attend
        e = (causal_attention(q, k, v, 3) - sdpa).abs().max().item()
        rep("windowed attention vs F.scaled_dot_product_attention with the mask", e < 1e-12, f"max|diff| {e:.1e}")
    else:
        print(f"[--] F.scaled_dot_product_attention not in torch {torch.__version__}; loop form used instead")

    # 3. RoPE vs complex multiplication by exp(-i*t*inv_freq)
    Dh, T = 16, 9
    x = torch.randn(2, 3, T, Dh, generator=gen, dtype=torch.float64)
    cos, sin = rope_tables(T, Dh, 100000.0, torch.float64)
    inv = torch.tensor([100000.0 ** (-2 * j / Dh) for j in range(Dh // 2)], dtype=torch.float64)
    rot = torch.polar(torch.ones(T, Dh // 2, dtype=torch.float64), -torch.arange(T, dtype=torch.float64)[:, None] * inv)
    zc = torch.complex(x[..., :Dh // 2], x[..., Dh // 2:]) * rot
    e = (apply_rope(x, cos, sin) - torch.cat([zc.real, zc.imag], -1)).abs().max().item()
    rep("RoPE vs complex rotation", e < 1e-12, f"max|diff| {e:.1e}")

    # 4. RMSNorm vs the textbook formula
    x = torch.randn(5, 64, generator=gen, dtype=torch.float64)
    ref = x / torch.sqrt((x * x).sum(-1, keepdim=True) / 64 + RMS_EPS)
    e = (rms_norm(x) - ref).abs().max().item()
    rep("RMSNorm", e < 1e-13, f"max|diff| {e:.1e}")

    # 5. Polar Express: tall form == transpose of wide form; singular values pulled towards 1
    Gm = torch.randn(24, 10, generator=gen, dtype=torch.float64)
    e = (polar_express(Gm) - polar_express(Gm.t()).t()).abs().max().item()
    sv = torch.linalg.svdvals(polar_express(Gm))
    rep("Polar Express tall == wide^T", e < 1e-12, f"max|diff| {e:.1e}")
    rep("Polar Express near-orthogonal", 0.6 < sv.min().item() and sv.max().item() < 1.3,
        f"singular values in [{sv.min().item():.3f}, {sv.max().item():.3f}]")

    # 6. autograd vs finite differences on a double-precision micro model
    for kv, sc, qn in ((2, 15.0, True), (1, 0.0, False)):
        mc = Cfg(dict(base, depth=1, n_embd=16, n_head=2, n_kv_head=kv, head_dim=8, seq_len=4,
                      vocab_size=20, softcap=sc, qk_norm=qn))
        Pm = init_params(mc, gen, torch.float64, proj_scale=1.0)
        Pm["lm_head.weight"] = Pm["lm_head.weight"] * 300  # so the logits are not ~0
        names = list(Pm)
        idx = torch.randint(0, 20, (2, 4), generator=gen)
        tg = torch.randint(0, 20, (2, 4), generator=gen)
        tg[0, 1] = -1
        fn = lambda *ts: mean_loss(dict(zip(names, ts)), mc, idx, tg)
        ts = tuple(Pm[n].clone().requires_grad_(True) for n in names)
        ok = torch.autograd.gradcheck(fn, ts, eps=1e-6, atol=1e-7, rtol=1e-5, raise_exception=False)
        rep(f"gradcheck micro model (depth 1, C 16, T 4, V 20, Hkv {kv}, softcap {sc:g}, qk_norm {int(qn)})", ok)

    # 7. the full model with the loop attention gives the same loss and gradients
    cfg = Cfg(base)
    P = init_params(cfg, gen, torch.float64, proj_scale=0.5)
    idx = torch.randint(0, 300, (2, 16), generator=gen)
    tg = torch.randint(0, 300, (2, 16), generator=gen)
    l1 = mean_loss(P, cfg, idx, tg).item()
    l2 = mean_loss(P, cfg, idx, tg, attn_fn=causal_attention_loop).item()
    rep("model loss, matrix vs loop attention", abs(l1 - l2) < 1e-12, f"{l1:.12f} vs {l2:.12f}")

    # 8. end to end: float32 dump vs float64 check (MHA and GQA), plus negative checks
    tmp = keep or tempfile.mkdtemp(prefix="torch_ref_selftest_")
    try:
        for name, kv in (("mha", 2), ("gqa", 1)):
            d = os.path.join(tmp, name)
            c = Cfg(dict(base, n_kv_head=kv))
            write_selftest_dump(d, c, seed=7 + kv)
            print(f"\n--- check of the float32 dump {name} against float64 ---")
            fails = check(d, torch.float64)
            rep(f"dump check {name} (fp32 dump vs fp64 torch)", not fails, "; ".join(fails))
        d = os.path.join(tmp, "mha")
        quiet = lambda *a, **k: None
        # a corrupted gradient must be caught
        g, _ = load_safetensors(os.path.join(d, "grads.safetensors"))
        g0 = dict(g)
        n = "transformer.h.1.attn.c_k.weight"
        g[n] = g[n].copy()
        g[n][3, 5] += 0.01 * np.abs(g[n]).max()
        save_safetensors(os.path.join(d, "grads.safetensors"), g)
        fails = check(d, torch.float64, out=quiet)
        rep("corrupted gradient detected", any(n in f for f in fails) and len(fails) == 1, "; ".join(fails))
        save_safetensors(os.path.join(d, "grads.safetensors"), g0)
        # a wrong step loss and val_bpb must be caught
        ls, _ = load_safetensors(os.path.join(d, "losses.safetensors"))
        bad = ls["losses"].copy()
        bad[2] *= 1.001
        save_safetensors(os.path.join(d, "losses.safetensors"), {"losses": bad})
        v, _ = load_safetensors(os.path.join(d, "val.safetensors"))
        v2 = dict(v, val_bpb=v["val_bpb"] + 1e-3)
        save_safetensors(os.path.join(d, "val.safetensors"), v2)
        fails = check(d, torch.float64, out=quiet)
        rep("wrong step loss and val_bpb detected",
            len(fails) == 2 and "step 2" in fails[0] and "val_bpb" in fails[1], "; ".join(fails))
        # a missing file is a DumpError
        os.remove(os.path.join(d, "batches.safetensors"))
        try:
            check(d, torch.float64, out=quiet)
            rep("missing file -> DumpError", False)
        except DumpError as e:
            rep("missing file -> DumpError", True, str(e))
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"(self-test dumps kept in {keep}; mha was modified by the negative checks)")

    nfail = sum(1 for _, ok in results if not ok)
    print(f"\nself-test: {len(results) - nfail} passed, {nfail} failed ({time.time() - t0:.1f} s)")
    return 0 if nfail == 0 else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description="PyTorch reference / parity checker for frontier's model "
                                             "and optimizers (see the module docstring).")
    ap.add_argument("dir", nargs="?", help="dump folder written by the C side")
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    ap.add_argument("--grad-rtol", type=float, default=GRAD_RTOL,
                    help=f"gradient tolerance relative to max|g| per tensor (default {GRAD_RTOL:g})")
    ap.add_argument("--grad-atol", type=float, default=GRAD_ATOL,
                    help=f"absolute gradient tolerance added to the relative one (default {GRAD_ATOL:g})")
    ap.add_argument("--max-steps", type=int, default=None, help="check only the first N step losses")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--selftest", action="store_true", help="run the self-test (no C dump needed)")
    ap.add_argument("--keep", default=None, help="with --selftest: write the self-test dumps here")
    a = ap.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.selftest:
        return selftest(a.keep)
    if not a.dir:
        ap.print_usage(sys.stderr)
        print("error: DIR is required (or --selftest)", file=sys.stderr)
        return 2
    try:
        fails = check(a.dir, getattr(torch, a.dtype), a.grad_rtol, a.max_steps, grad_atol=a.grad_atol)
    except DumpError as e:
        print(f"error: malformed or missing dump: {e}", file=sys.stderr)
        return 2
    if fails:
        print("\nfailures:")
        for f in fails:
            print(f"  - {f}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
