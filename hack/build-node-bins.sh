#!/usr/bin/env bash
# Builds the binaries of the real test node (hack/node-up.sh), from sources, into a cache folder:
#   kubelet, kube-scheduler, kube-controller-manager, kube-proxy
#                    k8s.io/kubernetes (Go module proxy), one `go build` for all four; the same
#                    replace-line module as kube-apiserver in hack/build-testbins.sh (hack/lib-gomod.sh),
#                    so a warm Go build cache from that build is reused
#   coredns          CoreDNS with only the plugins the cluster DNS needs (hack/nodebins/cmd/coredns)
#   local-path-provisioner   github.com/rancher/local-path-provisioner, the provisioner kind ships
#   pause            the pod sandbox process (hack/nodebins/cmd/pause)
#   etcd             the node's datastore: go.etcd.io/etcd/server/v3 v3.6 through our module
#                    hack/nodebins/etcd (its own module: its logrus clashes with the provisioner's)
#   (coredns, provisioner, pause: one `go build` of our module hack/nodebins; its go.sum pins every dependency)
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/nodebins/<stamp>/  (printed on the last line).
# Idempotent: a binary already in the folder is not rebuilt (a second run takes well under 1 s).
# Usage: hack/build-node-bins.sh [--print-dir]   (--print-dir only prints the folder, builds nothing)
# Environment: RETROKUBE_NODEBINS_DIR overrides the folder; GOFLAGS/GOPROXY are honoured.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=hack/lib-gomod.sh
source "$HACK/lib-gomod.sh"

K8S_VERSION=v1.34.4   # the same release as kube-apiserver (hack/build-testbins.sh)
KUBE_CMDS=(kubelet kube-scheduler kube-controller-manager kube-proxy)
ADDON_CMDS=(coredns local-path-provisioner pause)

# The add-ons' stamp covers every file of our module (versions in go.mod/go.sum, our mains).
addons_hash=$(cd "$HACK/nodebins" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
STAMP="k8s-${K8S_VERSION}_addons-${addons_hash}"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/retrokube"
OUT="${RETROKUBE_NODEBINS_DIR:-$CACHE_ROOT/nodebins/$STAMP}"
WORK="$CACHE_ROOT/nodebins-work"
if [ "${1:-}" = "--print-dir" ]; then echo "$OUT"; exit 0; fi

say() { echo "[build-node-bins $(date +%H:%M:%S)] $*" >&2; }
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }
missing() { local b; for b in "$@"; do [ -x "$OUT/$b" ] || echo "$b"; done; }

command -v go >/dev/null || { echo "build-node-bins: the Go toolchain (go) is required; install Go >= 1.24" >&2; exit 1; }
mkdir -p "$OUT" "$WORK"
export CGO_ENABLED=0   # static binaries: they also run inside minimal images (coredns, provisioner, pause)

# Builds into a temp folder, then moves each binary into place, so an interrupted build never
# leaves a half-written binary that a later run would take as cached.
build_into_out() {
  local dir=$1 ldflags=$2
  shift 2
  local tmp="$OUT/.tmp-$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  (cd "$dir" && nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "$@")
  local f
  for f in "$tmp"/*; do mv "$f" "$OUT/"; done
  rmdir "$tmp"
}

# --- Kubernetes node components ----------------------------------------------------------------
todo=$(missing "${KUBE_CMDS[@]}")
if [ -z "$todo" ]; then
  say "kubelet, kube-scheduler, kube-controller-manager, kube-proxy: cached"
else
  say "kubernetes: module k8s.io/kubernetes@$K8S_VERSION, go mod tidy (downloads modules on a cold cache)"
  pkgs=()
  for c in $todo; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  k8s_module "$WORK/kube-$K8S_VERSION" "$K8S_VERSION" local/retrokube-nodebins "${KUBE_CMDS[@]/#/k8s.io/kubernetes/cmd/}"
  say "kubernetes: go build $(echo $todo) (~3-5 min after kube-apiserver warmed the Go build cache, ~20 min cold on 2 cores) ($(elapsed))"
  build_into_out "$WORK/kube-$K8S_VERSION" "$(k8s_ldflags "$K8S_VERSION")" "${pkgs[@]}"
  say "kubernetes: done ($(elapsed))"
fi

# --- add-ons: CoreDNS, local-path-provisioner, pause ---------------------------------------------
todo=$(missing "${ADDON_CMDS[@]}")
if [ -z "$todo" ]; then
  say "coredns, local-path-provisioner, pause: cached"
else
  pkgs=()
  for c in $todo; do
    case $c in
      local-path-provisioner) pkgs+=(github.com/rancher/local-path-provisioner) ;;
      *) pkgs+=("./cmd/$c") ;;
    esac
  done
  say "add-ons: go build $(echo $todo) (~6-8 min on a cold Go cache, downloads modules first) ($(elapsed))"
  build_into_out "$HACK/nodebins" "-s -w" "${pkgs[@]}"
  say "add-ons: done ($(elapsed))"
fi

# --- etcd ------------------------------------------------------------------------------------------
if [ -x "$OUT/etcd" ]; then
  say "etcd: cached"
else
  say "etcd: go build (~3-5 min on a cold Go cache) ($(elapsed))"
  build_into_out "$HACK/nodebins/etcd" "-s -w" .
  say "etcd: done ($(elapsed))"
fi

"$OUT/kubelet" --version >&2
"$OUT/coredns" -version 2>&1 | sed -n 1p >&2   # sed reads it all: no SIGPIPE under pipefail
say "node binaries ready in $(elapsed)"
echo "$OUT"
