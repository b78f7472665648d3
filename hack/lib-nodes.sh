# Sourced by hack/nodes-up.sh, hack/nodes-down.sh and hack/nodes-worker.sh: the multi-node test
# cluster (one control plane, N worker nodes on this one machine) — where it lives, its addresses,
# and starting or cutting the power of one worker. Reuses the single node's helpers (lib-node.sh)
# but none of its names: both may exist at once (they take turns through the suite's lock).
# shellcheck source=hack/lib-node.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib-node.sh"

R="${RETROKUBE_NODES_DIR:-/tmp/retrokube-nodes}"   # every file of the cluster lives here
SOCK=""                     # per worker: $R/wI/containerd.sock
LAN=rkn0                    # the machine-side bridge all nodes are plugged into (their "LAN")
CP_IP=10.250.0.1            # the control plane: the LAN bridge's own address in this namespace
LAN_PREFIX=10.250.0         # worker I is $LAN_PREFIX.(10+I)
POD_PREFIX=10.251           # worker I's pods: $POD_PREFIX.I.0/24, its gateway .1
CLUSTER_POD_CIDR=10.251.0.0/16
SERVICE_CIDR=10.97.0.0/24   # distinct from the single node's 10.96.0.0/24
DNS_IP=10.97.0.10
OWNER_FILE=/run/retrokube-nodes.dir
NODES_MAX=12                # /24 LAN and /16 pods leave room for more; 12 × ~300 MiB is plenty here

# Memory one worker costs without workloads (kubelet ~60 MiB, containerd ~40, kube-proxy ~30, the
# pause and add-on pods) plus room for the test workloads it is meant to carry (a few machines of
# 128 MiB); the control plane (etcd, kube-apiserver, scheduler, controller-manager) once.
WORKER_MIB=${RETROKUBE_NODES_WORKER_MIB:-450}   # more when the workloads need more room per node
CONTROL_PLANE_MIB=700

worker_ns() { echo "rkn-w$1"; }
worker_name() { echo "rk-w$1"; }
worker_ip() { echo "$LAN_PREFIX.$((10 + $1))"; }
worker_pod_cidr() { echo "$POD_PREFIX.$1.0/24"; }
worker_gw() { echo "$POD_PREFIX.$1.1"; }
worker_dir() { echo "$R/w$1"; }
worker_cgroup() { echo "rkn-w$1"; }   # the kubelet's cgroupRoot: its pods' cgroups are under it

# The v1 controllers (or the unified hierarchy) a kubelet's cgroupRoot must exist in.
cgroup_dirs() {
  local base=/sys/fs/cgroup c
  if [ -f $base/cgroup.controllers ]; then echo "$base"; return; fi
  for c in $base/*/; do
    c=${c%/}
    [ -L "$c" ] && continue
    echo "$c"
  done
}

# start_ns_proc NAME NETNS BIN ARGS...: start_proc, inside the network namespace NETNS only (the
# mount namespace stays the machine's: the kubelet's volume mounts must be seen by containerd).
start_ns_proc() {
  local name=$1 ns=$2 bin
  shift 2
  bin=$(command -v "$1")
  shift
  setsid nsenter --net="/run/netns/$ns" -- "$bin" "$@" >"$R/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$R/pids/$name.pid"
  echo "$bin" >"$R/pids/$name.exe"
}

# The pids of every process in worker I's pod cgroups (its containers).
worker_pod_pids() {
  local d
  for d in $(cgroup_dirs); do
    [ -d "$d/$(worker_cgroup "$1")" ] && find "$d/$(worker_cgroup "$1")" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -u
}

# Container shims of worker I's containerd (their command line names its socket).
worker_shims() {
  local sock d shim
  sock="$(worker_dir "$1")/containerd.sock"
  shim=$(command -v containerd-shim-runc-v2)
  for d in /proc/[0-9]*; do
    grep -qsF -- "$sock" "$d/cmdline" && [ "$(readlink "$d/exe")" = "$shim" ] && echo "${d#/proc/}"
  done
}

# worker_power_off I: the power cut — kubelet, kube-proxy and containerd killed (SIGKILL, no
# goodbye to the API server), then its containers and their shims. Its state stays on disk.
# A process may end between being listed and being killed (a container dies with its shim): a kill
# that finds nobody is not a failure, and must not end a caller running under errexit.
worker_power_off() {
  local i=$1 p pid
  for p in kubelet kube-proxy containerd; do
    pid=$(cat "$R/pids/w$i-$p.pid" 2>/dev/null) || continue
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(cat "$R/pids/w$i-$p.exe")" ] && { kill -9 "$pid" 2>/dev/null || true; }
    rm -f "$R/pids/w$i-$p.pid" "$R/pids/w$i-$p.exe"
  done
  for _ in 1 2 3; do
    for pid in $(worker_pod_pids "$i"); do kill -9 "$pid" 2>/dev/null || true; done
    sleep 0.2
  done
  for pid in $(worker_shims "$i"); do kill -9 "$pid" 2>/dev/null || true; done
  return 0
}

# worker_start I TB NB: containerd, kubelet and kube-proxy of worker I in its namespace (made if
# missing), over whatever state an earlier life left. Does not wait for Ready. Fails (status 1) on
# a step that failed: callers run it as a condition, where errexit does not reach inside.
worker_start() {
  local i=$1 tb=$2 nb=$3 ns wd ip d
  ns=$(worker_ns "$i")
  wd=$(worker_dir "$i")
  ip=$(worker_ip "$i")
  mkdir -p "$wd"/{cd/root,cd/state,runc,cni,ipam,kubelet,manifests,podlogs}
  # A dead worker's containers left mounts and pod network namespaces behind: a power cut does not
  # unmount. Its containerd cleans up what it knows on start; the rest is unmounted here.
  { findmnt -rn -o TARGET | grep -F "$wd/" | sort -r | while IFS= read -r m; do umount -l "$m" 2>/dev/null; done; } || true
  if [ ! -e "/run/netns/$ns" ]; then
    { ip netns add "$ns" &&
      ip link add "$ns" type veth peer name eth0 netns "$ns" &&
      ip link set "$ns" master "$LAN" up &&
      ip -n "$ns" addr add "$ip/24" dev eth0 &&
      ip -n "$ns" link set eth0 up &&
      ip -n "$ns" link set lo up &&
      ip -n "$ns" route add default via "$CP_IP" &&
      ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1; } || return 1
  fi
  # Routes to the other workers' pods: straight over the LAN, no overlay; the control plane's
  # namespace gets one per worker (the API server's Service proxy reaches pods that way).
  for d in $(seq 1 "$(cat "$R/saved/nodes")"); do
    [ "$d" = "$i" ] && continue
    ip -n "$ns" route replace "$(worker_pod_cidr "$d")" via "$(worker_ip "$d")" || return 1
  done
  ip route replace "$(worker_pod_cidr "$i")" via "$ip" || return 1
  for d in $(cgroup_dirs); do
    mkdir -p "$d/$(worker_cgroup "$i")" || return 1
    if [ -f "$d/cpuset.cpus" ] && [ -z "$(cat "$d/$(worker_cgroup "$i")/cpuset.cpus")" ]; then
      cat "$d/cpuset.cpus" >"$d/$(worker_cgroup "$i")/cpuset.cpus"
      cat "$d/cpuset.mems" >"$d/$(worker_cgroup "$i")/cpuset.mems"
    fi
  done
  cat >"$wd/cni/10-retrokube.conflist" <<J
{"cniVersion":"1.0.0","name":"retrokube","plugins":[
 {"type":"bridge","bridge":"cni0","isGateway":true,"isDefaultGateway":true,"hairpinMode":true,"ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"$(worker_pod_cidr "$i")","gateway":"$(worker_gw "$i")"}]],"dataDir":"$wd/ipam"}},
 {"type":"loopback"}]}
J
  containerd config default | sed \
    -e "s#^root = .*#root = \"$wd/cd/root\"#" -e "s#^state = .*#state = \"$wd/cd/state\"#" \
    -e "s#address = \"/run/containerd/containerd.sock\"#address = \"$wd/containerd.sock\"#" \
    -e "s#sandbox_image = .*#sandbox_image = \"$PAUSE_IMAGE_NAME:$(nodebins_tag "$nb")\"#" \
    -e 's#bin_dir = .*#bin_dir = "/usr/lib/cni"#' -e "s#conf_dir = .*#conf_dir = \"$wd/cni\"#" \
    -e 's#netns_mounts_under_state_dir = false#netns_mounts_under_state_dir = true#' \
    -e 's#restrict_oom_score_adj = false#restrict_oom_score_adj = true#' \
    -e "s#^\( *\)Root = \"\"#\1Root = \"$wd/runc\"#" >"$wd/containerd.toml"
  start_ns_proc "w$i-containerd" "$ns" containerd --config "$wd/containerd.toml"
  cat >"$wd/kubelet.yaml" <<Y
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /$(worker_cgroup "$i")
failSwapOn: false
containerRuntimeEndpoint: unix://$wd/containerd.sock
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: $R/certs/ca.crt}}
authorization: {mode: AlwaysAllow}
address: $ip
port: 10250
readOnlyPort: 0
healthzPort: 0
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
staticPodPath: $wd/manifests
podLogsDir: $wd/podlogs
makeIPTablesUtilChains: false
serializeImagePulls: false
nodeStatusUpdateFrequency: 4s
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
Y
  cat >"$wd/kube-proxy.yaml" <<Y
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $R/admin.kubeconfig}
hostnameOverride: $(worker_name "$i")
mode: iptables
clusterCIDR: $CLUSTER_POD_CIDR
bindAddress: $ip
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
iptables: {localhostNodePorts: false, masqueradeAll: false}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
Y
  wait_until 30 ctr -a "$wd/containerd.sock" version || return 1
  local img
  for img in "$R"/images/*.oci.tar; do
    [ -e "$img" ] || continue
    ctr -a "$wd/containerd.sock" -n k8s.io images import "$img" >/dev/null || return 1
  done
  start_ns_proc "w$i-kubelet" "$ns" "$nb/kubelet" --config="$wd/kubelet.yaml" \
    --kubeconfig="$wd/node.kubeconfig" --root-dir="$wd/kubelet" \
    --hostname-override="$(worker_name "$i")" --node-ip="$ip"
  start_ns_proc "w$i-kube-proxy" "$ns" "$nb/kube-proxy" --config="$wd/kube-proxy.yaml"
}

# The machine's lock of the several nodes (test/cluster/nodes-setup.ts; the single node has its own,
# /tmp/retrokube-node.lock, and shares nothing with these): a file naming the pid that holds it.
# Held by an ancestor of ours (the suite's process), the cluster runs under it; free, the cluster
# takes it in the name of its kube-apiserver (released by nodes-down); held by anyone else alive,
# the caller refuses.
NODE_LOCK=/tmp/retrokube-nodes.lock
lock_holder() { { tr -d ' \n' <"$NODE_LOCK"; } 2>/dev/null || true; }
is_ancestor() {
  local p=$$ want=$1
  while [ -n "$p" ] && [ "$p" -gt 1 ]; do
    [ "$p" = "$want" ] && return 0
    p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)
  done
  return 1
}
# Prints why the lock stops us ('' when we may go on).
lock_problem() {
  local h
  h=$(lock_holder)
  [ -z "$h" ] && return 0
  [ -d "/proc/$h" ] || return 0
  is_ancestor "$h" && return 0
  [ "$h" = "$(cat "$R/pids/kube-apiserver.pid" 2>/dev/null)" ] && return 0
  echo "the several nodes are in use by pid $h ($NODE_LOCK: a test run, a benchmark or a cluster started by hand); wait for it to finish"
}
