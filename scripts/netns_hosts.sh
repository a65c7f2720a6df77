# scripts/netns_hosts.sh — two "hosts" on this machine for mpirun's hostfile path (sourced by
# tests/phase/test_multihost.sh and bench/mpi_launch.sh): two network namespaces on a bridge
# (10.77.N.11 and .12), each a host of the hostfile, reached by an rsh agent that enters the
# namespace (what ssh does to a real node), with MPI's traffic on TCP over the bridge (no
# shared-memory transport between them). Needs root with CAP_NET_ADMIN (ip netns).
#
#   source scripts/netns_hosts.sh
#   netns_hosts_up "$tmp" || exit      # 77: no bridge can be made here; 1: a setup step failed
#   mpirun --hostfile "$tmp/hosts" -np 2 ...      # $tmp/rsh is the agent, exported for Open MPI
#   netns_hosts_down                    # also on EXIT: the caller's trap calls it

# netns_hosts_up DIR: DIR/hosts and DIR/rsh written, the OMPI_MCA_* variables exported.
netns_hosts_up() {
  local dir=$1 i ns
  NETNS_TAG=$$
  NETNS_NET=$((NETNS_TAG % 200 + 20))  # 10.77.<net>.0/24: per process, so that two runs never share a subnet
  NETNS_BR=frbr$NETNS_TAG
  ip link add "$NETNS_BR" type bridge 2>/dev/null || { echo "cannot create a network bridge here (needs CAP_NET_ADMIN)"; return 77; }
  ip addr add "10.77.$NETNS_NET.1/24" dev "$NETNS_BR" && ip link set "$NETNS_BR" up || { echo "bridge setup failed"; return 1; }
  for i in 1 2; do
    ns=frh$i-$NETNS_TAG
    ip netns add "$ns" && ip link add "v$i-$NETNS_TAG" type veth peer name "e$i-$NETNS_TAG" \
      && ip link set "v$i-$NETNS_TAG" master "$NETNS_BR" && ip link set "v$i-$NETNS_TAG" up \
      && ip link set "e$i-$NETNS_TAG" netns "$ns" && ip -n "$ns" addr add "10.77.$NETNS_NET.1$i/24" dev "e$i-$NETNS_TAG" \
      && ip -n "$ns" link set "e$i-$NETNS_TAG" up && ip -n "$ns" link set lo up || { echo "namespace $ns setup failed"; return 1; }
  done
  # mpirun reaches host 10.77.<net>.1N by this agent, as it would by ssh
  cat > "$dir/rsh" <<RSH
#!/bin/sh
host=\$1; shift
exec ip netns exec frh\${host##*.1}-$NETNS_TAG sh -c "\$*"
RSH
  chmod +x "$dir/rsh"
  printf '10.77.%s.11 slots=1\n10.77.%s.12 slots=1\n' "$NETNS_NET" "$NETNS_NET" > "$dir/hosts"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent="$dir/rsh" \
         OMPI_MCA_oob_tcp_if_include="10.77.$NETNS_NET.0/24" OMPI_MCA_btl=self,tcp \
         OMPI_MCA_btl_tcp_if_include="10.77.$NETNS_NET.0/24"
}

netns_hosts_down() {
  [ -n "${NETNS_TAG:-}" ] || return 0
  ip netns del "frh1-$NETNS_TAG" 2>/dev/null; ip netns del "frh2-$NETNS_TAG" 2>/dev/null; ip link del "$NETNS_BR" 2>/dev/null
  true
}
