#!/usr/bin/env bash
# The `cluster` suite on a kind cluster, for people with Docker (the CI machine has no Docker: it
# runs the same suite on hack/node-up.sh's node instead).
#   docker build -> kind create cluster -> kind load docker-image -> vitest --project cluster
# Needs: docker, kind, kubectl, helm (or hack/build-testbins.sh's), vncsnapshot and djpeg
# (Debian: vncsnapshot libjpeg-turbo-progs), npm install done.
# Usage: hack/kind-e2e.sh        KIND_CLUSTER=name keeps another name; KIND_KEEP=1 keeps the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER=${KIND_CLUSTER:-retrokube-e2e}
IMAGE=localhost/retrokube:kind-e2e
for c in docker kind vncsnapshot djpeg; do
  command -v "$c" >/dev/null || { echo "kind-e2e: $c is required" >&2; exit 1; }
done
tb=$(bash hack/build-testbins.sh --print-dir)
export KUBECTL_BIN=${KUBECTL_BIN:-$( [ -x "$tb/kubectl" ] && echo "$tb/kubectl" || command -v kubectl)}
export HELM_BIN=${HELM_BIN:-$( [ -x "$tb/helm" ] && echo "$tb/helm" || command -v helm)}
[ -n "$KUBECTL_BIN" ] && [ -n "$HELM_BIN" ] || { echo "kind-e2e: kubectl and helm are required" >&2; exit 1; }

docker build -t "$IMAGE" .
work=$(mktemp -d)
kind create cluster --name "$CLUSTER" --kubeconfig "$work/kubeconfig" --wait 180s
cleanup() {
  if [ "${KIND_KEEP:-}" = 1 ]; then echo "kind-e2e: cluster $CLUSTER kept ($work/kubeconfig)" >&2; return; fi
  kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
kind load docker-image "$IMAGE" --name "$CLUSTER"
# kind ships CoreDNS, kube-proxy and local-path-provisioner as the default StorageClass: the suite
# needs nothing more. The chart gets the loaded image with pullPolicy Never.
RETROKUBE_CLUSTER_KUBECONFIG="$work/kubeconfig" RETROKUBE_CLUSTER_IMAGE="$IMAGE" \
  npx vitest run --project cluster
