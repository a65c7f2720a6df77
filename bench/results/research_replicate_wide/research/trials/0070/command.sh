#!/bin/sh
# frontier research trial: checkout 42009c72bc1d, Oxide Virtual Turin-like Processor (2 logical cpus)
cd '/work/main' || exit 1
exec '/tmp/fb1/frontier' 'train' '--config' 'bench/results/research_replicate_wide/research/trials/0070/trial.json' '--run-dir' 'bench/results/research_replicate_wide/research/trials/0070/run' '--quiet'
