#!/usr/bin/env bash
# Installs KubeVirt v1.8.4 on the running test node (hack/node-up.sh) the way users install it:
# the release's operator manifest (namespace, KubeVirt CRD, priority class, RBAC, the virt-operator
# Deployment), rendered here by KubeVirt's own manifest-templator from the module's
# manifests/release/kubevirt-operator.yaml.in and manifests/generated/ (exactly how the release's
# kubevirt-operator.yaml is made), then a KubeVirt CR; virt-operator deploys virt-api,
# virt-controller and virt-handler itself. The images are ours (hack/build-kubevirt.sh), imported
# into the node's containerd (no registry); the launcher is our RISC5 one.
# The CR: useEmulation (RISC5 runs under TCG; nothing may need /dev/kvm), the Sidecar feature gate
# (our onDefineDomain hook), the machine type oberon allowed, one replica of virt-api and
# virt-controller (one node).
#
# Usage: hack/kubevirt-up.sh [--down | --unlink]   (as root, with the node up; prints the kubeconfig)
#   --down    deletes the KubeVirt CR and the operator manifest, waits for KubeVirt's pods to go,
#             then does what --unlink does.
#   --unlink  only undoes what this script changed on the machine outside the cluster (the link to
#             the kubelet's pods, the root mount made shared); hack/node-down.sh runs it, so a node
#             stopped with KubeVirt still installed leaves nothing behind.
# Environment: RETROKUBE_NODE_DIR (the node's folder), RETROKUBE_KUBEVIRT_WAIT_S (default 900).
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=hack/lib-node.sh
source "$HACK/lib-node.sh"
LIMITS_DEPLOYED_S=${RETROKUBE_KUBEVIRT_WAIT_S:-900} # KubeVirt Available: seconds (all its pods, loaded 2 cores)
KUBELET_PODS_LINK=/var/lib/kubelet/pods # virt-handler's hostPath for the kubelet's pods (KubeVirt fixes it)
NS=kubevirt

t0=$(date +%s)
say() { echo "[kubevirt-up $(date +%H:%M:%S) +$(($(date +%s) - t0))s] $*" >&2; }
die() { echo "kubevirt-up: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (imports into the node's containerd)"
# What this script changed outside the cluster's API (the link and the root's propagation, below).
unlink_node() {
  if [ -L "$KUBELET_PODS_LINK" ] && [ "$(readlink "$KUBELET_PODS_LINK")" = "$R/kubelet/pods" ]; then
    rm -f "$KUBELET_PODS_LINK"
  fi
  if [ -f "$R/kubevirt-made-root-shared" ]; then
    in_node mount --make-private /
    rm -f "$R/kubevirt-made-root-shared"
  fi
}
if [ "${1:-}" = --unlink ]; then
  unlink_node
  exit 0
fi
[ -s "$R/kubeconfig" ] || die "no node at $R: start it with: sudo bash hack/node-up.sh"
# shellcheck disable=SC1091
source "$R/node.env"
K() { "$RETROKUBE_NODE_KUBECTL" --kubeconfig "$R/kubeconfig" "$@"; }

if [ "${1:-}" = --down ]; then
  K -n "$NS" delete kubevirt kubevirt --ignore-not-found --wait=true --timeout=300s >&2 || true
  [ -f "$R/kubevirt-operator.yaml" ] && K delete -f "$R/kubevirt-operator.yaml" --ignore-not-found --wait=true --timeout=300s >&2
  unlink_node
  say "KubeVirt removed"
  exit 0
fi
[ $# = 0 ] || die "unknown argument '$1'; usage: hack/kubevirt-up.sh [--down | --unlink]"

# virt-handler (a hostPID pod) enters the node's mount namespace through /proc/1/ns/mnt. Where this
# machine's PID 1 refuses that (a sandbox's or a container's init), the node must run in a PID
# namespace of its own.
if [ -z "$(node_init_pid)" ] && ! nsenter --mount=/proc/1/ns/mnt true 2>/dev/null; then
  die "virt-handler could not enter this machine's PID 1 (nsenter --mount=/proc/1/ns/mnt is refused here); start the node in a PID namespace of its own: sudo bash hack/node-down.sh && sudo RETROKUBE_NODE_PIDNS=1 bash hack/node-up.sh"
fi

bash "$HACK/build-kubevirt.sh" --check || die "KubeVirt is not built: run bash hack/build-kubevirt.sh first"
BIN="$(bash "$HACK/build-kubevirt.sh" --print-dir)/bin"
IMAGES=$(bash "$HACK/build-kubevirt.sh" --print-images)
KV_SRC=$(go env GOMODCACHE)/kubevirt.io/kubevirt@v1.8.4
[ -d "$KV_SRC/manifests/release" ] || die "the module's manifests are missing ($KV_SRC): run bash hack/build-kubevirt.sh --module"

# --- images into the node's containerd ------------------------------------------------------------
for a in "$IMAGES"/*.oci.tar; do
  ctr -a "$RETROKUBE_NODE_SOCK" -n k8s.io images import "$a" >/dev/null
done
ref_of() { tar -xOf "$IMAGES/$1.oci.tar" index.json | sed 's/.*"io.containerd.image.name":"\([^"]*\)".*/\1/'; }
OPERATOR_IMAGE=$(ref_of virt-operator)
LAUNCHER_IMAGE=$(ref_of virt-launcher)
SHIM_IMAGE=$(ref_of sidecar-shim)
say "images imported: $(ls "$IMAGES" | sed 's/.oci.tar//' | tr '\n' ' ')"

# --- the kubelet's pods where virt-handler looks for them -----------------------------------------
# virt-handler reaches a launcher pod's sockets through the hostPath /var/lib/kubelet/pods; the
# node's kubelet keeps its pods under $R/kubelet (--root-dir). A link (never a mount over the
# kubelet's own /var/lib/kubelet, which holds its device-plugin socket) points there.
if [ ! -e "$KUBELET_PODS_LINK" ]; then
  mkdir -p "$(dirname "$KUBELET_PODS_LINK")"
  ln -s "$R/kubelet/pods" "$KUBELET_PODS_LINK"
elif [ "$(readlink "$KUBELET_PODS_LINK")" != "$R/kubelet/pods" ]; then
  die "$KUBELET_PODS_LINK exists and is not our link to $R/kubelet/pods; remove it if no other kubelet uses it"
fi

# KubeVirt's operator runs only on a control-plane node (a required node affinity in the release's
# Deployment). The test node is the control plane's host, so it says so, as kind labels its node.
K label node --all node-role.kubernetes.io/control-plane= --overwrite >/dev/null

# virt-handler mounts /var/lib/kubelet and /var/run/kubevirt with Bidirectional propagation, which
# containerd allows only on a shared mount; it looks the path up without resolving the /var/run
# symlink, so the mount it finds is / itself. Shared, as / is on every systemd host.
# (A node in its own namespace has it shared already: hack/lib-node.sh.)
if [ "$(in_node findmnt -no PROPAGATION /)" != shared ]; then
  in_node mount --make-shared /
  touch "$R/kubevirt-made-root-shared"
fi

# --- the operator manifest, as the release renders it ----------------------------------------------
# Two passes, as KubeVirt's release build: the generated manifests into the template, then the
# variables. (The templator's --virt-launcher-image does not reach the Deployment: it computes the
# Deployment before reading that flag; the operator's documented environment variables do, below.)
tmpl=(--kubevirt-logo-path="$KV_SRC/assets/kubevirt_logo.png" --namespace="$NS"
  --container-prefix="${OPERATOR_IMAGE%/*}" --container-tag="${OPERATOR_IMAGE##*:}")
"$BIN/manifest-templator" --process-files "${tmpl[@]}" --input-file="$KV_SRC/manifests/release/kubevirt-operator.yaml.in" \
  --generated-manifests-dir="$KV_SRC/manifests/generated" >"$R/kubevirt-operator.yaml.in"
"$BIN/manifest-templator" --process-vars "${tmpl[@]}" --input-file="$R/kubevirt-operator.yaml.in" \
  --image-pull-policy=IfNotPresent >"$R/kubevirt-operator.yaml"
! grep -q '{{' "$R/kubevirt-operator.yaml" || die "manifest-templator left template fields in $R/kubevirt-operator.yaml"
grep -q 'kind: Deployment' "$R/kubevirt-operator.yaml" || die "manifest-templator wrote no Deployment (see $R/kubevirt-operator.yaml)"
K apply --server-side -f "$R/kubevirt-operator.yaml" >/dev/null
K -n "$NS" set env deployment/virt-operator VIRT_LAUNCHER_IMAGE="$LAUNCHER_IMAGE" SIDECAR_SHIM_IMAGE="$SHIM_IMAGE" >/dev/null
say "virt-operator manifest applied ($OPERATOR_IMAGE, launcher $LAUNCHER_IMAGE)"
K -n "$NS" rollout status deployment/virt-operator --timeout="${LIMITS_DEPLOYED_S}s" >&2

# --- the KubeVirt CR ----------------------------------------------------------------------------------
K apply -f - >/dev/null <<Y
apiVersion: kubevirt.io/v1
kind: KubeVirt
metadata:
  name: kubevirt
  namespace: $NS
spec:
  imagePullPolicy: IfNotPresent
  infra:
    replicas: 1
  configuration:
    imagePullPolicy: IfNotPresent
    developerConfiguration:
      useEmulation: true
      featureGates: [Sidecar]
    # Our VMs name the machine type oberon (the RISC5 board our launcher's libvirt lists); KubeVirt
    # admits only the types listed here (the defaults for amd64 kept).
    architectureConfiguration:
      amd64:
        emulatedMachines: [q35*, pc-q35*, oberon]
  customizeComponents: {}
  workloadUpdateStrategy: {}
Y
say "KubeVirt CR applied; waiting for Deployed (up to ${LIMITS_DEPLOYED_S}s)"
deadline=$(($(date +%s) + LIMITS_DEPLOYED_S))
last=""
until [ "$(K -n "$NS" get kubevirt kubevirt -o jsonpath='{.status.phase}' 2>/dev/null)" = Deployed ]; do
  now=$(K -n "$NS" get pods --no-headers 2>/dev/null | awk '{print $1 "=" $3}' | tr '\n' ' ')
  [ "$now" = "$last" ] || say "pods: $now"
  last=$now
  [ "$(date +%s)" -lt "$deadline" ] || die "KubeVirt not Deployed within ${LIMITS_DEPLOYED_S}s: $(K -n "$NS" get kubevirt kubevirt -o jsonpath='{.status.conditions}')"
  sleep 5
done
K -n "$NS" wait pod --all --for=condition=Ready --timeout=300s >&2
say "KubeVirt Deployed, every pod in $NS Ready"
echo "$R/kubeconfig"
