#!/usr/bin/env bash
# Everything the test suite needs that npm does not install: Debian packages and binaries built
# from Go modules. Idempotent; reuses caches under .cache/ when present.
set -euo pipefail
cd "$(dirname "$0")/.."
DEBS=(unzip vncsnapshot python3)
missing=()
for p in "${DEBS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# kube-apiserver, kine, helm, kubectl for the envtest suite (cold ~15 min on 2 cores, then cached).
echo "== test binaries (hack/build-testbins.sh)"
bash hack/build-testbins.sh
