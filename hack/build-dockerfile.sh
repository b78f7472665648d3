#!/usr/bin/env bash
# Builds the root Dockerfile with a real engine (buildah, Debian package) where no image registry
# can be reached: the same recipe a person with Docker runs, given two build arguments —
#   NODE_IMAGE       the base made here by hack/build-node-base.sh (default there: node:24-slim)
#   OBERON_BASE_URL  a loopback server handing out the local copy of the Oberon base disk (the
#                    build checks its sha256 as it checks the public download)
# and --network host for `npm ci` (the npm registry is reachable). buildah keeps its images in its
# own store under the cache (never the machine's /var/lib/containers), with --layers: every
# instruction's result stays a cached layer, so after a change in operator/ only the Dockerfile's
# last COPY runs again (bench/dockerfile measures it and checks which steps ran). A set-up step;
# test/e2e/dockerfile-build.test.ts compares the result with hack/build-image.sh's archive.
#
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/image/retrokube-buildah-<key>.oci.tar (image
# localhost/retrokube:buildah-<key>), <key> hashing every input; a second run only computes it.
# Usage: hack/build-dockerfile.sh [--print-path]
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HACK/.." && pwd)
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/retrokube"
OUTDIR="${RETROKUBE_IMAGE_DIR:-$CACHE_ROOT/image}"
WORK="$CACHE_ROOT/image-work/buildah"
# What the Dockerfile's COPYs take from the build context (the rest is .dockerignore'd anyway).
CONTEXT=(package.json package-lock.json LICENSE crds operator images)
SERVE_PORT=38617           # the base disk's loopback server: fixed, as it is part of a layer's cache key
STORE_MAX_KIB=$((3 * 1024 * 1024)) # a warm build adds ~4 MB (operator/); past 3 GiB the store starts over
ARCHIVES_KEPT=3            # worktrees share the cache: a few recent archives stay, older ones go
print_only=false
[ "${1:-}" = "--print-path" ] && print_only=true
say() { $print_only || echo "[build-dockerfile $(date +%H:%M:%S)] $*" >&2; }
die() { echo "build-dockerfile: $*" >&2; exit 1; }
t0=$(date +%s)

NODE="$REPO/node_modules/.bin/node"
[ -x "$NODE" ] || die "the project's Node ($NODE) is missing; run npm install first"
command -v buildah >/dev/null || die "buildah is required: apt-get install buildah"
[ -x /bin/busybox ] || die "busybox-static is required (the loopback file server)"
base=$(bash "$HACK/build-node-base.sh" --print-path)
base_tag=$(basename "$base" .oci.tar | sed 's/^node-base-//')
# Every file the build context sends (git-tracked; tests are .dockerignore'd) and the recipe.
key=$({
  cat "$0" "$REPO/Dockerfile" "$REPO/.dockerignore"
  echo "$base"
  (cd "$REPO" && git ls-files -z -- "${CONTEXT[@]}" ':!:**/*.test.ts' |
    xargs -0 sha256sum)
} | sha256sum | cut -c1-16)
archive="$OUTDIR/retrokube-buildah-$key.oci.tar"
if $print_only; then echo "$archive"; exit 0; fi
if [ -s "$archive" ]; then
  say "cached: $archive"
  echo "$archive"
  exit 0
fi
[ "$(id -u)" = 0 ] || die "buildah needs root here (mounts); run as root"
mkdir -p "$OUTDIR" "$WORK"
# One build at a time in this store (worktrees share the cache); another may have just made ours.
exec 9>"$WORK/lock"
flock 9
if [ -s "$archive" ]; then
  say "cached (built while we waited): $archive"
  echo "$archive"
  exit 0
fi
base=$(bash "$HACK/build-node-base.sh")
B=(buildah --root "$WORK/store" --runroot "$WORK/run" --storage-driver overlay)
store_kib=$(du -sk "$WORK/store" 2>/dev/null | cut -f1 || echo 0)
if [ "${store_kib:-0}" -gt "$STORE_MAX_KIB" ]; then
  say "the layer store holds $((store_kib / 1024)) MiB (> $((STORE_MAX_KIB / 1024)) MiB): emptied, this build is cold"
  "${B[@]}" rm --all >/dev/null 2>&1 || true
  "${B[@]}" rmi --all --force >/dev/null 2>&1 || true
fi

# The Oberon base disk, found (sha256 checked) and served on loopback for the build's download.
disk_json=$(cd "$REPO" && "$NODE" operator/src/cli/main.ts disk base --no-download -o json) ||
  die "no local Oberon base disk; run: node operator/src/cli/main.ts disk base"
disk=$(echo "$disk_json" | "$NODE" -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).path)')
serve="$WORK/serve"
ctx="$WORK/context"
rm -rf "$serve" "$ctx"
mkdir -p "$serve" && cp "$disk" "$serve/"
httpd_pid=
cleanup() {
  [ -z "$httpd_pid" ] || kill "$httpd_pid" 2>/dev/null || true
  rm -rf "$serve" "$ctx"
}
trap cleanup EXIT
# The URL is a build argument of the disks stage, so it is part of that layer's cache key: the same
# port every build (one build at a time holds the lock); a random one only when that port is taken,
# and then the disks stage is built again (seconds).
serve_on() {
  busybox httpd -f -p "127.0.0.1:$1" -h "$serve" &
  httpd_pid=$!
  sleep 0.3
  kill -0 "$httpd_pid" 2>/dev/null
}
port=$SERVE_PORT
if ! serve_on "$port"; then
  port=$((20000 + RANDOM % 20000))
  say "127.0.0.1:$SERVE_PORT is taken; serving the base disk on $port (the disks stage is rebuilt)"
  serve_on "$port" || die "could not serve the base disk on 127.0.0.1:$port"
fi

# The context: what a fresh clone has (git-tracked files) of what the Dockerfile copies, so untracked
# files never slip in; every mtime 0, so a layer's cache key is the files' content and modes only
# (a checkout or another worktree of the same sources hits the same cached layers).
mkdir -p "$ctx"
(cd "$REPO" && git ls-files -z -- "${CONTEXT[@]}" | tar --null -T - -cf -) | tar -xf - -C "$ctx"
cp "$REPO/Dockerfile" "$REPO/.dockerignore" "$ctx/"
find "$ctx" -exec touch -h -d @0 {} +

say "base: pull oci-archive:$base"
base_id=$("${B[@]}" pull --quiet "oci-archive:$base" | tail -1)
"${B[@]}" tag "$base_id" "localhost/node-base:$base_tag"
say "buildah build --layers (cold: npm ci from the registry, the Kube disk by ORP in the emulator) ($(($(date +%s) - t0)) s)"
# --force-rm: a failed step leaves no working container (with its layers mounted) behind.
# --layers: each instruction's result is a cached layer keyed by its parent, its text and build
# arguments, and for COPY the copied files' content: after a change in operator/ only the final
# COPY runs again; a changed package.json or lock runs npm ci again (the deps stage's first COPY).
nice -n 10 "${B[@]}" build --isolation chroot --network host --layers --force-rm \
  --build-arg "NODE_IMAGE=localhost/node-base:$base_tag" \
  --build-arg "OBERON_BASE_URL=http://127.0.0.1:$port/$(basename "$disk")" \
  -t "localhost/retrokube:buildah-$key" -f "$ctx/Dockerfile" "$ctx" >&2
say "push oci-archive ($(($(date +%s) - t0)) s)"
rm -f "$archive.tmp"
nice -n 10 "${B[@]}" push --quiet "localhost/retrokube:buildah-$key" "oci-archive:$archive.tmp:localhost/retrokube:buildah-$key" >&2
mv "$archive.tmp" "$archive"
# The store keeps the layers the next build reuses (intermediate images of --layers, untagged:
# never `rmi --prune` them) under one tag for the last build; older archives beyond the newest few go.
"${B[@]}" tag "localhost/retrokube:buildah-$key" localhost/retrokube:buildah-last >/dev/null
"${B[@]}" rmi "localhost/retrokube:buildah-$key" >/dev/null 2>&1 || true
# shellcheck disable=SC2012
ls -t "$OUTDIR"/retrokube-buildah-*.oci.tar 2>/dev/null | tail -n +$((ARCHIVES_KEPT + 1)) | xargs -r rm -f
say "image localhost/retrokube:buildah-$key: $(du -h "$archive" | cut -f1) ($(($(date +%s) - t0)) s)"
echo "$archive"
