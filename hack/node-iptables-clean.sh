#!/usr/bin/env bash
# Removes the iptables and ip6tables chains the test node's kubelet makes for itself and that
# `kube-proxy --cleanup` leaves behind (KUBE-FIREWALL with jumps from INPUT and OUTPUT, the
# canaries, the mark chains): first every rule that jumps to one of them, then the chains.
# Only these names are touched; other KUBE-* chains are kube-proxy's, which --cleanup removes.
# Called by hack/node-down.sh; safe to run twice. Needs root (or a network namespace of one's own).
set -uo pipefail
CHAINS=(KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-PROXY-CANARY KUBE-MARK-DROP KUBE-MARK-MASQ KUBE-POSTROUTING)
is_ours() { local c; for c in "${CHAINS[@]}"; do [ "$1" = "$c" ] && return 0; done; return 1; }

for ipt in iptables ip6tables; do
  command -v "$ipt" >/dev/null 2>&1 || continue
  for table in filter nat mangle; do
    rules=$("$ipt" -w -t "$table" -S 2>/dev/null) || continue
    # Jumps first (a chain still referenced cannot be deleted): "-A CHAIN ... -j TARGET ...".
    while IFS= read -r rule; do
      target=$(sed -nE 's/.* -j ([^ ]+).*/\1/p' <<<"$rule")
      [ -n "$target" ] && is_ours "$target" || continue
      # -S prints rules in iptables' own quoting: evaluate it as the arguments of a delete.
      eval "\"\$ipt\" -w -t \"\$table\" -D ${rule#-A }" 2>/dev/null
    done < <(grep -E '^-A ' <<<"$rules")
    for c in "${CHAINS[@]}"; do
      if grep -qxE -- "-N $c" <<<"$rules"; then
        "$ipt" -w -t "$table" -F "$c" 2>/dev/null
        "$ipt" -w -t "$table" -X "$c" 2>/dev/null
      fi
    done
  done
done
exit 0
