#!/usr/bin/env bash
# Starts a real multi-node Kubernetes cluster on this one machine, for the `nodes` test suite:
# one control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) and N worker
# nodes, each with its own containerd (root, state, socket, runc root), kubelet (its own cgroup root
# /rkn-wI) and kube-proxy (iptables), each in its own network namespace rkn-wI with its own node IP
# 10.250.0.(10+I) on a bridge rkn0 (the control plane is 10.250.0.1, this namespace). Pods of worker
# I get 10.251.I.0/24 on a CNI bridge inside its namespace; plain routes join the pod networks (no
# overlay: it is one host). CoreDNS (10.97.0.10) and local-path-provisioner run as pods; the
# provisioner knows every node shares this machine's filesystem (sharedFileSystemPath), so a volume
# is not tied to a node and its pod may move when a node dies.
# Everything lives under $RETROKUBE_NODES_DIR (default /tmp/retrokube-nodes); the single node of
# hack/node-up.sh is left alone (other names, addresses and cgroups). Root is required.
#
# Images: pause and the add-ons always; every *.oci.tar in RETROKUBE_NODES_IMAGES (a colon-separated
# list of archives, e.g. the product image of hack/build-image.sh) is imported into every worker.
# Prints the admin kubeconfig's path on its last line. A start that fails prints one line and
# cleans up (logs kept in $RETROKUBE_NODES_DIR/logs). Stop with hack/nodes-down.sh (or
# hack/node-down.sh --nodes). Power-cut or restart one worker with hack/nodes-worker.sh.
# Usage: hack/nodes-up.sh N      (3 ≤ N ≤ 12; hack/node-up.sh --nodes N is the same)
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=hack/lib-nodes.sh
source "$HACK/lib-nodes.sh"
# shellcheck source=hack/lib-oci.sh
source "$HACK/lib-oci.sh"

LIMITS_READY_S=240       # every worker Ready and the add-ons Ready (a loaded 2-core machine)
LIMITS_APISERVER_S=120   # kube-apiserver /readyz
# Node failure timing (docs/real-node.md § Several nodes says why): a node that stops reporting is
# NotReady after NODE_GRACE_S, and its pods are evicted TOLERATION_S later.
NODE_GRACE_S=20
TOLERATION_S=30

t0=$(date +%s)
say() { echo "[nodes-up $(date +%H:%M:%S) +$(($(date +%s) - t0))s] $*" >&2; }

n=${1:-}
if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 3 ] || [ "$n" -gt "$NODES_MAX" ]; then
  echo "nodes-up: N must be a number from 3 to $NODES_MAX worker nodes (got '${n}'); for one node use hack/node-up.sh without --nodes" >&2
  exit 2
fi
avail_mib=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) / 1024))
need_mib=$((CONTROL_PLANE_MIB + n * WORKER_MIB))
if [ "$need_mib" -gt "$avail_mib" ]; then
  echo "nodes-up: $n nodes need about $need_mib MiB ($CONTROL_PLANE_MIB for the control plane + $WORKER_MIB per node) but only $avail_mib MiB are available; ask for at most $(((avail_mib - CONTROL_PLANE_MIB) / WORKER_MIB)) nodes" >&2
  exit 2
fi

step="checking prerequisites"
fix="see the message above"
on_error() {
  local rc=$?
  trap - ERR EXIT
  set +e
  if [ "${RETROKUBE_NODE_KEEP_FAILED:-}" = 1 ]; then
    echo "nodes-up: failed while $step: $fix (left running: RETROKUBE_NODE_KEEP_FAILED=1; stop with hack/nodes-down.sh)" >&2
    exit "$rc"
  fi
  NODE_DOWN_KEEP_LOGS=1 bash "$HACK/nodes-down.sh" >/dev/null 2>&1
  echo "nodes-up: failed while $step: $fix (logs: $R/logs)" >&2
  exit "$rc"
}

[ "$(id -u)" = 0 ] || { echo "nodes-up: needs root (containers, mounts, namespaces); run it with sudo" >&2; exit 1; }
missing=$(node_missing_prereqs)
command -v nsenter >/dev/null || missing="$missing nsenter"
if [ -n "$missing" ]; then
  echo "nodes-up: missing $missing; install with: apt-get install -y containerd runc containernetworking-plugins iptables conntrack busybox-static openssl util-linux" >&2
  exit 1
fi
TB=$(bash "$HACK/build-testbins.sh" --print-dir)
NB=$(bash "$HACK/build-node-bins.sh" --print-dir)
for b in "$TB/kube-apiserver" "$NB/etcd" "$TB/kubectl" "$NB/kubelet" "$NB/kube-scheduler" "$NB/kube-controller-manager" \
  "$NB/kube-proxy" "$NB/coredns" "$NB/local-path-provisioner" "$NB/pause"; do
  [ -x "$b" ] || { echo "nodes-up: $b is missing; build it with: bash hack/build-testbins.sh && bash hack/build-node-bins.sh" >&2; exit 1; }
done
if ip -4 -o addr show | grep -v " $LAN " | grep -q ' inet 10\.25[01]\.'; then
  echo "nodes-up: 10.250.0.0/16 or 10.251.0.0/16 is already in use on this machine: $(ip -4 -o addr show | grep ' inet 10\.25[01]\.' | head -1 | awk '{print $2, $4}'); remove it" >&2
  exit 1
fi

problem=$(lock_problem)
[ -z "$problem" ] || { echo "nodes-up: $problem" >&2; exit 1; }

if [ -d "$R" ] || ip link show "$LAN" >/dev/null 2>&1 || ls /run/netns/rkn-w* >/dev/null 2>&1; then
  say "cleaning the leftovers of an earlier cluster ($R)"
  bash "$HACK/nodes-down.sh" >&2
fi
trap on_error ERR
mkdir -p "$R"/{pids,logs,certs,images,saved,shared}
chmod 755 "$R"
echo "$R" >"$OWNER_FILE"
echo "$n" >"$R/saved/nodes"
cat /proc/sys/net/ipv4/ip_forward >"$R/saved/ip_forward"
[ -d /run/containerd ] && touch "$R/saved/run-containerd-existed"
echo "$TB" >"$R/saved/testbins"
echo "$NB" >"$R/saved/nodebins"

step="creating the LAN bridge $LAN"
fix="check 'ip link add $LAN type bridge' and 'ip netns add' work here"
ip link add "$LAN" type bridge
ip addr add "$CP_IP/24" dev "$LAN"
ip link set "$LAN" up
# This namespace routes between the LAN and the pod networks (API server → pod, pod → API server).
sysctl -qw net.ipv4.ip_forward=1

step="making certificates"
fix="openssl must work"
openssl genrsa -out "$R/certs/sa.key" 2048 2>/dev/null
openssl rsa -in "$R/certs/sa.key" -pubout -out "$R/certs/sa.pub" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$R/certs/ca.key" -out "$R/certs/ca.crt" -days 2 -subj /CN=retrokube-nodes-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$R/certs/kubelet-client.key" -out "$R/certs/kubelet-client.csr" \
  -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" 2>/dev/null
openssl x509 -req -in "$R/certs/kubelet-client.csr" -CA "$R/certs/ca.crt" -CAkey "$R/certs/ca.key" -CAcreateserial \
  -out "$R/certs/kubelet-client.crt" -days 2 2>/dev/null
admin_token=$(openssl rand -hex 24)
printf '%s,admin,admin,"system:masters"\n' "$admin_token" >"$R/certs/tokens.csv"
declare -a node_token
for i in $(seq 1 "$n"); do
  node_token[i]=$(openssl rand -hex 24)
  # One identity per node (system:node:<name>): the Node authorizer keeps each to its own objects.
  printf '%s,system:node:%s,node-%s,"system:nodes"\n' "${node_token[i]}" "$(worker_name "$i")" "$i" >>"$R/certs/tokens.csv"
done
chmod 600 "$R/certs/"*.key "$R/certs/tokens.csv"

step="starting etcd and kube-apiserver"
etcd_port=$(free_port 127.0.0.1)
peer_port=$(free_port 127.0.0.1)
api_port=$(free_port "$CP_IP")
server="https://$CP_IP:$api_port"
start_proc etcd "$NB/etcd" --name rk-cp --data-dir "$R/etcd" --log-level warn --unsafe-no-fsync \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "rk-cp=http://127.0.0.1:$peer_port"
start_proc kube-apiserver "$TB/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$etcd_port" --bind-address="$CP_IP" --advertise-address="$CP_IP" \
  --secure-port="$api_port" --cert-dir="$R/certs/apiserver" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$R/certs/sa.pub" --service-account-signing-key-file="$R/certs/sa.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --token-auth-file="$R/certs/tokens.csv" \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --allow-privileged=true --enable-priority-and-fairness=false \
  --default-not-ready-toleration-seconds="$TOLERATION_S" --default-unreachable-toleration-seconds="$TOLERATION_S" \
  --kubelet-preferred-address-types=InternalIP \
  --kubelet-client-certificate="$R/certs/kubelet-client.crt" --kubelet-client-key="$R/certs/kubelet-client.key"
kubeconfig_for "$server" "$R/certs/apiserver/apiserver.crt" "$admin_token" >"$R/admin.kubeconfig.tmp"
chmod 600 "$R/admin.kubeconfig.tmp"
K() { "$TB/kubectl" --kubeconfig "$R/admin.kubeconfig.tmp" "$@"; }
fix="kube-apiserver did not answer /readyz within ${LIMITS_APISERVER_S}s (see logs/kube-apiserver.log)"
wait_serving "$LIMITS_APISERVER_S" "etcd kube-apiserver" K get --raw /readyz
mv "$R/admin.kubeconfig.tmp" "$R/admin.kubeconfig"
# Started by hand (no test run holds the lock): the cluster holds it while its API server lives.
if [ -z "$(lock_holder)" ] || [ ! -d "/proc/$(lock_holder)" ]; then
  cat "$R/pids/kube-apiserver.pid" >"$NODE_LOCK"
fi
K() { "$TB/kubectl" --kubeconfig "$R/admin.kubeconfig" "$@"; }
for i in $(seq 1 "$n"); do
  mkdir -p "$(worker_dir "$i")"
  kubeconfig_for "$server" "$R/certs/apiserver/apiserver.crt" "${node_token[i]}" >"$(worker_dir "$i")/node.kubeconfig"
  chmod 600 "$(worker_dir "$i")/node.kubeconfig"
done
say "kube-apiserver ready at $server"

step="starting the scheduler and controller-manager"
fix="see logs/kube-scheduler.log, logs/kube-controller-manager.log"
start_proc kube-scheduler "$NB/kube-scheduler" --kubeconfig="$R/admin.kubeconfig" \
  --authentication-kubeconfig="$R/admin.kubeconfig" --authorization-kubeconfig="$R/admin.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false
start_proc kube-controller-manager "$NB/kube-controller-manager" --kubeconfig="$R/admin.kubeconfig" \
  --authentication-kubeconfig="$R/admin.kubeconfig" --authorization-kubeconfig="$R/admin.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false \
  --service-account-private-key-file="$R/certs/sa.key" --root-ca-file="$R/certs/apiserver/apiserver.crt" \
  --use-service-account-credentials=true --controllers='*,-nodeipam' \
  --node-monitor-grace-period="${NODE_GRACE_S}s" --node-monitor-period=2s \
  --service-cluster-ip-range="$SERVICE_CIDR"

step="preparing the node images"
fix="see the output of hack/nodes-up.sh"
node_images "$NB" "$R/images"
if [ -n "${RETROKUBE_NODES_IMAGES:-}" ]; then
  IFS=: read -r -a extra <<<"$RETROKUBE_NODES_IMAGES"
  for a in "${extra[@]}"; do
    [ -s "$a" ] || { fix="RETROKUBE_NODES_IMAGES names $a, which is not a file"; false; }
    ln -sf "$a" "$R/images/$(basename "$a")"
  done
fi

step="starting the worker nodes"
fix="see logs/wI-containerd.log, logs/wI-kubelet.log, logs/wI-kube-proxy.log"
for i in $(seq 1 "$n"); do
  # Called as a condition (errexit is off inside it): worker_start checks its own steps.
  worker_start "$i" "$TB" "$NB" || { fix="worker $i did not start; see logs/w$i-*.log"; false; }
  say "worker $(worker_name "$i") started at $(worker_ip "$i") (pods $(worker_pod_cidr "$i"))"
done
sleep 1
all_alive
fix="not every node became Ready within ${LIMITS_READY_S}s (see logs/wI-kubelet.log)"
for i in $(seq 1 "$n"); do
  wait_until "$LIMITS_READY_S" K wait --for=condition=Ready "node/$(worker_name "$i")" --timeout=5s
done
say "$n nodes Ready"

step="starting CoreDNS and local-path-provisioner"
fix="see 'kubectl -n kube-system describe pod' and logs/wI-kubelet.log"
wait_until 60 K -n default get serviceaccount default
# The provisioner's volumes live on this machine's filesystem, which every node shares: a volume is
# not tied to one node (sharedFileSystemPath), so a pod whose node died can take it elsewhere.
ADDONS_IMAGE=$(addons_image "$NB") DNS_IP=$DNS_IP LOCAL_PATH_DIR="$R/shared" \
  envsubst '${ADDONS_IMAGE} ${DNS_IP} ${LOCAL_PATH_DIR}' <"$HACK/node/addons.yaml" |
  sed "s#{\"nodePathMap\": \[{\"node\": \"DEFAULT_PATH_FOR_NON_LISTED_NODES\", \"paths\": \[\"$R/shared\"\]}\]}#{\"sharedFileSystemPath\": \"$R/shared\", \"nodePathMap\": []}#" \
  >"$R/addons.yaml"
grep -q sharedFileSystemPath "$R/addons.yaml" || { fix="hack/node/addons.yaml changed its local-path config line; update hack/nodes-up.sh"; false; }
K apply -f "$R/addons.yaml" >/dev/null
wait_until "$LIMITS_READY_S" K -n kube-system rollout status deployment/coredns --timeout=5s
wait_until "$LIMITS_READY_S" K -n local-path-storage rollout status deployment/local-path-provisioner --timeout=5s
say "CoreDNS at $DNS_IP and local-path-provisioner ready"

all_alive
trap - ERR
cp "$R/admin.kubeconfig" "$R/kubeconfig"
cat >"$R/nodes.env" <<E
RETROKUBE_NODES_SERVER=$server
RETROKUBE_NODES_COUNT=$n
RETROKUBE_NODES_KUBECTL=$TB/kubectl
RETROKUBE_NODES_GRACE_S=$NODE_GRACE_S
RETROKUBE_NODES_TOLERATION_S=$TOLERATION_S
E
say "$n-node cluster up in $(($(date +%s) - t0)) s; kubeconfig: $R/kubeconfig"
echo "$R/kubeconfig"
