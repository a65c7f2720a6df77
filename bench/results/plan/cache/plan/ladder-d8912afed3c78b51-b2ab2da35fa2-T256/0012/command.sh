#!/bin/sh
# frontier research trial: checkout aa271277036e, Oxide Virtual Turin-like Processor (2 logical cpus)
cd '/work/main' || exit 1
exec '/tmp/fb4/frontier' 'train' '--config' 'bench/results/plan/cache/plan/ladder-d8912afed3c78b51-84c8f09-T256/0012/trial.json' '--run-dir' 'bench/results/plan/cache/plan/ladder-d8912afed3c78b51-84c8f09-T256/0012/run' '--quiet'
