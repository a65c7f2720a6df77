#!/bin/sh
# frontier research trial: checkout 08699a8bddf7, Oxide Virtual Turin-like Processor (2 logical cpus)
cd '/work/main' || exit 1
exec '/tmp/fb1/frontier' 'train' '--config' 'bench/results/research_replicate/research/trials/0028/trial.json' '--run-dir' 'bench/results/research_replicate/research/trials/0028/run' '--quiet'
