#!/usr/bin/env bash
# The `cluster` suite on a kind cluster, for people with Docker and an image registry (CI runs the
# same suite on hack/node-up.sh's node instead).
#   docker build -> kind create cluster -> kind load docker-image -> vitest --project cluster
# Needs: docker, kind (go install sigs.k8s.io/kind@v0.29.0), kubectl, helm (or
# hack/build-testbins.sh's), vncsnapshot and djpeg (Debian: vncsnapshot libjpeg-turbo-progs),
# npm install done, and a kind node image: KIND_NODE_IMAGE, else kind's default kindest/node,
# which the docker daemon must have or be able to pull.
#
# Without an image registry this script stops before creating anything and says why: kind cannot
# make its node image from packages alone. `kind create cluster` needs kindest/node (docker.io);
# `kind build node-image` starts FROM docker.io/kindest/base and pulls kindnetd and
# local-path-provisioner images from docker.io; kind's images/base/Dockerfile, which makes
# kindest/base, starts FROM debian:bookworm-slim (docker.io) and git-clones containerd, runc,
# crictl and the CNI plugins from GitHub and fetches Go with gimme. Load a node image with
# `docker load` (from a machine that has one) and pass KIND_NODE_IMAGE to run here.
# Usage: hack/kind-e2e.sh   KIND_CLUSTER=name another name; KIND_KEEP=1 keeps the cluster;
#        KIND_NODE_IMAGE=image the node image; DOCKER_BUILD_ARGS="--build-arg NODE_IMAGE=..." for
#        the Dockerfile (see hack/build-dockerfile.sh for a build without a registry).
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER=${KIND_CLUSTER:-retrokube-e2e}
IMAGE=localhost/retrokube:kind-e2e
for c in docker kind vncsnapshot djpeg; do
  command -v "$c" >/dev/null || { echo "kind-e2e: $c is required" >&2; exit 1; }
done
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  { echo "kind-e2e: no Docker daemon answers (DOCKER_HOST=${DOCKER_HOST:-unix:///var/run/docker.sock})" >&2; exit 1; }
tb=$(bash hack/build-testbins.sh --print-dir)
export KUBECTL_BIN=${KUBECTL_BIN:-$( [ -x "$tb/kubectl" ] && echo "$tb/kubectl" || command -v kubectl)}
export HELM_BIN=${HELM_BIN:-$( [ -x "$tb/helm" ] && echo "$tb/helm" || command -v helm)}
[ -n "$KUBECTL_BIN" ] && [ -n "$HELM_BIN" ] || { echo "kind-e2e: kubectl and helm are required" >&2; exit 1; }

# The node image: given, already in the daemon, or pullable — else stop here, saying why.
node_image=${KIND_NODE_IMAGE:-}
if [ -z "$node_image" ]; then
  node_image=$(docker images --format '{{.Repository}}:{{.Tag}}' kindest/node | head -1)
fi
if [ -z "$node_image" ] || ! docker image inspect "$node_image" >/dev/null 2>&1; then
  want=${node_image:-"kindest/node (the default of kind)"}
  if ! docker pull "${node_image:-kindest/node:v1.33.1}" >/dev/null 2>&1; then
    cat >&2 <<EOF
kind-e2e: no kind node image: $want is not in the Docker daemon and cannot be pulled (no image
registry reachable). kind cannot make one from packages here: 'kind build node-image' starts FROM
docker.io/kindest/base and pulls kindnetd and local-path-provisioner from docker.io, and kindest/base
itself starts FROM debian:bookworm-slim and clones containerd, runc, crictl and the CNI plugins from
GitHub. Load a node image with 'docker load' and set KIND_NODE_IMAGE; CI runs the same suite on
hack/node-up.sh's node (npx vitest run --project cluster).
EOF
    exit 2
  fi
  node_image=${node_image:-kindest/node:v1.33.1}
fi

# shellcheck disable=SC2086
docker build ${DOCKER_BUILD_ARGS:-} -t "$IMAGE" .
work=$(mktemp -d)
kind create cluster --name "$CLUSTER" --image "$node_image" --kubeconfig "$work/kubeconfig" --wait 180s
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
