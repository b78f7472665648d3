#!/usr/bin/env bash
# Builds Flux's helm-controller and source-controller (the two controllers Cozystack installs its
# catalog apps with) from their Go modules, into a cache folder, with their CRDs beside them:
#   helm-controller     github.com/fluxcd/helm-controller v1.4.0   (Flux 2.7; our module hack/fluxbins/helm-controller)
#   source-controller   github.com/fluxcd/source-controller v1.7.2 (Flux 2.7; our module hack/fluxbins/source-controller)
#   crds/*.yaml         config/crd/bases of both modules, as the module proxy serves them
# Each controller has its own module (their Kubernetes and Helm dependency versions differ); its
# go.sum pins every dependency. Newer releases need Go 1.27 (source-controller v1.10) or are not
# served by the module proxy (helm-controller's version list is refused; v1.4.0 is served).
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/fluxbins/<stamp>/  (printed on the last line).
# Idempotent: a binary already in the folder is not rebuilt.
# A step of hack/setup.ts (issue #30 item 3), after the other Go builds: Go's default module and
# build caches are shared with them. test/cluster/marketplace-flux.test.ts needs the folder (under
# CI=true its absence fails the test).
# Usage: hack/build-flux-bins.sh [--print-dir]
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
CTRLS=(helm-controller source-controller)

hash=$(cd "$HACK/fluxbins" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/retrokube"
OUT="${RETROKUBE_FLUXBINS_DIR:-$CACHE_ROOT/fluxbins/flux-$hash}"
if [ "${1:-}" = "--print-dir" ]; then echo "$OUT"; exit 0; fi

say() { echo "[build-flux-bins $(date +%H:%M:%S)] $*" >&2; }
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }

command -v go >/dev/null || { echo "build-flux-bins: the Go toolchain (go) is required; install Go >= 1.25" >&2; exit 1; }
mkdir -p "$OUT/crds"
export CGO_ENABLED=0

for c in "${CTRLS[@]}"; do
  dir="$HACK/fluxbins/$c"
  mod="github.com/fluxcd/$c"
  if [ -x "$OUT/$c" ]; then
    say "$c: cached"
  else
    say "$c: go build $mod (downloads modules on a cold cache) ($(elapsed))"
    tmp="$OUT/.tmp-$$"
    rm -rf "$tmp" && mkdir -p "$tmp"
    (cd "$dir" && nice -n 10 go build -mod=mod -trimpath -ldflags "-s -w" -o "$tmp/$c" "$mod")
    mv "$tmp/$c" "$OUT/$c" && rmdir "$tmp"
    say "$c: done ($(elapsed))"
  fi
  src=$(cd "$dir" && go list -mod=mod -m -f '{{.Dir}}' "$mod")
  cp "$src"/config/crd/bases/*.yaml "$OUT/crds/"
  chmod u+w "$OUT"/crds/*.yaml
done
say "flux controllers ready in $(elapsed)"
echo "$OUT"
