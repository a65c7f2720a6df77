#!/usr/bin/python3
# bench/plan_worth_check.py — the discount δ of the mixture the validation trained (pick-mix against
# pick, paired by seed in bench/results/plan/validation.tsv), solved by the bench's fitted law as
# planner/worth.c solves a worth run's pair: the δ at which the law's predicted difference between
# the two runs (each at its own scaling parameters and tokens trained) equals the measured one. A
# check of the worth measured at 2 and 5 minutes against longer, independent runs. No training.
#
#   /usr/bin/python3 bench/plan_worth_check.py
import csv, glob, json, math, re, sys

R = "bench/results/plan"
law = json.load(open(glob.glob(f"{R}/cache/plan/scaling-*.json")[0]))["law"]


def eff(D, U):  # planner/scaling.h: D' of D tokens drawn from U unique ones
    if U <= 0 or D <= U: return D
    r = law["rstar"]
    return U + U * r * (1 - math.exp(-(D / U - 1) / r))


def loss(N, D, parts):  # parts: (share, unique tokens, discount) per source
    Dp = max(1.0, sum((1 - d) * eff(w * D, U) for w, U, d in parts))
    return law["E"] + law["A"] / N ** law["alpha"] + law["B"] / Dp ** law["beta"]


def plan_table(budget):  # depth -> N, and each source's unique tokens, from the plans the arms trained
    text = open(f"{R}/plan-{budget}-mix.md").read()
    N = {int(l.split("|")[2]): float(l.split("|")[5].strip().rstrip("M")) * 1e6
         for l in text.splitlines() if re.match(r"\| \d+ \|", l)}
    U = {m[1]: float(m[2]) * 1e6 for m in re.finditer(r"^  (\S+) +[0-9.]+ of the tokens, ([0-9.]+)M unique", text, re.M)}
    return N, U


rows = list(csv.DictReader(open(f"{R}/validation.tsv"), delimiter="\t"))
print("| budget | seed | mixture | mixture − pick, measured | δ solved | a token worth |")
print("|---|---|---|---|---|---|")
for b in sorted({r["budget"] for r in rows}):
    N, U = plan_table(b)
    for mix in (r for r in rows if r["budget"] == b and r["arm"] == "pick-mix"):
        pick = next((r for r in rows if r["budget"] == b and r["arm"] == "pick" and r["seed"] == mix["seed"]), None)
        if not pick: continue
        (src, w), = [(s.split("=")[0], float(s.split("=")[1])) for s in mix["mix"].split(",")]
        dL = float(mix["val_bpb"]) - float(pick["val_bpb"])
        L0 = loss(N[int(pick["depth"])], float(pick["tokens"]), [(1, U["train"], 0)])
        f = lambda d: loss(N[int(mix["depth"])], float(mix["tokens"]), [(1 - w, U["train"], 0), (w, U[src], d)]) - L0
        lo, hi = -1.0, 1 / w - 0.01  # planner/worth.h's range
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < dL else (lo, mid)
        print(f"| {b} | {mix['seed']} | {mix['mix']} | {dL:+.4f} | {lo:.2f} | {1 - lo:.2f} |")
sys.exit(0)
