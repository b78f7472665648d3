# Sourced by hack/node-up.sh and hack/node-down.sh: where the test node lives and small helpers.

R="${RETROKUBE_NODE_DIR:-/tmp/retrokube-node}"   # every file the node writes lives here
BRIDGE=rknode0                # the pod bridge; also carries the node's address
NODE_IP=10.244.0.1            # the bridge's address: API server, kubelet and pods' gateway
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/24
DNS_IP=10.96.0.10             # the kube-dns Service (CoreDNS)
NODE_NAME=retrokube-node
SOCK="$R/containerd.sock"
CGROUP_PARENT=kubepods         # the kubelet's pod cgroups (cgroupfs driver), one per controller
# The bridge, the pod network and the kubepods cgroups are machine-wide: one node per machine.
# This file names the folder of the node that owns them.
OWNER_FILE=/run/retrokube-node.dir

# The folder of another node that owns the machine-wide parts, if one does ('' otherwise).
other_owner() {
  local owner
  owner=$(cat "$OWNER_FILE" 2>/dev/null) || return 0
  [ "$owner" != "$R" ] && [ -d "$owner" ] && echo "$owner"
  return 0
}

# Debian packages' commands the node needs; prints the missing ones.
node_missing_prereqs() {
  local c out=""
  for c in containerd containerd-shim-runc-v2 runc ctr iptables conntrack openssl envsubst ss; do
    command -v "$c" >/dev/null 2>&1 || out="$out $c"
  done
  for c in bridge host-local loopback; do [ -x "/usr/lib/cni/$c" ] || out="$out /usr/lib/cni/$c"; done
  [ -x /bin/busybox ] || out="$out busybox(-static)"
  echo "${out# }"
}

# A TCP port for a server at ADDRESS that nothing holds, in any state, and that no other call of
# this start was given ($R/ports-given). Below the kernel's ephemeral range (ip_local_port_range,
# 32768 by default): a port in that range may be taken by any outgoing connection between this
# check and the server's bind (etcd once failed to start so, with envtest's clients busy on
# loopback); one below it is only ever taken by a bind. Tests never take a fixed port.
free_port() {
  local addr=$1 p i lo span
  lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  span=$((lo - 20000))
  [ "$span" -ge 1000 ] || span=40000 # an odd ephemeral range: the old span, and its small risk
  for i in $(seq 1 200); do
    p=$((20000 + RANDOM % span))
    if [ -n "${R:-}" ] && [ -f "$R/ports-given" ] && grep -qx "$p" "$R/ports-given"; then continue; fi
    [ -z "$(ss -Htan "sport = :$p")" ] || continue
    if [ -n "${R:-}" ] && [ -d "$R" ]; then echo "$p" >>"$R/ports-given"; fi
    echo "$p"
    return 0
  done
  echo "no free port found on $addr" >&2
  return 1
}

# --- the node's own PID namespace (RETROKUBE_NODE_PIDNS=1) -----------------------------------------
# KubeVirt's virt-handler (a hostPID pod) enters "the host" through /proc/1/ns/mnt. On a machine
# whose PID 1 is not ours (a sandbox's or a container's init) even root may not open that, so
# containerd and the kubelet run in a PID and mount namespace whose PID 1 is a small init of ours:
# hostPID pods then see that init as PID 1, with the node's mounts behind it. The namespace's
# mounts (pod volumes, container root filesystems, network namespaces) live and die with it;
# / is shared inside, as on a systemd host (Bidirectional mount propagation needs it).
NODE_PIDNS=${RETROKUBE_NODE_PIDNS:-0}
NODE_NS_PROCS="containerd kubelet" # what runs inside; the control plane and kube-proxy need not
# PID 1 of the namespace: shares /, reaps the orphans the kernel hands it (bash reaps any child on
# SIGCHLD), and ends on SIGTERM, which takes every process of the namespace with it.
# It first gives the node a device-plugin folder of its own: a kubelet opens its registration
# socket at the fixed path /var/lib/kubelet/device-plugins/kubelet.sock whatever its --root-dir,
# so every other kubelet of this machine (the workers of hack/nodes-up.sh, which npm test runs
# beside this node) replaced it with its own. virt-handler then registered its kvm, tun and
# vhost-net plugins with a worker's kubelet (or a dead one's socket), this node never got those
# devices, and every VM stayed unschedulable. The bind mount lives in the namespace only (unshare
# makes its mounts private before / is made shared again), so the machine's folder is untouched.
NODE_INIT_SCRIPT='mkdir -p "$NODE_DEVICE_PLUGINS" /var/lib/kubelet/device-plugins &&
  mount --bind "$NODE_DEVICE_PLUGINS" /var/lib/kubelet/device-plugins || exit 1
  mount --make-rshared /; trap "exit 0" TERM; while :; do sleep 60 & wait $!; done'

node_init_pid() { cat "$R/pids/node-init.pid" 2>/dev/null || true; }

# start_node_init: the namespace and its init, recorded as the process "node-init".
start_node_init() {
  local u pid
  NODE_DEVICE_PLUGINS="$R/device-plugins" setsid unshare --pid --fork --mount-proc bash -c "$NODE_INIT_SCRIPT" \
    >"$R/logs/node-init.log" 2>&1 </dev/null &
  u=$!
  pid=$(child_running "$u" "$(command -v bash)") || return 1
  echo "$pid" >"$R/pids/node-init.pid"
  command -v bash >"$R/pids/node-init.exe"
}

# in_node CMD...: CMD inside the node's namespaces (the host's when the node has none).
in_node() {
  local init
  init=$(node_init_pid)
  if [ -n "$init" ]; then nsenter -t "$init" -p -m -- "$@"; else "$@"; fi
}

# child_running PARENT EXE: the PID of PARENT's child once it runs EXE (up to 5 s).
child_running() {
  local parent=$1 exe=$2 c i
  for i in $(seq 1 50); do
    for c in $(pgrep -P "$parent"); do
      [ "$(readlink "/proc/$c/exe" 2>/dev/null)" = "$exe" ] && { echo "$c"; return 0; }
    done
    sleep 0.1
  done
  echo "no child of $parent ran $exe within 5 s" >&2
  return 1
}

# start_proc NAME BIN ARGS...: in its own session, log to $R/logs/NAME.log, PID and binary recorded
# (node-down stops only a PID whose executable is still that binary). NODE_NS_PROCS start inside
# the node's namespace when it has one; their recorded PID is the host's view of them.
start_proc() {
  local name=$1 bin init pid
  shift
  bin=$(command -v "$1")
  shift
  init=$(node_init_pid)
  if [ -n "$init" ] && [[ " $NODE_NS_PROCS " == *" $name "* ]]; then
    setsid nsenter -t "$init" -p -m -- "$bin" "$@" >"$R/logs/$name.log" 2>&1 </dev/null &
    pid=$(child_running $! "$bin") || return 1
  else
    setsid "$bin" "$@" >"$R/logs/$name.log" 2>&1 </dev/null &
    pid=$!
  fi
  echo "$pid" >"$R/pids/$name.pid"
  echo "$bin" >"$R/pids/$name.exe"
}

# stop_proc NAME: SIGTERM, up to 10 s, then SIGKILL; only if /proc/PID/exe is the recorded binary.
stop_proc() {
  local name=$1 pid exe i
  pid=$(cat "$R/pids/$name.pid" 2>/dev/null) || return 0
  exe=$(cat "$R/pids/$name.exe" 2>/dev/null) || return 0
  if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ]; then
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] || break
      sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$R/pids/$name.pid" "$R/pids/$name.exe"
}

# all_alive: every process start_proc started still runs; else sets $fix to the first that exited,
# with its last log line, and fails.
all_alive() {
  local f name
  for f in "$R"/pids/*.pid; do
    name=$(basename "$f" .pid)
    if [ "$(readlink "/proc/$(cat "$f")/exe" 2>/dev/null)" != "$(cat "$R/pids/$name.exe")" ]; then
      fix="$name exited: $(grep -v '^[[:space:]]*$' "$R/logs/$name.log" | tail -1 | cut -c1-300)"
      return 1
    fi
  done
}

# wait_until SECONDS CMD...: runs CMD every 0.5 s until it succeeds; fails after SECONDS.
wait_until() {
  local limit=$1 end
  shift
  end=$(($(date +%s) + limit))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.5
  done
}

# wait_serving SECONDS "NAME..." CMD...: wait_until, but fails at once when a process NAME started
# by start_proc has exited, and sets $fix to say which, with its log's last line (a server that
# died at its start, e.g. on a port taken, is not waited for until the limit).
wait_serving() {
  local limit=$1 names=$2 end name pid state
  shift 2
  end=$(($(date +%s) + limit))
  until "$@" >/dev/null 2>&1; do
    for name in $names; do
      pid=$(cat "$R/pids/$name.pid" 2>/dev/null || true)
      state=$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null || true)
      if [ -z "$pid" ] || [ -z "$state" ] || [ "$state" = Z ]; then
        fix="$name exited: $(tail -n 1 "$R/logs/$name.log" 2>/dev/null | cut -c1-300) (see logs/$name.log)"
        return 1
      fi
    done
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.5
  done
}

kubeconfig_for() {
  local server=$1 ca=$2 token=$3
  cat <<K
apiVersion: v1
kind: Config
clusters: [{name: retrokube-node, cluster: {server: "$server", certificate-authority: "$ca"}}]
users: [{name: admin, user: {token: "$token"}}]
contexts: [{name: retrokube-node, context: {cluster: retrokube-node, user: admin, namespace: default}}]
current-context: retrokube-node
K
}

# Image names carry the node binaries' stamp, so new binaries mean new images.
nodebins_tag() { basename "$1" | sha256sum | cut -c1-12; }
PAUSE_IMAGE_NAME=localhost/retrokube-pause
addons_image() { echo "localhost/retrokube-node-addons:$(nodebins_tag "$1")"; }

# node_images NODEBINS_DIR OUT_DIR: the sandbox image (our pause) and the add-ons image (CoreDNS,
# local-path-provisioner, busybox for the provisioner's helper pods), built once next to the binaries.
node_images() {
  local nb=$1 out=$2 root
  mkdir -p "$out"
  if [ ! -s "$nb/pause.oci.tar" ]; then
    root=$(mktemp -d)
    cp "$nb/pause" "$root/pause"
    oci_layer "$root" "$root.tar"
    oci_archive "$root.tar" "$nb/pause.oci.tar" "$PAUSE_IMAGE_NAME:$(nodebins_tag "$nb")" '{"Entrypoint":["/pause"]}' >/dev/null
    rm -rf "$root" "$root.tar"
  fi
  if [ ! -s "$nb/addons.oci.tar" ]; then
    root=$(mktemp -d)
    mkdir -p "$root/bin" "$root/tmp" "$root/etc"
    cp "$nb/coredns" "$nb/local-path-provisioner" "$root/"
    cp /bin/busybox "$root/bin/busybox"
    local a
    for a in sh mkdir rm rmdir ls cat sleep test; do ln -s busybox "$root/bin/$a"; done
    oci_layer "$root" "$root.tar"
    oci_archive "$root.tar" "$nb/addons.oci.tar" "$(addons_image "$nb")" \
      '{"Env":["PATH=/bin"],"Entrypoint":["/bin/sh"]}' >/dev/null
    rm -rf "$root" "$root.tar"
  fi
  ln -sf "$nb/pause.oci.tar" "$out/pause.oci.tar"
  ln -sf "$nb/addons.oci.tar" "$out/addons.oci.tar"
}
