#!/usr/bin/env python3
"""bench/plan_law_check.py — the loss model against validation runs, with the throughput model's
error taken out: a fitted law (default: bench/results/plan/cache/plan/scaling-*.json, the one the
validation's plans used) evaluated at the tokens each run actually trained, beside its measured
val_bpb; and the same with the paper's R* (15.4) in place of the fitted one. Only runs on the
corpus alone (no mixture) are priced.

    /usr/bin/python3 bench/plan_law_check.py                      # every run of validation.tsv
    /usr/bin/python3 bench/plan_law_check.py --law F --budget 30m --label "fit without 30m"
"""
import argparse, csv, glob, json, math

R = "bench/results/plan"
U = 44419159  # the default corpus's training tokens (frontier plan's "44.42M training tokens")
N = {1: 1.25e6, 2: 1.44e6}  # scaling parameters of depth 1 and 2 at width 128 (frontier plan's N column)

ap = argparse.ArgumentParser()
ap.add_argument("--law", default=None, help="a scaling-*.json written by frontier plan --fit")
ap.add_argument("--budget", action="append", help="only these budgets (repeatable)")
ap.add_argument("--label", default="", help="a first column naming the law")
ap.add_argument("--no-header", action="store_true")
a = ap.parse_args()
law = json.load(open(a.law or sorted(glob.glob(f"{R}/cache/plan/scaling-*.json"))[0]))["law"]


def L(n, d, rstar):
    r = d / U - 1
    dp = d if r <= 0 else U + U * rstar * (1 - math.exp(-r / rstar))
    return law["E"] + law["A"] / n ** law["alpha"] + law["B"] / dp ** law["beta"]


lab = (lambda s: f"| {s} ") if a.label else (lambda s: "")
if not a.no_header:
    print(lab("law") + "| budget | arm | seed | depth | tokens | measured | law at these tokens | measured − law | law with R* 15.4 |")
    print(lab("---") + "|---|---|---|---|---|---|---|---|---|")
for row in csv.DictReader(open(f"{R}/validation.tsv"), delimiter="\t"):
    if row["mix"] != "-" or int(row["depth"]) not in N or (a.budget and row["budget"] not in a.budget):
        continue
    n, d, m = N[int(row["depth"])], float(row["tokens"]), float(row["val_bpb"])
    fit = L(n, d, law["rstar"])
    print(lab(a.label) + f"| {row['budget']} | {row['arm']} | {row['seed']} | {row['depth']} | {d / 1e6:.1f}M | {m:.4f} | "
          f"{fit:.4f} | {m - fit:+.4f} | {L(n, d, 15.4):.4f} |")
