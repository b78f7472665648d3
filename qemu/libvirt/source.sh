#!/usr/bin/env bash
# Print the path of Debian bookworm's libvirt source tree (apt-get source, Debian's patches
# applied), fetching and extracting it into the cache on first use.  patch_libvirt.py edits a
# copy of it; building libvirt itself is the launcher recipe's job (images/virt-launcher/).
#
# SPDX-License-Identifier: GPL-2.0-or-later
set -euo pipefail
VERSION="${LIBVIRT_DEB_VERSION:-9.0.0-4+deb12u2}"
SRC="${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/libvirt/$VERSION"
TREE="$SRC/libvirt-src"
if [[ ! -f "$TREE/src/util/virarch.h" ]]; then
  mkdir -p "$SRC"
  LIST=/etc/apt/sources.list.d/retrokube-qemu-src.sources
  if [[ ! -f "$LIST" ]]; then
    echo "libvirt/source.sh: run qemu/build.sh first (it writes the deb-src list $LIST)" >&2
    exit 1
  fi
  apt-get update -o Dir::Etc::sourcelist="$LIST" -o Dir::Etc::sourceparts=- \
    -o APT::Get::List-Cleanup=0 >/dev/null
  (cd "$SRC" && apt-get source --download-only "libvirt=$VERSION" >/dev/null 2>&1)
  rm -rf "$TREE.tmp"
  (cd "$SRC" && dpkg-source -x "libvirt_$VERSION.dsc" libvirt-src.tmp >/dev/null)
  mv "$TREE.tmp" "$TREE"
fi
echo "$TREE"
