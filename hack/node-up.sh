#!/usr/bin/env bash
# Starts a real single-node Kubernetes cluster on this machine, for the `cluster` test suite:
#   containerd + runc + CNI bridge (Debian packages), etcd + kube-apiserver (hack/build-node-bins.sh,
#   hack/build-testbins.sh),
#   kubelet, kube-scheduler, kube-controller-manager, kube-proxy (iptables mode: Service ClusterIPs,
#   TCP and UDP), CoreDNS as the cluster DNS and local-path-provisioner with the default
#   StorageClass (hack/build-node-bins.sh; both run as pods, the way clusters run them).
# Everything lives under one folder ($RETROKUBE_NODE_DIR, default /tmp/retrokube-node); the API
# server and the kubelet listen only on the node's own bridge address (10.244.0.1), reachable from
# this machine and its pods, nothing else. Root is required (containers, mounts, a bridge).
#
# Prints the admin kubeconfig's path on its last line (also at $RETROKUBE_NODE_DIR/kubeconfig).
# A start over the leftovers of a crashed one cleans them first (hack/node-down.sh). A start that
# fails prints one line saying what failed and how to fix it, then cleans up (logs are kept in
# $RETROKUBE_NODE_DIR/logs). Stop with hack/node-down.sh.
# RETROKUBE_NODE_PIDNS=1 runs containerd and the kubelet in a PID namespace of their own (KubeVirt's
# virt-handler needs a PID 1 it may enter; see hack/lib-node.sh).
# Usage: hack/node-up.sh              one node (this file)
#        hack/node-up.sh --nodes N    a control plane and N worker nodes (hack/nodes-up.sh)
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --nodes ]; then exec bash "$HACK/nodes-up.sh" "${2:-}"; fi
[ $# = 0 ] || { echo "node-up: unknown argument '$1'; usage: hack/node-up.sh [--nodes N]" >&2; exit 2; }
# shellcheck source=hack/lib-node.sh
source "$HACK/lib-node.sh"
# shellcheck source=hack/lib-oci.sh
source "$HACK/lib-oci.sh"

LIMITS_READY_S=180       # node Ready and add-ons Ready: seconds (a busy 2-core machine needs ~30)
LIMITS_APISERVER_S=120   # kube-apiserver /readyz: seconds (cold start ~10-30 s under load)

t0=$(date +%s)
say() { echo "[node-up $(date +%H:%M:%S) +$(($(date +%s) - t0))s] $*" >&2; }

# --- failure: one line, then clean up ---------------------------------------------------------------
step="checking prerequisites"
fix="see the message above"
on_error() {
  local rc=$?
  trap - ERR EXIT
  set +e
  if [ "${RETROKUBE_NODE_KEEP_FAILED:-}" = 1 ]; then
    echo "node-up: failed while $step: $fix (left running for a post-mortem: RETROKUBE_NODE_KEEP_FAILED=1; stop with hack/node-down.sh)" >&2
    exit "$rc"
  fi
  NODE_DOWN_KEEP_LOGS=1 bash "$HACK/node-down.sh" >/dev/null 2>&1
  echo "node-up: failed while $step: $fix (logs: $R/logs, $R/podlogs)" >&2
  exit "$rc"
}

# --- prerequisites ----------------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || { echo "node-up: needs root (containers, mounts, a bridge); run it with sudo" >&2; exit 1; }
missing=$(node_missing_prereqs)
if [ -n "$missing" ]; then
  echo "node-up: missing $missing; install with: apt-get install -y containerd runc containernetworking-plugins iptables conntrack busybox-static openssl" >&2
  exit 1
fi
TB=$(bash "$HACK/build-testbins.sh" --print-dir)
NB=$(bash "$HACK/build-node-bins.sh" --print-dir)
PAUSE_IMAGE="$PAUSE_IMAGE_NAME:$(nodebins_tag "$NB")"
for b in "$TB/kube-apiserver" "$NB/etcd" "$TB/kubectl" "$NB/kubelet" "$NB/kube-scheduler" "$NB/kube-controller-manager" \
  "$NB/kube-proxy" "$NB/coredns" "$NB/local-path-provisioner" "$NB/pause"; do
  [ -x "$b" ] || { echo "node-up: $b is missing; build it with: bash hack/build-testbins.sh && bash hack/build-node-bins.sh" >&2; exit 1; }
done
if ip -4 -o addr show | grep -v " $BRIDGE " | grep -q ' inet 10\.244\.0\.'; then
  echo "node-up: 10.244.0.0/24 (the pod network) is already in use on this machine: $(ip -4 -o addr show | grep ' inet 10\.244\.0\.' | head -1 | awk '{print $2, $4}'); remove it" >&2
  exit 1
fi

owner=$(other_owner)
if [ -n "$owner" ]; then
  echo "node-up: another node ($owner) owns this machine's bridge and pod cgroups; stop it first: RETROKUBE_NODE_DIR=$owner bash hack/node-down.sh" >&2
  exit 1
fi

# --- leftovers of an earlier start ------------------------------------------------------------------
if [ -d "$R" ] || ip link show "$BRIDGE" >/dev/null 2>&1; then
  say "cleaning the leftovers of an earlier node ($R)"
  bash "$HACK/node-down.sh" >&2
fi
trap on_error ERR
mkdir -p "$R"/{pids,logs,certs,cd/root,cd/state,cni,ipam,kubelet,manifests,podlogs,local-path,images,saved}
chmod 755 "$R"
echo "$R" >"$OWNER_FILE"
cat /proc/sys/net/ipv4/ip_forward >"$R/saved/ip_forward"
[ -d /run/containerd ] && touch "$R/saved/run-containerd-existed"
echo "$TB" >"$R/saved/testbins"

# --- network: the node's own bridge, addressed before anything listens on it -------------------------
# No masquerade and no port mappings: pod traffic stays on this machine (bridge and loopback).
step="creating the bridge $BRIDGE"
fix="check 'ip link add $BRIDGE type bridge' works here"
ip link add "$BRIDGE" type bridge
ip addr add "$NODE_IP/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
cat >"$R/cni/10-retrokube.conflist" <<J
{"cniVersion":"1.0.0","name":"retrokube","plugins":[
 {"type":"bridge","bridge":"$BRIDGE","isGateway":true,"isDefaultGateway":true,"hairpinMode":true,"ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"$POD_CIDR","gateway":"$NODE_IP"}]],"dataDir":"$R/ipam"}},
 {"type":"loopback"}]}
J

# --- certificates and tokens ------------------------------------------------------------------------
step="making certificates"
fix="openssl must work"
openssl genrsa -out "$R/certs/sa.key" 2048 2>/dev/null
openssl rsa -in "$R/certs/sa.key" -pubout -out "$R/certs/sa.pub" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$R/certs/ca.key" -out "$R/certs/ca.crt" -days 2 -subj /CN=retrokube-node-ca 2>/dev/null
# The API server's client certificate for the kubelet (logs, exec, port-forward).
openssl req -newkey rsa:2048 -nodes -keyout "$R/certs/kubelet-client.key" -out "$R/certs/kubelet-client.csr" \
  -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" 2>/dev/null
openssl x509 -req -in "$R/certs/kubelet-client.csr" -CA "$R/certs/ca.crt" -CAkey "$R/certs/ca.key" -CAcreateserial \
  -out "$R/certs/kubelet-client.crt" -days 2 2>/dev/null
# The aggregation layer's front proxy (extension API servers such as KubeVirt's virt-api read its CA
# from kube-system/extension-apiserver-authentication, and refuse to start without it).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$R/certs/front-proxy-ca.key" -out "$R/certs/front-proxy-ca.crt" \
  -days 2 -subj /CN=retrokube-front-proxy-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$R/certs/front-proxy-client.key" -out "$R/certs/front-proxy-client.csr" \
  -subj /CN=front-proxy-client 2>/dev/null
openssl x509 -req -in "$R/certs/front-proxy-client.csr" -CA "$R/certs/front-proxy-ca.crt" \
  -CAkey "$R/certs/front-proxy-ca.key" -CAcreateserial -out "$R/certs/front-proxy-client.crt" -days 2 2>/dev/null
admin_token=$(openssl rand -hex 24)
node_token=$(openssl rand -hex 24)
printf '%s,admin,admin,"system:masters"\n%s,system:node:%s,node,"system:nodes,system:masters"\n' \
  "$admin_token" "$node_token" "$NODE_NAME" >"$R/certs/tokens.csv"
chmod 600 "$R/certs/"*.key "$R/certs/tokens.csv"

# --- etcd + kube-apiserver -------------------------------------------------------------------------
# etcd, not kine: kine's in-memory backend (fine for envtest) stopped with "WATCH SEND EVENTS FOR
# PAST REVISION" under the node's load, after handing the API server watch events without their
# previous value, and the kubelet saw new pods ADDed and REMOVEd in a loop.
step="starting etcd and kube-apiserver"
etcd_port=$(free_port 127.0.0.1)
peer_port=$(free_port 127.0.0.1)
api_port=$(free_port "$NODE_IP")
server="https://$NODE_IP:$api_port"
start_proc etcd "$NB/etcd" --name "$NODE_NAME" --data-dir "$R/etcd" --log-level warn --unsafe-no-fsync \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "$NODE_NAME=http://127.0.0.1:$peer_port"
start_proc kube-apiserver "$TB/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$etcd_port" --bind-address="$NODE_IP" --advertise-address="$NODE_IP" \
  --secure-port="$api_port" --cert-dir="$R/certs/apiserver" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$R/certs/sa.pub" --service-account-signing-key-file="$R/certs/sa.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --token-auth-file="$R/certs/tokens.csv" \
  --authorization-mode=Node,RBAC --allow-privileged=true --enable-priority-and-fairness=false \
  --kubelet-preferred-address-types=InternalIP \
  --kubelet-client-certificate="$R/certs/kubelet-client.crt" --kubelet-client-key="$R/certs/kubelet-client.key" \
  --requestheader-client-ca-file="$R/certs/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="$R/certs/front-proxy-client.crt" --proxy-client-key-file="$R/certs/front-proxy-client.key" \
  --enable-aggregator-routing=true
for u in admin node; do
  tok=$admin_token
  [ $u = node ] && tok=$node_token
  kubeconfig_for "$server" "$R/certs/apiserver/apiserver.crt" "$tok" >"$R/$u.kubeconfig.tmp"
  chmod 600 "$R/$u.kubeconfig.tmp"
done
K() { "$TB/kubectl" --kubeconfig "$R/admin.kubeconfig.tmp" "$@"; }
fix="kube-apiserver did not answer /readyz within ${LIMITS_APISERVER_S}s (see logs/kube-apiserver.log)"
wait_serving "$LIMITS_APISERVER_S" "etcd kube-apiserver" K get --raw /readyz
mv "$R/admin.kubeconfig.tmp" "$R/admin.kubeconfig"
mv "$R/node.kubeconfig.tmp" "$R/node.kubeconfig"
K() { "$TB/kubectl" --kubeconfig "$R/admin.kubeconfig" "$@"; }
say "kube-apiserver ready at $server"

# --- the node's PID namespace (opt-in; KubeVirt needs it: hack/lib-node.sh) -------------------------
if [ "$NODE_PIDNS" = 1 ]; then
  step="starting the node's PID namespace"
  fix="check that 'unshare --pid --fork --mount-proc true' works here (see logs/node-init.log)"
  start_node_init
  for _ in $(seq 1 50); do in_node mountpoint -q /var/lib/kubelet/device-plugins && break; sleep 0.1; done
  step="giving the node a device-plugin folder of its own"
  fix="the namespace's init could not mount $R/device-plugins over /var/lib/kubelet/device-plugins (see logs/node-init.log)"
  in_node mountpoint -q /var/lib/kubelet/device-plugins
  say "containerd and the kubelet run in a PID namespace of their own (init $(node_init_pid)), with their own device-plugin folder"
fi

# --- containerd, with the sandbox (pause) and add-ons images imported --------------------------------
step="starting containerd"
fix="see logs/containerd.log (is another containerd using /run/containerd?)"
containerd config default | sed \
  -e "s#^root = .*#root = \"$R/cd/root\"#" -e "s#^state = .*#state = \"$R/cd/state\"#" \
  -e "s#address = \"/run/containerd/containerd.sock\"#address = \"$SOCK\"#" \
  -e "s#sandbox_image = .*#sandbox_image = \"$PAUSE_IMAGE\"#" \
  -e 's#bin_dir = .*#bin_dir = "/usr/lib/cni"#' -e "s#conf_dir = .*#conf_dir = \"$R/cni\"#" \
  -e 's#netns_mounts_under_state_dir = false#netns_mounts_under_state_dir = true#' \
  -e 's#restrict_oom_score_adj = false#restrict_oom_score_adj = true#' >"$R/containerd.toml"
start_proc containerd containerd --config "$R/containerd.toml"
wait_until 30 ctr -a "$SOCK" version
step="importing the node's images"
fix="see the output of hack/node-up.sh"
node_images "$NB" "$R/images"
ctr -a "$SOCK" -n k8s.io images import "$R/images/pause.oci.tar" >/dev/null
ctr -a "$SOCK" -n k8s.io images import "$R/images/addons.oci.tar" >/dev/null
say "containerd up, images $PAUSE_IMAGE and $(addons_image "$NB") imported"

# --- kubelet, scheduler, controller-manager, kube-proxy ---------------------------------------------
step="starting the node components"
fix="see logs/kubelet.log, logs/kube-proxy.log"
kubelet_port=$(free_port "$NODE_IP")
cat >"$R/kubelet.yaml" <<Y
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$SOCK
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: $R/certs/ca.crt}}
authorization: {mode: AlwaysAllow}
address: $NODE_IP
port: $kubelet_port
readOnlyPort: 0
healthzPort: 0
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
staticPodPath: $R/manifests
podLogsDir: $R/podlogs
makeIPTablesUtilChains: false
serializeImagePulls: false
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
Y
start_proc kubelet "$NB/kubelet" --config="$R/kubelet.yaml" --kubeconfig="$R/node.kubeconfig" \
  --root-dir="$R/kubelet" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP"
start_proc kube-scheduler "$NB/kube-scheduler" --kubeconfig="$R/admin.kubeconfig" \
  --authentication-kubeconfig="$R/admin.kubeconfig" --authorization-kubeconfig="$R/admin.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false
start_proc kube-controller-manager "$NB/kube-controller-manager" --kubeconfig="$R/admin.kubeconfig" \
  --authentication-kubeconfig="$R/admin.kubeconfig" --authorization-kubeconfig="$R/admin.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false \
  --service-account-private-key-file="$R/certs/sa.key" --root-ca-file="$R/certs/apiserver/apiserver.crt" \
  --use-service-account-credentials=true --controllers='*,-nodeipam' \
  --service-cluster-ip-range="$SERVICE_CIDR"
cat >"$R/kube-proxy.yaml" <<Y
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $R/admin.kubeconfig}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $POD_CIDR
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:$(free_port 127.0.0.1)
metricsBindAddress: 127.0.0.1:$(free_port 127.0.0.1)
iptables: {localhostNodePorts: false, masqueradeAll: false}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
Y
start_proc kube-proxy "$NB/kube-proxy" --config="$R/kube-proxy.yaml"
fix="the node did not become Ready within ${LIMITS_READY_S}s (see logs/kubelet.log)"
sleep 1
all_alive
wait_until "$LIMITS_READY_S" K wait --for=condition=Ready "node/$NODE_NAME" --timeout=5s
say "node $NODE_NAME Ready"

# --- add-ons: CoreDNS, local-path-provisioner + default StorageClass --------------------------------
step="starting CoreDNS and local-path-provisioner"
fix="see 'kubectl -n kube-system describe pod' and logs/kubelet.log"
wait_until 60 K -n default get serviceaccount default
ADDONS_IMAGE=$(addons_image "$NB") DNS_IP=$DNS_IP LOCAL_PATH_DIR="$R/local-path" \
  envsubst '${ADDONS_IMAGE} ${DNS_IP} ${LOCAL_PATH_DIR}' <"$HACK/node/addons.yaml" | K apply -f - >/dev/null
wait_until "$LIMITS_READY_S" K -n kube-system rollout status deployment/coredns --timeout=5s
wait_until "$LIMITS_READY_S" K -n local-path-storage rollout status deployment/local-path-provisioner --timeout=5s
say "CoreDNS at $DNS_IP and local-path-provisioner ready"

all_alive
trap - ERR
cp "$R/admin.kubeconfig" "$R/kubeconfig"
cat >"$R/node.env" <<E
RETROKUBE_NODE_SERVER=$server
RETROKUBE_NODE_SOCK=$SOCK
RETROKUBE_NODE_NAME=$NODE_NAME
RETROKUBE_NODE_KUBECTL=$TB/kubectl
RETROKUBE_NODE_PIDNS=$NODE_PIDNS
E
say "node up in $(($(date +%s) - t0)) s; kubeconfig: $R/kubeconfig"
echo "$R/kubeconfig"
