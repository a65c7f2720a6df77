#!/bin/sh
# frontier research trial: checkout 9e5aa5dba71d, Oxide Virtual Turin-like Processor (2 logical cpus)
cd '/work/main' || exit 1
exec '/tmp/fb2/frontier' 'train' '--config' 'bench/results/research_replicate/research/trials/0061/trial.json' '--run-dir' 'bench/results/research_replicate/research/trials/0061/run' '--quiet'
