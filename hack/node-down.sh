#!/usr/bin/env bash
# Stops the test node hack/node-up.sh started, and removes everything it made:
#   the processes it started (by recorded PID, only while that PID still runs the recorded binary),
#   the pods' processes (by the node's pod cgroups) and container shims (by the node's containerd
#   socket), kube-proxy's iptables rules and the kubelet's own chains (KUBE-FIREWALL and the
#   canaries, in iptables and ip6tables: hack/node-iptables-clean.sh), every mount under the node folder, the bridge, the pod
#   cgroups, /run/containerd when the node created it, and the node folder; restores ip_forward.
# Safe to run twice, and after a crash (it is what node-up runs over leftovers).
# NODE_DOWN_KEEP_LOGS=1 keeps $RETROKUBE_NODE_DIR/logs and podlogs (node-up uses it when a start fails).
# hack/node-down.sh --nodes stops the multi-node cluster instead (hack/nodes-down.sh).
set -uo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --nodes ]; then exec bash "$HACK/nodes-down.sh"; fi
# shellcheck source=hack/lib-node.sh
source "$HACK/lib-node.sh"
say() { echo "[node-down $(date +%H:%M:%S)] $*" >&2; }

if [ ! -d "$R" ] && ! ip link show "$BRIDGE" >/dev/null 2>&1; then
  say "no node at $R; nothing to stop"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "node-down: needs root; run it with sudo" >&2; exit 1; }
owner=$(other_owner)
if [ -n "$owner" ]; then
  echo "node-down: the bridge and pod cgroups belong to the node in $owner, not $R; stop that one: RETROKUBE_NODE_DIR=$owner bash hack/node-down.sh" >&2
  exit 1
fi

# What hack/kubevirt-up.sh changed outside the cluster (a link to the kubelet's pods, the root mount
# made shared), while the node's namespace is still there: a node stopped with KubeVirt installed
# leaves nothing that would stop the next kubevirt-up.
bash "$HACK/kubevirt-up.sh" --unlink
# The kubelet first, so it restarts nothing; the control plane last.
for p in kubelet kube-scheduler kube-controller-manager; do stop_proc "$p"; done

# Pods: their processes by cgroup (the kubelet put every one under $CGROUP_PARENT).
pod_pids() { find /sys/fs/cgroup/*/"$CGROUP_PARENT" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u; }
pids=$(pod_pids)
[ -n "$pids" ] && say "stopping $(echo "$pids" | wc -l) pod processes"
for pid in $pids; do kill -9 "$pid" 2>/dev/null; done

# Container shims of this node's containerd (their command line names its socket).
shims() { for d in /proc/[0-9]*; do grep -qsF -- "$SOCK" "$d/cmdline" && [ "$(readlink "$d/exe")" = "$(command -v containerd-shim-runc-v2)" ] && echo "${d#/proc/}"; done; }
stop_proc containerd
for pid in $(shims); do kill -9 "$pid" 2>/dev/null; done
# The node's PID namespace, if it has one: its init's end takes what is left inside, and the
# namespace's mounts with it.
stop_proc node-init

stop_proc kube-proxy
if [ -f "$R/kube-proxy.yaml" ]; then
  nb=$(bash "$HACK/build-node-bins.sh" --print-dir)
  [ -x "$nb/kube-proxy" ] && "$nb/kube-proxy" --cleanup >/dev/null 2>&1
fi
# kube-proxy --cleanup leaves the kubelet's chains (KUBE-FIREWALL jumped to from INPUT/OUTPUT).
bash "$HACK/node-iptables-clean.sh"
stop_proc kube-apiserver
stop_proc etcd
# Anything else a node-up recorded (an older node-up may have started other processes).
for f in "$R"/pids/*.pid; do [ -e "$f" ] && stop_proc "$(basename "$f" .pid)"; done

# Mounts under the node folder (container root filesystems, pod volumes, network namespaces).
for _ in 1 2 3; do
  mounts=$(findmnt -rn -o TARGET | grep -F "$R/" | sort -r)
  [ -z "$mounts" ] && break
  echo "$mounts" | while IFS= read -r m; do umount -l "$m" 2>/dev/null; done
done
ip link del "$BRIDGE" 2>/dev/null
# The pod cgroups, deepest first (empty now: their processes are gone).
for c in /sys/fs/cgroup/*/"$CGROUP_PARENT"; do
  [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
done
[ -f "$R/saved/ip_forward" ] && sysctl -qw "net.ipv4.ip_forward=$(cat "$R/saved/ip_forward")"
if [ -d "$R/saved" ] && [ ! -f "$R/saved/run-containerd-existed" ] && [ -d /run/containerd ] && [ -z "$(shims)" ]; then
  rm -rf /run/containerd
fi
rm -f "$OWNER_FILE"
if [ "${NODE_DOWN_KEEP_LOGS:-}" = 1 ] && [ -d "$R/logs" ]; then
  find "$R" -mindepth 1 -maxdepth 1 ! -name logs ! -name podlogs -exec rm -rf {} + 2>/dev/null
else
  rm -rf "$R" 2>/dev/null
fi
left=$(findmnt -rn -o TARGET | grep -cF "$R/")
if [ -d "$R" ] && [ "${NODE_DOWN_KEEP_LOGS:-}" != 1 ] || [ "$left" -gt 0 ]; then
  echo "node-down: could not remove everything under $R ($left mounts left); see 'findmnt | grep $R'" >&2
  exit 1
fi
say "node stopped and cleaned"
