#!/bin/sh
# frontier research trial: checkout f628806daacf, Oxide Virtual Turin-like Processor (2 logical cpus)
cd '/work/main' || exit 1
exec '/tmp/fb5/frontier' 'train' '--config' 'bench/results/plan/cache/plan/ladder-d8912afed3c78b51-2858d44bd486-T256/0018/trial.json' '--run-dir' 'bench/results/plan/cache/plan/ladder-d8912afed3c78b51-2858d44bd486-T256/0018/run' '--quiet'
