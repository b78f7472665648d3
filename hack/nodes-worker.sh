#!/usr/bin/env bash
# One worker of the multi-node cluster (hack/nodes-up.sh), for fault tests and benchmarks:
#   hack/nodes-worker.sh off I    power cut: its kubelet, kube-proxy and containerd SIGKILLed, then
#                                 its containers; the API server is told nothing (the node goes
#                                 NotReady when its heartbeats stop)
#   hack/nodes-worker.sh on I     power back: the same containerd state, kubelet and kube-proxy start
#                                 again and the node rejoins under its name; waits until Ready
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=hack/lib-nodes.sh
source "$HACK/lib-nodes.sh"
# shellcheck source=hack/lib-oci.sh
source "$HACK/lib-oci.sh"
verb=${1:-}
i=${2:-}
n=$(cat "$R/saved/nodes" 2>/dev/null) || { echo "nodes-worker: no cluster at $R; start one with hack/nodes-up.sh N" >&2; exit 1; }
if ! [[ "$i" =~ ^[0-9]+$ ]] || [ "$i" -lt 1 ] || [ "$i" -gt "$n" ] || { [ "$verb" != off ] && [ "$verb" != on ]; }; then
  echo "nodes-worker: usage: hack/nodes-worker.sh off|on I (1 ≤ I ≤ $n)" >&2
  exit 2
fi
[ "$(id -u)" = 0 ] || { echo "nodes-worker: needs root" >&2; exit 1; }
if [ "$verb" = off ]; then
  worker_power_off "$i"
  echo "[nodes-worker] $(worker_name "$i") powered off" >&2
  exit 0
fi
if [ -e "$R/pids/w$i-kubelet.pid" ] && [ "$(readlink "/proc/$(cat "$R/pids/w$i-kubelet.pid")/exe" 2>/dev/null)" = "$(cat "$R/pids/w$i-kubelet.exe")" ]; then
  echo "nodes-worker: $(worker_name "$i") is already on" >&2
  exit 1
fi
worker_start "$i" "$(cat "$R/saved/testbins")" "$(cat "$R/saved/nodebins")" ||
  { echo "nodes-worker: $(worker_name "$i") did not start (see $R/logs/w$i-*.log)" >&2; exit 1; }
wait_until 180 "$(cat "$R/saved/testbins")/kubectl" --kubeconfig "$R/admin.kubeconfig" \
  wait --for=condition=Ready "node/$(worker_name "$i")" --timeout=5s ||
  { echo "nodes-worker: $(worker_name "$i") did not become Ready in 180 s (see $R/logs/w$i-kubelet.log)" >&2; exit 1; }
echo "[nodes-worker] $(worker_name "$i") on and Ready" >&2
