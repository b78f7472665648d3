#!/usr/bin/env bash
# Build qemu-system-risc5: Debian bookworm's QEMU 7.2 source (apt-get source, with Debian's own
# patches and security fixes applied) + our RISC5 target and oberon board (graft.py), one
# target, a minimal configure.  The result is cached by a hash of our sources and this script:
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/qemu/<hash>/qemu-system-risc5
#
#   qemu/build.sh               build if needed; print the binary's path
#   qemu/build.sh --print-path  print where the binary is (or would be), build nothing
#   qemu/build.sh --deps        print the Debian packages the build needs (qemu/build-deps.txt)
#
# Why bookworm's 7.2 and `apt-get source`: it is the QEMU of the Debian this project builds and
# tests on, fetched through apt from the archive already configured (no other network), with
# Debian's patches (security fixes included) applied by dpkg-source.  The graft is written
# against 7.2's layout (hw/ and sysemu/ headers).  Newer suites (bookworm-backports) are not in
# this machine's sources.
#
# SPDX-License-Identifier: GPL-2.0-or-later
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
QEMU_DEB_VERSION="${QEMU_DEB_VERSION:-1:7.2+dfsg-7+deb12u18}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/qemu"
JOBS="${JOBS:-2}"

hash_sources() {
  (cd "$HERE" && find target hw configs graft.py build.sh build-deps.txt -type f -print0 | sort -z |
    xargs -0 sha256sum; echo "$QEMU_DEB_VERSION") | sha256sum | cut -c1-16
}

HASH="$(hash_sources)"
OUT="$CACHE/$HASH"
BIN="$OUT/qemu-system-risc5"

case "${1:-}" in
  --print-path) echo "$BIN"; exit 0 ;;
  --deps) grep -v '^#' "$HERE/build-deps.txt"; exit 0 ;;
  "") ;;
  *) echo "usage: qemu/build.sh [--print-path|--deps]" >&2; exit 2 ;;
esac

if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi

missing=()
for p in $(grep -v '^#' "$HERE/build-deps.txt"); do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "qemu/build.sh: missing Debian packages: ${missing[*]} (apt-get install -y ${missing[*]})" >&2
  exit 1
fi

SRC="$CACHE/src"
TREE="$SRC/qemu-7.2"
mkdir -p "$SRC"
if [[ ! -f "$TREE/VERSION" ]]; then
  # deb-src for bookworm, written as a sources file of our own (the system's list has only deb).
  LIST=/etc/apt/sources.list.d/retrokube-qemu-src.sources
  if [[ ! -f "$LIST" ]]; then
    cat > "$LIST" <<'SOURCES'
# Written by retrokube qemu/build.sh: Debian source packages (deb-src) for the QEMU graft.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  fi
  echo "qemu/build.sh: fetching Debian's QEMU source ($QEMU_DEB_VERSION)" >&2
  apt-get update -o Dir::Etc::sourcelist="$LIST" -o Dir::Etc::sourceparts=- \
    -o APT::Get::List-Cleanup=0 >/dev/null
  (cd "$SRC" && apt-get source --download-only "qemu=$QEMU_DEB_VERSION" >/dev/null 2>&1)
  rm -rf "$TREE.tmp"
  (cd "$SRC" && dpkg-source -x "qemu_${QEMU_DEB_VERSION#1:}.dsc" "$(basename "$TREE").tmp" >/dev/null)
  mv "$TREE.tmp" "$TREE"
fi

python3 "$HERE/graft.py" "$TREE" >&2

BUILD="$SRC/build-risc5"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  mkdir -p "$BUILD"
  (cd "$BUILD" && nice -n 10 "$TREE/configure" --target-list=risc5-softmmu \
    --without-default-features --without-default-devices --enable-tcg --enable-vnc \
    --disable-docs --disable-tools --disable-guest-agent --disable-werror \
    --disable-debug-info >&2)
fi
start=$(date +%s)
nice -n 10 ninja -C "$BUILD" -j "$JOBS" qemu-system-risc5 >&2
echo "qemu/build.sh: ninja took $(( $(date +%s) - start )) s" >&2
mkdir -p "$OUT/keymaps"
cp "$BUILD/qemu-system-risc5" "$BIN.tmp"
strip "$BIN.tmp" 2>/dev/null || true
cp "$TREE/pc-bios/keymaps/en-us" "$OUT/keymaps/" 2>/dev/null || true
mv "$BIN.tmp" "$BIN"
echo "$BIN"
