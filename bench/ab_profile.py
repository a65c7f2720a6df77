#!/usr/bin/python3
"""bench/ab_profile.py — the table of bench/ab_profile.sh: alternated training profiles of A and B,
compared per (op, shape) and for the whole step.

usage: ab_profile.py [--top N] --a RUN... --b RUN...

Each RUN is a folder written by `frontier profile` (its profile_shapes.csv) holding also
profile.log, what the command printed (for the step time and the number of profiled steps). The
i-th runs of A and B form pair i. Per row: the median over runs of ms per profiled step for A and
B, their ratio B/A, the median share of the step (% of step: steadier than times on a machine whose
speed drifts, since both sides of a run see the same spell), and in how many pairs B was faster;
then, for the whole step, the sign test's p-value.
Rows: the --top costliest (op, shape) rows by A's median share, then any other row whose median
share differs by more than a point.
"""
import argparse
import csv
import math
import os
import re
import statistics
import sys

STEP_RE = re.compile(r"^step: ([0-9.]+) ms, ([0-9.]+) tok/s", re.M)
STEPS_RE = re.compile(r"ops and data cover [0-9.]+% of ([0-9]+) steps")


def fail(msg):
    print(f"ab_profile.py: {msg}", file=sys.stderr)
    sys.exit(1)


def read_run(run):
    """{(op, shape): (ms per step, % of step)}, step ms, tok/s of one profile run folder."""
    log_path, csv_path = os.path.join(run, "profile.log"), os.path.join(run, "profile_shapes.csv")
    try:
        log = open(log_path, encoding="utf-8").read()
        rows = list(csv.DictReader(open(csv_path, encoding="utf-8")))
    except OSError as e:
        fail(f"{run}: {e.strerror}: {e.filename} (not a `frontier profile` run folder with profile.log?)")
    step, steps = STEP_RE.search(log), STEPS_RE.search(log)
    if not step or not steps:
        fail(f"{log_path}: no 'step: ... ms' and '... of N steps' lines (did the profile finish?)")
    n = int(steps.group(1))
    shapes = {}
    for i, r in enumerate(rows, start=2):
        try:
            shapes[(r["op"], r["shape"])] = (float(r["total_ms"]) / n, float(r["pct_step"]))
        except (KeyError, ValueError) as e:
            fail(f"{csv_path}:{i}: bad row ({e})")
    return shapes, float(step.group(1)), float(step.group(2))


def sign_test(wins, pairs):
    """Two-sided sign-test p-value: how often a change that does nothing wins or loses this lopsidedly."""
    tail = min(wins, pairs - wins)
    return min(1.0, 2 * sum(math.comb(pairs, i) for i in range(tail + 1)) / 2**pairs)


def compare(a_runs, b_runs, top):
    """The markdown table (a list of lines) for runs read by read_run."""
    if len(a_runs) != len(b_runs) or not a_runs:
        fail(f"need the same number of A and B runs, at least one (got {len(a_runs)} and {len(b_runs)})")
    pairs = len(a_runs)

    def column(runs, key, field):  # field 0: ms per step, 1: share; a run without the row: 0
        return [r[0].get(key, (0.0, 0.0))[field] for r in runs]

    keys = set().union(*(r[0].keys() for r in a_runs + b_runs))
    share_a = {k: statistics.median(column(a_runs, k, 1)) for k in keys}
    share_b = {k: statistics.median(column(b_runs, k, 1)) for k in keys}
    ranked = sorted(keys, key=lambda k: (-share_a[k], k))
    chosen = ranked[:top] + [k for k in ranked[top:] if abs(share_b[k] - share_a[k]) > 1.0]

    lines = ["| op, shape | A ms/step | B ms/step | B/A | A % of step | B % of step | B faster in |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    step_a, step_b = [r[1] for r in a_runs], [r[1] for r in b_runs]
    step_wins = sum(b < a for a, b in zip(step_a, step_b))
    ma, mb = statistics.median(step_a), statistics.median(step_b)
    lines.append(f"| **whole step** | {ma:.2f} | {mb:.2f} | {mb / ma:.3f} | 100 | 100 | {step_wins}/{pairs} |")
    for k in chosen:
        a, b = column(a_runs, k, 0), column(b_runs, k, 0)
        wins = sum(y < x for x, y in zip(a, b))
        ma, mb = statistics.median(a), statistics.median(b)
        ratio = f"{mb / ma:.3f}" if ma > 0 else "—"
        lines.append(f"| {k[0]} {k[1]} | {ma:.3f} | {mb:.3f} | {ratio} | {share_a[k]:.2f} | {share_b[k]:.2f} "
                     f"| {wins}/{pairs} |")
    tok_a = statistics.median([r[2] for r in a_runs])
    tok_b = statistics.median([r[2] for r in b_runs])
    lines.append("")
    lines.append(f"Median tok/s: A {tok_a:.0f}, B {tok_b:.0f} ({tok_b / tok_a:.3f}x). "
                 f"{pairs} alternated pairs (A first in odd pairs, B first in even ones).")
    lines.append(f"The step: B faster in {step_wins}/{pairs} pairs, sign test p = {sign_test(step_wins, pairs):.3f} "
                 f"(the chance of a split at least this lopsided from a change that does nothing; "
                 f"{pairs} pairs can reach p = {sign_test(pairs, pairs):.3f} at best).")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--a", nargs="+", required=True, metavar="RUN")
    p.add_argument("--b", nargs="+", required=True, metavar="RUN")
    args = p.parse_args()
    if args.top < 1:
        fail(f"--top must be at least 1 (got {args.top})")
    print("\n".join(compare([read_run(r) for r in args.a], [read_run(r) for r in args.b], args.top)))


if __name__ == "__main__":
    main()
