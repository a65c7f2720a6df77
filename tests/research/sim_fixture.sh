# tests/research/sim_fixture.sh — the simulated trainer's research fixture (sourced by the tests
# that drive `frontier research --trainer tests/research/sim_trainer.py`): sim_fixture DIR writes
# DIR/base.json, a tiny base (its one-step probe is quick) holding every effect setting of
# sim_trainer.py's GOOD at its worse value, and DIR/space.json, those 8 settings at their two
# values plus 4 settings with no effect.
sim_fixture() {
  cat > "$1/base.json" <<'JSON'
{"depth": 1, "n-embd": 64, "n-head": 2, "head-dim": 32, "seq-len": 64, "device-batch": 4, "batch-tokens": 512,
 "eval-tokens": 2000, "threads": 1, "matrix-lr": 0.02, "embedding-lr": 0.3, "unembedding-lr": 0.004,
 "weight-decay": 0.2, "warmdown": 0.4, "final-lr-frac": 0.0, "scalar-lr": 0.5, "adam-eps": 1e-8,
 "momentum-end": 0.95, "gate-lr": 0.02, "rope-base": 10000, "softcap": 15}
JSON
  cat > "$1/space.json" <<'JSON'
{"params": {"matrix-lr": {"type": "choice", "values": [0.02, 0.03]},
            "embedding-lr": {"type": "choice", "values": [0.3, 0.4]},
            "unembedding-lr": {"type": "choice", "values": [0.004, 0.006]},
            "weight-decay": {"type": "choice", "values": [0.2, 0.1]},
            "warmdown": {"type": "choice", "values": [0.4, 0.6]},
            "final-lr-frac": {"type": "choice", "values": [0.0, 0.1]},
            "scalar-lr": {"type": "choice", "values": [0.5, 0.3]},
            "adam-eps": {"type": "choice", "values": [1e-8, 1e-9]},
            "momentum-end": {"type": "choice", "values": [0.95, 0.9, 0.97]},
            "gate-lr": {"type": "choice", "values": [0.02, 0.01, 0.04]},
            "rope-base": {"type": "choice", "values": [10000, 50000, 100000]},
            "softcap": {"type": "choice", "values": [15, 20, 30]}}}
JSON
}
