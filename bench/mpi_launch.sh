#!/usr/bin/env bash
# bench/mpi_launch.sh — how often a plain `mpirun --hostfile` launch fails across two hosts, with
# Open MPI's defaults against the option every frontier launch passes (`--mca rtc_hwloc_vmhole
# none`, DIST_MPIRUN_ARGS in src/dist/dist.h; why: docs/distributed.md). The hosts are two network
# namespaces on this machine (scripts/netns_hosts.sh, as tests/phase/test_multihost.sh uses them);
# each launch starts `hostname` on one rank per host. The arms alternate launch by launch, so a slow
# period hits both alike. One row per launch in bench/results/mpi_launch.tsv (appended; a new
# sitting adds rows), and the counts of this sitting printed. Needs root with CAP_NET_ADMIN.
#
#   N=40 bash bench/mpi_launch.sh        # 40 launches per arm (about a minute each 20)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
source scripts/netns_hosts.sh
N=${N:-20}
OUT=bench/results/mpi_launch.tsv
command -v mpirun >/dev/null || { echo "mpi_launch: no mpirun (scripts/setup.sh installs openmpi-bin)"; exit 1; }
tmp=$(mktemp -d)
trap 'netns_hosts_down; rm -rf "$tmp"' EXIT
netns_hosts_up "$tmp" || { echo "mpi_launch: the two hosts could not be set up"; exit 1; }
mkdir -p bench/results
[ -s "$OUT" ] || printf 'date\tarm\tlaunch\trc\tseconds\terror\topen_mpi\tmachine\n' > "$OUT"
ompi=$(mpirun --version 2>&1 | sed -n 's/.*(Open MPI) //p' | head -1)
machine=$(bench_machine); machine=${machine#*, }  # the row has its own date column
declare -A EXTRA=([defaults]="" [vmhole-none]="--mca rtc_hwloc_vmhole none")
declare -A failed=([defaults]=0 [vmhole-none]=0)
for i in $(seq 1 "$N"); do
  for arm in defaults vmhole-none; do
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086  # the arm's options are words
    out=$(timeout 120 mpirun --hostfile "$tmp/hosts" -np 2 ${EXTRA[$arm]} hostname 2>&1); rc=$?
    dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    err=-
    if [ $rc != 0 ]; then
      failed[$arm]=$((failed[$arm] + 1))
      err=$(grep -m1 -oE 'ORTE was unable to reliably start[^.]*|ORTE does not know how to route[^.]*|Segmentation fault|timed out' <<<"$out" || echo "exit $rc")
    fi
    printf '%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n' "$(date -u +%F)" "$arm" "$i" "$rc" "$dt" "$err" "$ompi" "$machine" >> "$OUT"
  done
done
echo "mpi_launch: Open MPI $ompi, $N launches per arm, mpirun -np 2 --hostfile over two namespaces:"
for arm in defaults vmhole-none; do echo "  $arm: ${failed[$arm]} of $N failed"; done
