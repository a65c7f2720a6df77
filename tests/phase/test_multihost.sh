#!/usr/bin/env bash
# tests/phase/test_multihost.sh — phase 2 across two "hosts" through a hostfile, on this machine:
# two network namespaces on a bridge (10.77.N.11 and .12), each a host of mpirun's hostfile,
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
tmp=$(mktemp -d)
tag=$$
net=$((tag % 200 + 20))  # 10.77.<net>.0/24: per test run, so that two runs never share a subnet
ns1=frh1-$tag ns2=frh2-$tag br=frbr$tag
cleanup() {
  ip netns del "$ns1" 2>/dev/null; ip netns del "$ns2" 2>/dev/null; ip link del "$br" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
ip link add "$br" type bridge 2>/dev/null || skip_test "cannot create a network bridge here (needs CAP_NET_ADMIN)"
ip addr add "10.77.$net.1/24" dev "$br" && ip link set "$br" up || { bad "bridge setup"; exit 1; }
for i in 1 2; do
  ns=frh$i-$tag
  ip netns add "$ns" && ip link add "v$i-$tag" type veth peer name "e$i-$tag" && ip link set "v$i-$tag" master "$br" \
    && ip link set "v$i-$tag" up && ip link set "e$i-$tag" netns "$ns" \
    && ip -n "$ns" addr add "10.77.$net.1$i/24" dev "e$i-$tag" && ip -n "$ns" link set "e$i-$tag" up \
    && ip -n "$ns" link set lo up || { bad "namespace $ns setup"; exit 1; }
done
# mpirun reaches host 10.77.<net>.1N by this agent, as it would by ssh
cat > "$tmp/rsh" <<EOF
#!/bin/sh
host=\$1; shift
exec ip netns exec frh\${host##*.1}-$tag sh -c "\$*"
EOF
chmod +x "$tmp/rsh"
printf '10.77.%s.11 slots=1\n10.77.%s.12 slots=1\n' "$net" "$net" > "$tmp/hosts"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent="$tmp/rsh" \
       OMPI_MCA_oob_tcp_if_include="10.77.$net.0/24" OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include="10.77.$net.0/24"
data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
[ -d "$data" ] || { bad "prepare did not report a data folder"; exit 1; }
data=$(realpath "$data")
core_dir=$(realpath "${FRONTIER_DATA:-../shared/data}/core")
# the planner's throughput model for 2 ranks, seeded (calibrating takes minutes)
key=$($F info | sed -n 's/^plan layout: *//p')
mkdir -p "$tmp/cache"
k2=${key/ranks=1/ranks=2}
/usr/bin/python3 - "$tmp/cache/throughput.json" "${k2/threads=0/threads=1}" <<'PY'
import json, sys
coef = dict(gemm_flops=1/6e11, gemm_bytes=0, gemm_thin=0, attn_flops=1/6e11, elem_bytes=0, opt_flops=1/6e11, layer_calls=0,
            step=2e-3, allreduce_bytes=0)
json.dump({sys.argv[2]: {"coef": coef, "n_points": 11, "rms_rel_err": 0.04, "max_rel_err": 0.08}}, open(sys.argv[1], "w"))
PY
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
