#!/usr/bin/env bash
# Builds the root Dockerfile with a real engine (buildah, Debian package) where no image registry
# can be reached: the same recipe a person with Docker runs, given two build arguments —
#   NODE_IMAGE       the base made here by hack/build-node-base.sh (default there: node:24-slim)
#   OBERON_BASE_URL  a loopback server handing out the local copy of the Oberon base disk (the
#                    build checks its sha256 as it checks the public download)
# and --network host for `npm ci` (the npm registry is reachable). buildah keeps its images in its
# own store under the cache (never the machine's /var/lib/containers).
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
  (cd "$REPO" && git ls-files -z -- package.json package-lock.json LICENSE crds operator images ':!:**/*.test.ts' |
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
base=$(bash "$HACK/build-node-base.sh")
B=(buildah --root "$WORK/store" --runroot "$WORK/run" --storage-driver overlay)

# The Oberon base disk, found (sha256 checked) and served on loopback for the build's download.
disk_json=$(cd "$REPO" && "$NODE" operator/src/cli/main.ts disk base --no-download -o json) ||
  die "no local Oberon base disk; run: node operator/src/cli/main.ts disk base"
disk=$(echo "$disk_json" | "$NODE" -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).path)')
serve="$WORK/serve-$$"
mkdir -p "$serve" && cp "$disk" "$serve/"
port=$((20000 + RANDOM % 20000))
busybox httpd -f -p "127.0.0.1:$port" -h "$serve" &
httpd_pid=$!
ctx="$WORK/context-$$"
cleanup() {
  kill "$httpd_pid" 2>/dev/null || true
  rm -rf "$serve" "$ctx"
}
trap cleanup EXIT

# The context: what a fresh clone has (git-tracked files), so untracked files never slip in.
mkdir -p "$ctx"
(cd "$REPO" && git ls-files -z | xargs -0 -I{} cp --parents -p {} "$ctx/" 2>/dev/null || true)
cp "$REPO/Dockerfile" "$REPO/.dockerignore" "$ctx/"

say "base: pull oci-archive:$base"
base_id=$("${B[@]}" pull --quiet "oci-archive:$base" | tail -1)
"${B[@]}" tag "$base_id" "localhost/node-base:$base_tag"
say "buildah build (npm ci, the Kube disk built by ORP in the emulator: minutes) ($(($(date +%s) - t0)) s)"
# --layers: a rebuild after a source change reuses the deps stage (npm ci) while the lock is the same.
nice -n 10 "${B[@]}" build --isolation chroot --network host --layers \
  --build-arg "NODE_IMAGE=localhost/node-base:$base_tag" \
  --build-arg "OBERON_BASE_URL=http://127.0.0.1:$port/$(basename "$disk")" \
  -t "localhost/retrokube:buildah-$key" -f "$ctx/Dockerfile" "$ctx" >&2
rm -f "$archive.tmp"
"${B[@]}" push --quiet "localhost/retrokube:buildah-$key" "oci-archive:$archive.tmp:localhost/retrokube:buildah-$key" >&2
mv "$archive.tmp" "$archive"
# The store keeps what the next build reuses (the base, cached layers); the image is in the archive.
"${B[@]}" rmi --force "localhost/retrokube:buildah-$key" >/dev/null 2>&1 || true
"${B[@]}" rmi --prune >/dev/null 2>&1 || true
say "image localhost/retrokube:buildah-$key: $(du -h "$archive" | cut -f1) ($(($(date +%s) - t0)) s)"
echo "$archive"
