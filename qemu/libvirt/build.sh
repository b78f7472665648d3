#!/usr/bin/env bash
# Build Debian bookworm's libvirt 9.0 with our RISC5 patch (patch_libvirt.py): only the QEMU
# driver, the remote driver, libvirtd and virsh — no docs, no tests, no other hypervisor,
# network, storage or security drivers (meson auto_features=disabled, then the few we need).
# The result is cached by a hash of the patch, this script, its package list and the Debian
# version:
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/libvirt/build-<hash>/{bin/virsh,sbin/libvirtd,...}
#
#   qemu/libvirt/build.sh               build if needed; print the install prefix
#   qemu/libvirt/build.sh --print-path  print the prefix (built or not), build nothing
#   qemu/libvirt/build.sh --check       exit 0 when the build is there, build nothing
#   qemu/libvirt/build.sh --deps        print the Debian packages the build needs
#
# The prefix is the cache folder itself (libvirt compiles its module and data paths in, and
# the binaries carry an rpath to its lib/), so the build is used where it was built.
#
# SPDX-License-Identifier: GPL-2.0-or-later
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSION="${LIBVIRT_DEB_VERSION:-9.0.0-4+deb12u2}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/libvirt"
JOBS="${JOBS:-2}"

HASH="$( (cd "$HERE" && sha256sum patch_libvirt.py build.sh build-deps.txt; echo "$VERSION") |
  sha256sum | cut -c1-16)"
OUT="$CACHE/build-$HASH"
READY="$OUT/.complete"

case "${1:-}" in
  --print-path) echo "$OUT"; exit 0 ;;
  --check) [[ -f "$READY" ]]; exit $? ;;
  --deps) grep -v '^#' "$HERE/build-deps.txt"; exit 0 ;;
  "") ;;
  *) echo "usage: qemu/libvirt/build.sh [--print-path|--check|--deps]" >&2; exit 2 ;;
esac

if [[ -f "$READY" ]]; then
  echo "$OUT"
  exit 0
fi

missing=()
for p in $(grep -v '^#' "$HERE/build-deps.txt"); do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "libvirt/build.sh: missing Debian packages: ${missing[*]} (apt-get install -y ${missing[*]})" >&2
  exit 1
fi

start=$(date +%s)
PRISTINE="$("$HERE/source.sh")"
# Patch a copy: the pristine tree stays what Debian ships (the patch test reads it).
WORK="$CACHE/work-$HASH"
rm -rf "$WORK"
mkdir -p "$WORK"
cp -a "$PRISTINE" "$WORK/src"
python3 "$HERE/patch_libvirt.py" "$WORK/src" >&2

# auto_features=disabled turns every optional feature off; then only what the QEMU driver
# under libvirtd, reached by virsh over the remote driver, needs.
(cd "$WORK/src" && nice -n 10 meson setup "$WORK/build" \
  --prefix="$OUT" --libdir=lib --buildtype=release -Dauto_features=disabled \
  -Ddriver_qemu=enabled -Ddriver_libvirtd=enabled -Ddriver_remote=enabled -Dyajl=enabled \
  -Drpath=enabled -Ddocs=disabled -Dtests=disabled -Dinit_script=none \
  -Dqemu_user=root -Dqemu_group=root >&2)
nice -n 10 ninja -C "$WORK/build" -j "$JOBS" >&2
rm -rf "$OUT"
meson install -C "$WORK/build" --quiet >&2
rm -rf "$WORK"
touch "$READY"
echo "libvirt/build.sh: built in $(( $(date +%s) - start )) s" >&2
echo "$OUT"
