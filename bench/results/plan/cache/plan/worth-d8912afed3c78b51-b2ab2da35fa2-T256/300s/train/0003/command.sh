#!/bin/sh
# frontier research trial: checkout 25da927988eb+dirty, Oxide Virtual Turin-like Processor (2 logical cpus)
cd '/work/main' || exit 1
exec '/tmp/fb2/frontier' 'train' '--config' 'bench/results/plan/cache/plan/worth-d8912afed3c78b51-b2ab2da35fa2-T256/300s/train/0003/trial.json' '--run-dir' 'bench/results/plan/cache/plan/worth-d8912afed3c78b51-b2ab2da35fa2-T256/300s/train/0003/run' '--quiet'
