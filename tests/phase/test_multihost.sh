#!/usr/bin/env bash
# tests/phase/test_multihost.sh — phase 2 across two "hosts" through a hostfile, on this machine:
# two network namespaces on a bridge (scripts/netns_hosts.sh), each a host of mpirun's hostfile,
# reached by an rsh agent that enters the namespace (what ssh does to a real node), with MPI's
# traffic on TCP over the bridge (no shared-memory transport between them). `frontier run
# --phase 2 --hostfile F` then plans, trains on one rank per host, scores a CORE subset over both
# and writes the composite, exactly as on two machines with a shared file system.
# Needs root with CAP_NET_ADMIN (ip netns): without it this is a SKIP, a failure under CI=true.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=$PWD/frontier
source tests/lib.sh
command -v mpirun >/dev/null || skip_test "no mpirun (scripts/setup.sh installs openmpi-bin)"
command -v ip >/dev/null || skip_test "no ip (iproute2)"
source scripts/netns_hosts.sh
tmp=$(mktemp -d)
trap 'netns_hosts_down; rm -rf "$tmp"' EXIT
netns_hosts_up "$tmp"
case $? in 0) ;; 77) skip_test "cannot create a network bridge here (needs CAP_NET_ADMIN)" ;; *) bad "the two hosts' setup"; exit 1 ;; esac
prepare_data
data=$(realpath "$data")
core_dir=$(realpath "${FRONTIER_DATA:-../shared/data}/core")
# the planner's throughput model for 2 ranks, seeded (calibrating takes minutes)
key=$($F info | sed -n 's/^plan layout: *//p')
mkdir -p "$tmp/cache"
k2=${key/ranks=1/ranks=2}
seed_throughput "$tmp/cache/throughput.json" "${k2/threads=0/threads=1}"
out=$(cd "$tmp" && timeout 600 $F run --phase 2 --hostfile "$tmp/hosts" --ranks 2 --threads 1 --budget 8s --data "$data" \
      --cache "$tmp/cache" --eval-tokens 4096 --core-dir "$core_dir" --core-tasks copa --core-max-per-task 16 \
      --run-dir "$tmp/p2" 2>&1); rc=$?
line=$(grep '^phase 2 result: val_bpb' <<<"$out")
if [ $rc = 0 ] && [ -n "$line" ] && grep -q -- "--hostfile $tmp/hosts" <<<"$out"; then ok "phase 2 through a hostfile of two hosts: $line"
else bad "phase 2 across hosts: exit $rc"; echo "$out" | tail -12; fi
grep -q '"ranks":[[:space:]]*2' "$tmp/p2/train/summary.json" 2>/dev/null && [ -s "$tmp/p2/train/core.json" ] \
  && ok "the training ran on 2 ranks, one per host, and CORE was scored" || bad "summary or core.json missing"
echo "multihost: $fails failed"
[ "$fails" -eq 0 ]
