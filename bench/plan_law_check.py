#!/usr/bin/env python3
"""bench/plan_law_check.py — the loss model against every validation run, with the throughput
model's error taken out: the fitted law (bench/results/plan/cache/plan/scaling-*.json) evaluated at
the tokens each run actually trained, beside its measured val_bpb; and the same with the paper's
R* (15.4) in place of the fitted one. Only runs on the corpus alone (no mixture) are priced.

    /usr/bin/python3 bench/plan_law_check.py        # reads bench/results/plan/validation.tsv
"""
import csv, glob, json, math, sys

R = "bench/results/plan"
law = json.load(open(sorted(glob.glob(f"{R}/cache/plan/scaling-*.json"))[0]))["law"]
U = 44419159  # the default corpus's training tokens (frontier plan's "44.42M training tokens")
N = {1: 1.25e6, 2: 1.44e6}  # scaling parameters of depth 1 and 2 (frontier plan's N column)


def L(n, d, rstar):
    r = d / U - 1
    dp = d if r <= 0 else U + U * rstar * (1 - math.exp(-r / rstar))
    return law["E"] + law["A"] / n ** law["alpha"] + law["B"] / dp ** law["beta"]


print("| budget | arm | seed | depth | tokens | measured | law at these tokens | measured − law | law with R* 15.4 |")
print("|---|---|---|---|---|---|---|---|---|")
for row in csv.DictReader(open(f"{R}/validation.tsv"), delimiter="\t"):
    if row["mix"] != "-" or int(row["depth"]) not in N:
        continue
    n, d, m = N[int(row["depth"])], float(row["tokens"]), float(row["val_bpb"])
    fit = L(n, d, law["rstar"])
    print(f"| {row['budget']} | {row['arm']} | {row['seed']} | {row['depth']} | {d / 1e6:.1f}M | {m:.4f} | {fit:.4f} | "
          f"{m - fit:+.4f} | {L(n, d, 15.4):.4f} |")
