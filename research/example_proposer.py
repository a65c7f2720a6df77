#!/usr/bin/python3
# research/example_proposer.py — a minimal proposer for `frontier research --proposer`.
#
#   frontier research --budget-per-trial 2m --trials 20 --proposer "/usr/bin/python3 research/example_proposer.py"
#
# Reads the bundle (JSON on stdin: protocol, space, base, best, baseline, keep_rule, ledger), picks
# one param of the space at random, draws a new valid value for it (on its grid, inside its range,
# different from the best config's value), checks the space's constraints the way frontier does
# (derived settings recomputed first), and prints one JSON object: {"change": {...}, "description":
# "..."}. Standard library only. A real agent would read the ledger and the protocol and reason;
# this one shows the plumbing. Seeded by the trial number, so a rerun proposes the same thing.
import json
import math
import random
import sys


def evaluate(expr, cfg):
    """A space expression: a number, a setting name, or {"div"|"mul"|"min"|"max": [a, b]}."""
    if isinstance(expr, (int, float)):
        return expr
    if isinstance(expr, str):
        return float(cfg[expr])
    (op, (a, b)), = expr.items()
    a, b = evaluate(a, cfg), evaluate(b, cfg)
    if op == "div":
        if b == 0 or a % b:
            raise ValueError("not divisible")
        return a / b
    return {"mul": a * b, "min": min(a, b), "max": max(a, b)}[op]


def reads(expr, names):
    if isinstance(expr, str):
        return expr in names
    if isinstance(expr, dict):
        (_, args), = expr.items()
        return any(reads(x, names) for x in args)
    return False


def feasible(space, best, change):
    """Apply change to best like frontier does: derive what depends on a changed setting, check constraints."""
    cfg = dict(best)
    changed = {k for k, v in change.items() if cfg.get(k) != v}
    cfg.update(change)
    try:
        for target, expr in space.get("derive", {}).items():
            if target in change or not reads(expr, changed):
                continue
            v = evaluate(expr, cfg)
            if cfg.get(target) != v:
                cfg[target] = int(v) if v == int(v) else v
                changed.add(target)
        for c in space.get("constraints", []):
            (kind, (a, b)), = c.items()
            if not (reads(a, changed) or reads(b, changed)):
                continue
            a, b = evaluate(a, cfg), evaluate(b, cfg)
            if (kind == "divides" and (a <= 0 or b % a)) or (kind == "le" and a > b):
                return False
    except (ValueError, KeyError):
        return False
    return bool(changed)


def draw(rng, name, p, current):
    kind = p["type"]
    if kind == "bool":
        on = current in (True, 1)
        return (not on) if isinstance(current, bool) else int(not on)
    if kind == "choice":
        return rng.choice([v for v in p["values"] if v != current] or p["values"])
    lo, hi, step = p["min"], p["max"], p.get("step", 1 if kind == "int" else 0)
    if p.get("log"):
        x = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    else:
        x = rng.uniform(lo, hi)
    if step:
        x = lo + round((x - lo) / step) * step
    else:
        x = float(f"{x:.3g}")
    x = min(hi, max(lo, x))
    return int(round(x)) if kind == "int" else round(x, 10)


def main():
    bundle = json.load(sys.stdin)
    space, best = bundle["space"], bundle["best"]["config"]
    rng = random.Random(bundle["trial"])
    params = list(space["params"].items())
    for _ in range(1000):
        name, p = rng.choice(params)
        value = draw(rng, name, p, best.get(name))
        change = {name: value}
        if value != best.get(name) and feasible(space, best, change):
            print(json.dumps({"change": change,
                              "description": f"random move of {name} (best so far {bundle['best']['val_bpb']:.4f})"}))
            return 0
    print("no feasible proposal found", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
