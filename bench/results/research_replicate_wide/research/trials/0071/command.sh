#!/bin/sh
# frontier research trial: checkout 0275ca4edd55, AMD EPYC (2 logical cpus)
cd '/work/main' || exit 1
exec '/tmp/fb1/frontier' 'train' '--config' 'bench/results/research_replicate_wide/research/trials/0071/trial.json' '--run-dir' 'bench/results/research_replicate_wide/research/trials/0071/run' '--quiet'
