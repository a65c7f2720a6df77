#!/bin/sh
# frontier research trial: checkout 23ecbfaad570, Intel(R) Xeon(R) Processor (2 logical cpus)
cd '/work/main' || exit 1
exec '/tmp/fb2/frontier' 'train' '--config' 'bench/results/research_replicate_wide/research/trials/0001/trial.json' '--run-dir' 'bench/results/research_replicate_wide/research/trials/0001/run' '--quiet'
