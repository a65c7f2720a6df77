#!/usr/bin/env python3
"""tests/fuzz/gen_seeds.py — the seed corpora that are not written by frontier's own writers:
token shards cut from a real prepared shard, research ledgers, CORE task files cut from the
CORE bundle, and hand-made edge cases of each format (run by gen_seeds.sh)."""
import json
import os
import struct
import sys

val_shard, core_dir, out = sys.argv[1], sys.argv[2], sys.argv[3]
BOS = 8183  # <|bos|> of the default corpus's tokenizer (vocab 8192)


def put(sub, name, data):
    d = os.path.join(out, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def shard(tokens, count=None):
    h = [20240520, 1, len(tokens) if count is None else count] + [0] * 253
    return struct.pack("<256i", *h) + struct.pack("<%dH" % len(tokens), *tokens)


# --- shards: the first documents of the real validation shard, cropped ----------------------------
raw = open(val_shard, "rb").read()
toks = struct.unpack("<%dH" % ((len(raw) - 1024) // 2), raw[1024:])
docs, cur = [], []
for t in toks[:200000]:
    if t == BOS and cur:
        docs.append(cur)
        cur = []
    cur.append(t)
    if len(docs) == 6:
        break
put("shard", "real_6_docs_cropped.bin", shard([t for d in docs for t in d[:120]]))
put("shard", "real_2_docs_long.bin", shard([t for d in docs[:2] for t in d[:1500]]))
put("shard", "real_short_docs.bin", shard([t for d in docs for t in d[:3]] + [BOS]))
put("shard", "empty.bin", shard([]))
put("shard", "bos_only.bin", shard([BOS]))
put("shard", "bos_bos_bos.bin", shard([BOS, BOS, BOS, 5]))
put("shard", "id_past_vocab.bin", shard([BOS, 10, 9000, 11]))
put("shard", "id_65535.bin", shard([BOS, 65535]))
put("shard", "first_not_bos.bin", shard([7, BOS, 8]))
put("shard", "truncated.bin", shard([BOS, 1, 2], count=10))
put("shard", "trailing_byte.bin", shard([BOS, 1]) + b"\0")
put("shard", "bad_magic.bin", b"\x00" + shard([BOS])[1:])
put("shard", "negative_count.bin", shard([BOS], count=-1))

# --- ledgers -------------------------------------------------------------------------------------
V16 = ("trial\tparent\tkind\tbudget_s\tseed\tchange\tval_bpb\tpaired\tz\ttokens\ttok_per_s\tmfu\tpeak_mb\twall_s\t"
       "status\tdescription")
HEADER = V16 + "\tbatch\n"
OLD = "trial\tparent\tkind\tbudget_s\tchange\tval_bpb\ttokens\ttok_per_s\tmfu\tpeak_mb\twall_s\tstatus\tdescription\n"
rows = [
    "1\t-\tbaseline\t120\t42\t{}\t2.113100\t-\t-\t933888\t3097.3\t0.07610\t583.8\t131.2\tkeep\tbaseline\t1\n",
    "2\t1\tbaseline\t120\t43\t{\"seed\":43}\t2.120000\t-\t-\t933888\t3090.0\t0.07600\t583.0\t130.9\treplicate\tseed 43\t1\n",
    "3\t1\tgreedy\t120\t42\t{\"matrix-lr\":0.03}\t-\t-\t-\t-\t-\t-\t-\t12.0\tcrash\tsimulated crash\t-\n",
    "4\t1\ttwin\t120\t42\t{\"seed\":42}\t2.110000\t-\t-\t933888\t3090.0\t0.07600\t583.0\t130.9\treplicate\ttwin\t4\n",
    "5\t1\tgreedy\t120\t42\t{\"depth\":3}\t2.05\t2.110000\t1.250\t900000\t3000\t0.08\t610\t140\tpending\td -0.06\t4\n",
    "6\t1\ttwin\t120\t43\t{\"seed\":43}\t2.120000\t-\t-\t933888\t3090.0\t0.07600\t583.0\t130.9\treplicate\ttwin\t4\n",
    "7\t5\tseed\t120\t43\t{\"seed\":43}\t2.06\t2.120000\t2.900\t900000\t3000\t0.08\t610\t140\tkeep\tkept\t4\n",
    "8\t7\tagent\t120\t42\t{\"n-head\":4}\t-\t-\t-\t-\t-\t-\t-\t1.5\trejected\trejected: derived\t-\n",
]
put("ledger", "results.tsv", HEADER + "".join(rows))
put("ledger", "v16.tsv", V16 + "\n" + "".join(r[: r.rindex("\t")] + "\n" for r in rows))
put("ledger", "threshold_rule.tsv", OLD)
put("ledger", "header_only.tsv", HEADER)
put("ledger", "torn_last_row.tsv", HEADER + rows[0] + rows[1][:25])
put("ledger", "negative_val_bpb.tsv", HEADER + rows[0].replace("2.113100", "-5"))
put("ledger", "batch_after_row.tsv", HEADER + rows[0].replace("\t1\n", "\t9\n"))
put("ledger", "sixteen_fields.tsv", HEADER + rows[0].replace("\tkeep", ""))
put("ledger", "crlf.tsv", HEADER + rows[0].replace("\n", "\r\n"))
put("ledger", "empty.tsv", "")

# --- CORE: byte 0 picks the reader (fuzz_core.c), byte 1 the few-shot count ------------------------
def core(mode, shots, text):
    return bytes([mode, shots]) + (text if isinstance(text, bytes) else text.encode())


put("core", "core_yaml", core(0, 0, open(os.path.join(core_dir, "core.yaml"), "rb").read()))
put("core", "yaml_alias", core(0, 0, "icl_tasks:\n- &t {label: a, dataset_uri: a.jsonl, num_fewshot: [2],"
                                     " icl_task_type: schema}\n- *t\n"))
put("core", "meta_csv", core(1, 0, open(os.path.join(core_dir, "eval_meta_data.csv"), "rb").read()[:6000]))
put("core", "csv_quoted", core(1, 0, 'Eval Task,Random baseline\n"mc",25\n"sch""ema",50.5\r\nlm,"0"\n'))
yaml = open(os.path.join(core_dir, "core.yaml")).read()
picked = {}
for block in yaml.split("\n-")[1:]:
    kv = dict(l.strip().split(": ", 1) for l in block.strip().splitlines() if ": " in l)
    picked.setdefault(kv["icl_task_type"], kv["dataset_uri"])
for mode, kind in ((2, "multiple_choice"), (3, "schema"), (4, "language_modeling")):
    path = os.path.join(core_dir, "eval_data", picked[kind])
    lines = open(path, "rb").read().split(b"\n")[:6]
    put("core", kind + "_rows", core(mode, 2, b"\n".join(lines) + b"\n"))
put("core", "mc_gold_out_of_range", core(2, 0, '{"query": "q", "choices": ["a", "b"], "gold": 2}\n'
                                                '{"query": "r", "choices": ["c"], "gold": 0}\n'))
put("core", "lm_unicode_space", core(4, 1, '{"context": "\\u3000 x \\u2028", "continuation": " y"}\n'
                                           '{"context": "z", "continuation": "w"}\n\n'))

# --- config: what `frontier train --config` reads (keys are its flag names) ------------------------
put("config", "train_config.json", json.dumps({
    "depth": 2, "n-embd": 128, "seq-len": 256, "batch-tokens": 16384, "matrix-lr": 0.02, "normuon": True,
    "window-pattern": "SSSL", "budget": "5m", "run-dir": None, "seed": 42}, indent=2))
put("config", "old_model_config.json", json.dumps({
    "depth": 2, "n_embd": 128, "n_head": 1, "n_kv_head": 1, "head_dim": 128, "seq_len": 256,
    "vocab_size": 8192, "mlp_ratio": 4, "rope_base": 100000, "softcap": 15, "qk_norm": 1}))
