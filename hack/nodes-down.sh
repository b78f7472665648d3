#!/usr/bin/env bash
# Stops the multi-node cluster hack/nodes-up.sh started and removes everything it made: every
# worker powered off (kubelet, kube-proxy, containerd, their containers and shims), the control
# plane's processes (by recorded PID, only while that PID still runs the recorded binary), every
# mount under the cluster folder, the workers' network namespaces (their iptables rules, routes and
# pod bridges go with them), the LAN bridge and its veths, the routes to the pod networks, the
# workers' cgroups, /run/containerd when the cluster created it, and the folder; restores
# ip_forward. Safe to run twice and after a crash (it is what nodes-up runs over leftovers).
# NODE_DOWN_KEEP_LOGS=1 keeps $RETROKUBE_NODES_DIR/logs.
set -uo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=hack/lib-nodes.sh
source "$HACK/lib-nodes.sh"
say() { echo "[nodes-down $(date +%H:%M:%S)] $*" >&2; }

workers() { for f in /run/netns/rkn-w*; do [ -e "$f" ] && basename "$f" | sed 's/^rkn-w//'; done; }
if [ ! -d "$R" ] && ! ip link show "$LAN" >/dev/null 2>&1 && [ -z "$(workers)" ]; then
  say "no cluster at $R; nothing to stop"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "nodes-down: needs root; run it with sudo" >&2; exit 1; }

# Workers first (so nothing restarts containers), as a power cut, then what remains of them.
ids=$( (workers; for d in "$R"/w*/; do [ -d "$d" ] && basename "$d" | sed 's/^w//'; done) | sort -un)
for i in $ids; do worker_power_off "$i"; done
api_pid=$(cat "$R/pids/kube-apiserver.pid" 2>/dev/null)
for p in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_proc "$p"; done
[ -n "$api_pid" ] && [ "$(lock_holder)" = "$api_pid" ] && rm -f "$NODE_LOCK"
for f in "$R"/pids/*.pid; do [ -e "$f" ] && stop_proc "$(basename "$f" .pid)"; done

for _ in 1 2 3; do
  mounts=$(findmnt -rn -o TARGET | grep -F "$R/" | sort -r)
  [ -z "$mounts" ] && break
  echo "$mounts" | while IFS= read -r m; do umount -l "$m" 2>/dev/null; done
done
for i in $ids; do
  ip route del "$(worker_pod_cidr "$i")" 2>/dev/null
  ip netns del "$(worker_ns "$i")" 2>/dev/null   # its veth end, pod bridge, routes and iptables go too
  ip link del "$(worker_ns "$i")" 2>/dev/null
  for c in $(cgroup_dirs); do
    [ -d "$c/$(worker_cgroup "$i")" ] && find "$c/$(worker_cgroup "$i")" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
done
ip link del "$LAN" 2>/dev/null
[ -f "$R/saved/ip_forward" ] && sysctl -qw "net.ipv4.ip_forward=$(cat "$R/saved/ip_forward")"
if [ -d "$R/saved" ] && [ ! -f "$R/saved/run-containerd-existed" ] && [ -d /run/containerd ] &&
  [ -z "$(for d in /proc/[0-9]*; do [ "$(readlink "$d/exe")" = "$(command -v containerd-shim-runc-v2)" ] && echo x; done)" ]; then
  rm -rf /run/containerd
fi
[ "$(cat "$OWNER_FILE" 2>/dev/null)" = "$R" ] && rm -f "$OWNER_FILE"
if [ "${NODE_DOWN_KEEP_LOGS:-}" = 1 ] && [ -d "$R/logs" ]; then
  find "$R" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} + 2>/dev/null
else
  rm -rf "$R" 2>/dev/null
fi
left=$(findmnt -rn -o TARGET | grep -cF "$R/")
if { [ -d "$R" ] && [ "${NODE_DOWN_KEEP_LOGS:-}" != 1 ]; } || [ "$left" -gt 0 ] || [ -n "$(workers)" ]; then
  echo "nodes-down: could not remove everything under $R ($left mounts left, namespaces: $(workers | tr '\n' ' ')); see 'findmnt | grep $R', 'ip netns'" >&2
  exit 1
fi
say "cluster stopped and cleaned"
