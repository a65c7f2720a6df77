#!/usr/bin/python3
"""tests/research/sim_trainer.py — a stand-in for `frontier train` with known effects and known
noise, for `frontier research --trainer`: called as `sim_trainer.py --config F --run-dir D --quiet`,
it writes D/summary.json with val_bpb = f(config) + noise and nothing else.

f: 1.5, minus EFFECT for each setting of GOOD that the config holds at its good value (a research
that moves one of them from the base's value to the good one makes a true improvement of EFFECT;
moving it back is as much worse); every other setting has no effect. SIM_REVERSE="SECONDS:a,b"
reverses the effects of settings a and b in runs whose budget is SECONDS or more: changes that
help short runs and hurt long ones (for --promote-budget).
noise: SIGMA * (sqrt(RHO) * g(seed) + sqrt(1 - RHO) * h(seed, config)), g and h independent
standard normals from a hash, so runs on one seed share the part RHO of their variance (the data
order and init a seed fixes) and the rest is the config's own luck. SALT (the environment's
SIM_SALT) makes each simulated research draw its own noise.

The same module gives the audit its true effects (true_value), so the test and the trainer cannot
disagree on what is a real effect.
"""
import json, math, os, random, sys

# The interpreter's own SHA-256 (the digest hashlib gives), without loading OpenSSL: the simulated
# researches start this script ~600 times, and its start-up is most of their time.
from _sha256 import sha256

GOOD = {"matrix-lr": 0.03, "embedding-lr": 0.4, "unembedding-lr": 0.006, "weight-decay": 0.1,
        "warmdown": 0.6, "final-lr-frac": 0.1, "scalar-lr": 0.3, "adam-eps": 1e-9}
SIGMA = float(os.environ.get("SIM_SIGMA", "0.01"))
RHO = float(os.environ.get("SIM_RHO", "0.8"))
EFFECT = float(os.environ.get("SIM_EFFECT_SD", "2")) * SIGMA


def budget_s(config):
    b = str(config.get("budget", "300s"))
    return float(b[:-1]) * {"s": 1, "m": 60, "h": 3600}[b[-1]] if b[-1] in "smh" else float(b)


def true_value(config):
    at, _, names = os.environ.get("SIM_REVERSE", "").partition(":")
    reversed_ = set(names.split(",")) if at and budget_s(config) >= float(at) else set()
    return 1.5 - EFFECT * sum(-1 if k in reversed_ else 1
                              for k, v in GOOD.items() if k in config and math.isclose(config[k], v, rel_tol=1e-9))


def normal(*key):
    h = sha256(repr((os.environ.get("SIM_SALT", ""),) + key).encode()).digest()
    return random.Random(h).gauss(0, 1)


# The settings a simulated research varies (sim_fixture.sh's space): a run's own luck is keyed by
# them alone, so a setting added to the trainer (which every resolved config then holds) changes
# no draw, and the simulated researches' outcomes stay what they were.
SPACE = sorted(GOOD) + ["momentum-end", "gate-lr", "rope-base", "softcap"]


def value(config):
    seed = config.get("seed", 42)
    own = json.dumps({k: config.get(k) for k in SPACE}, sort_keys=True)
    return true_value(config) + SIGMA * (math.sqrt(RHO) * normal("seed", seed) + math.sqrt(1 - RHO) * normal("run", seed, own))


if __name__ == "__main__":
    args = sys.argv[1:]
    cfg, run = args[args.index("--config") + 1], args[args.index("--run-dir") + 1]
    config = json.load(open(cfg))
    os.makedirs(run, exist_ok=True)
    with open(os.path.join(run, "summary.json"), "w") as f:
        json.dump({"val_bpb": value(config), "tokens_trained": 1000, "tok_per_s": 1000, "timed_s": 1}, f)
