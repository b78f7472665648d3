#!/usr/bin/env bash
# Builds KubeVirt v1.8.4 (the release Cozystack ships, /work/shared/kubevirt) from the Go module
# proxy — no registry, no Docker — for the real test node (#25):
#   one `go build` with cgo against our patched libvirt (qemu/libvirt/build.sh):
#     virt-operator virt-api virt-controller virtctl manifest-templator (renders the release's
#     operator manifest: hack/kubevirt-up.sh), virt-handler virt-chroot, virt-launcher
#     virt-launcher-monitor virt-probe virt-tail virt-freezer, sidecars (KubeVirt's sidecar-shim)
# then OCI archives (hack/lib-oci.sh, hack/kubevirt/lib-rootfs.sh) for `ctr images import` on the
# node: localhost/kubevirt/{virt-operator,virt-api,virt-controller,virt-handler,sidecar-shim}:v1.8.4
# and our RISC5 launcher localhost/kubevirt/virt-launcher:v1.8.4-risc5-local.
#
# STATUS: a step of hack/setup.ts (so of npm test and CI); proven on the real node (below).
#   works:  the module. kubevirt.io/kubevirt requires its staging modules kubevirt.io/api and
#           kubevirt.io/client-go through `replace => ./staging/...`, which the go command ignores
#           outside the main module (and the module zip leaves out nested modules), so a small
#           main module repeats KubeVirt's own replace lines with the staging ones pointed at the
#           published kubevirt.io/api and kubevirt.io/client-go v1.8.4 (as hack/lib-gomod.sh does
#           for Kubernetes). The checksum database refuses lookups for several of KubeVirt's
#           dependencies here (HTTP 404 from sum.golang.org through the proxy), so go.sum starts
#           as KubeVirt's own go.sum: every module is checked against the hash KubeVirt pinned.
#           `go mod tidy` then resolves every package of the components above (`--module`, 8 s
#           with the module cache warm).
#   works:  our node-labeller.sh (hack/kubevirt/node-labeller.sh) in the launcher's root
#           filesystem, run in a chroot as root: our virtqemud answers, capabilities list the risc5
#           guest, domcapabilities of risc5/oberon/qemu are written.
#   stand-in: libguestfs.org/libnbd — the proxy refuses it (HTTP 403), and its only user in
#           virt-launcher is the NBD client of changed-block backups, which an Oberon machine
#           never has. hack/kubevirt/libnbd is a replacement module with the names that client
#           uses, every call failing with "libnbd is not built into this virt-launcher": a backup
#           asked of our launcher fails loudly. Nothing else is replaced.
#   one build: a first run with two builds (CGO_ENABLED=0 for the control plane, cgo for the rest)
#           compiled the shared packages twice (a package built without cgo is not reused by a cgo
#           build: net and os/user differ and nearly everything depends on them), so all 13
#           components build in one cgo `go build` (1455 packages).
#   works (first cold run 2026-12-01, AMD EPYC 2 cores, load 18-40 beside other builds, nice 10):
#           the one cgo build of all 13 components, 3729 s cold (Go build cache cold for KubeVirt
#           and k8s.io/* at these versions); libvirt.org/go/libvirt v1.11005 compiles against our
#           libvirt 9.0 headers (virt-launcher links our libvirt.so.0). The six images, 62 s
#           (178 MB of archives; the launcher 72 MB). Warm: images rebuilt 60 s; all cached, --check
#           answers at once. manifest-templator renders the release's operator manifest (two passes).
#   ran on the node (2026-12-01, hack/kubevirt-up.sh by hand, not yet a test): the images import;
#           virt-operator (2 replicas, our image) Running; it deploys virt-api and virt-controller,
#           both Running. Fixed on the way: the node's API server lacked the aggregation layer's
#           front proxy (virt-api panicked without kube-system/extension-apiserver-authentication;
#           node-up.sh has it now); virt-operator requires a control-plane node (kubevirt-up labels
#           it); virt-handler's Bidirectional hostPaths need shared mounts, and containerd looks up
#           /var/run/kubevirt without resolving the /var/run symlink, so / itself must be shared (as
#           on systemd hosts; kubevirt-up makes it so); virt-handler panicked on a host-model mode
#           without a CPU model (node-labeller.sh names one).
#   runs on the node (2026-12-02, test/cluster/kubevirt.test.ts, now part of npm test):
#           with the node in a PID namespace of its own (RETROKUBE_NODE_PIDNS=1 hack/node-up.sh:
#           virt-handler enters /proc/1/ns/mnt, which this machine's own PID 1 refuses even to
#           root), KubeVirt is Deployed with every pod Ready, an OberonKube with runtime: kubevirt
#           runs as VMs of our launcher, virtctl vnc shows their screens, faults heal. What the
#           images needed on the way: /var/run -> /run, the monitor's file capability, sysctl,
#           a CPU vendor in the node labeller (docs/qemu.md).
#   cold again (2026-12-02, load 2-5, the Go module and build caches holding only the set-up's
#           earlier steps): 251 s in all (the go build 206 s, the images 25 s). The hour of the first
#           run was the load, not the build: the step joined the set-up and the test npm test.
#
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/retrokube/kubevirt/<stamp>/{bin/*,images/*.oci.tar}
# (printed on the last line); <stamp> = the version + a hash of what the binaries are built from;
# the images sit in images/<key>, a hash of their recipe (the images part of this script,
# hack/kubevirt/, our QEMU and libvirt builds, the Debian packages copied).
# Usage: hack/build-kubevirt.sh [--print-dir|--print-images|--check|--module]
#   --print-dir  print the folder, build nothing
#   --print-images  print the images' folder, build nothing
#   --check      exit 0 when every binary and image is there, build nothing
#   --module     only write and tidy the module (downloads; compiles nothing), print its folder
# Environment: RETROKUBE_KUBEVIRT_DIR overrides the folder; GOFLAGS/GOPROXY are honoured; the Go
# build cache is the shared one (the Kubernetes builds warm k8s.io/* packages for it).
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HACK/.." && pwd)
# shellcheck source=hack/lib-oci.sh
source "$HACK/lib-oci.sh"

KUBEVIRT_VERSION=v1.8.4
# One `go build` with cgo for all: a package compiled with CGO_ENABLED=0 is not reused by a cgo build
# (net and os/user differ, and nearly every Kubernetes package depends on them), so two builds
# compiled KubeVirt's ~2000 packages twice. The control-plane images carry libc for it.
CMDS=(virt-operator virt-api virt-controller virtctl manifest-templator
  virt-handler virt-launcher virt-launcher-monitor virt-chroot virt-probe virt-tail virt-freezer sidecars)
IMAGES=(virt-operator virt-api virt-controller virt-handler virt-launcher sidecar-shim)
IMAGE_PREFIX=localhost/kubevirt
IMAGE_UID=1001 # KubeVirt's control-plane images run as a non-root numeric user
QEMU_UID=107   # KubeVirt's non-root launcher runs as qemu:107
LAUNCHER_TAG="$KUBEVIRT_VERSION-risc5-local" # what OberonMachine's LauncherReady recognises

# The binaries' folder is keyed by what they are built from (not by the image recipe below): the
# version, the component lists, the link flags, the libnbd stand-in, Go and our libvirt's path.
cmd_path() { case $1 in manifest-templator) echo "kubevirt.io/kubevirt/tools/$1" ;; *) echo "kubevirt.io/kubevirt/cmd/$1" ;; esac; }
ldflags() {
  echo "-s -w -X kubevirt.io/client-go/version.gitVersion=$KUBEVIRT_VERSION -X kubevirt.io/client-go/version.gitTreeState=clean"
}
stamp_hash=$( (echo "$KUBEVIRT_VERSION ${CMDS[*]} $(ldflags) $(go version 2>/dev/null)"
  "$REPO/qemu/libvirt/build.sh" --print-path
  cd "$HACK" && find kubevirt/libnbd -type f | LC_ALL=C sort | xargs cat) | sha256sum | cut -c1-12)
STAMP="${KUBEVIRT_VERSION}_${stamp_hash}"
# The images are keyed by their recipe (this script, hack/kubevirt/) and their parts' builds.
image_key=$( (cd "$HACK" && sed -n '/^# --- images ---/,$p' build-kubevirt.sh && cat lib-oci.sh && find kubevirt -type f | LC_ALL=C sort | xargs cat
  "$REPO/qemu/build.sh" --print-path; dpkg-query -W busybox-static libc6 python3.11-minimal libpython3.11-stdlib 2>/dev/null) |
  sha256sum | cut -c1-12)
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/retrokube"
OUT="${RETROKUBE_KUBEVIRT_DIR:-$CACHE_ROOT/kubevirt/$STAMP}"
WORK="$CACHE_ROOT/kubevirt-work"
MOD="$WORK/mod-$STAMP"

missing() {
  local c
  for c in "$@"; do [ -x "$OUT/bin/$c" ] || echo "$c"; done
}
missing_images() {
  local i
  for i in "${IMAGES[@]}"; do [ -s "$OUT/images/$image_key/$i.oci.tar" ] || echo "$i"; done
}
case "${1:-}" in
  --print-dir) echo "$OUT"; exit 0 ;;
  --print-images) echo "$OUT/images/$image_key"; exit 0 ;;
  --check) [ -z "$(missing "${CMDS[@]}")$(missing_images)" ]; exit $? ;;
  --module | "") ;;
  *) echo "usage: hack/build-kubevirt.sh [--print-dir|--check|--module]" >&2; exit 2 ;;
esac

say() { echo "[build-kubevirt $(date +%H:%M:%S)] $*" >&2; }
die() { echo "build-kubevirt: $*" >&2; exit 1; }
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }
command -v go >/dev/null || die "the Go toolchain (go) is required; install Go >= 1.24"
mkdir -p "$OUT/bin" "$OUT/images" "$WORK"

# --- the module --------------------------------------------------------------------------------
kubevirt_module() {
  local dir=$1
  [ -f "$dir/.tidied" ] && return 0
  rm -rf "$dir" && mkdir -p "$dir"
  local info gomod gosum
  info=$(cd "$dir" && go mod download -json "kubevirt.io/kubevirt@$KUBEVIRT_VERSION")
  gomod=$(echo "$info" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  gosum="$(echo "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')/go.sum"
  [ -f "$gomod" ] && [ -f "$gosum" ] || die "could not download kubevirt.io/kubevirt@$KUBEVIRT_VERSION (go.mod $gomod)"
  local staging
  staging=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$gomod")
  [ "$(echo "$staging" | grep -c .)" -ge 2 ] || die "no staging replace lines in $gomod; refusing to guess"
  {
    echo "module local/retrokube-kubevirt"
    echo
    echo "go $(awk '$1 == "go" { print $2; exit }' "$gomod")"
    echo
    echo "require kubevirt.io/kubevirt $KUBEVIRT_VERSION"
    echo
    echo "replace ("
    # KubeVirt's own replace lines (ignored outside its main module), staging ones excepted ...
    awk '/^replace \(/ { f = 1; next } f && /^\)/ { f = 0 } f && NF && $0 !~ /=> \.\/staging/' "$gomod"
    # ... which point at the published modules of the same release.
    for m in $staging; do echo "	$m => $m $KUBEVIRT_VERSION"; done
    echo "	libguestfs.org/libnbd => ./libnbd"
    echo ")"
  } >"$dir/go.mod"
  cp "$gosum" "$dir/go.sum" && chmod 644 "$dir/go.sum"
  cp -r "$HACK/kubevirt/libnbd" "$dir/libnbd" # inside the module: the cache folder never names a worktree
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for c in "${CMDS[@]}"; do printf '\t_ "%s"\n' "$(cmd_path "$c")"; done
    printf ')\n'
  } >"$dir/tools.go"
  (cd "$dir" && nice -n 10 go mod tidy)
  touch "$dir/.tidied"
}

# Builds into a temp folder, then moves each binary into place (a cut-short build leaves none).
build_into_out() {
  local cgo=$1
  shift
  local tmp="$OUT/bin/.tmp-$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  (cd "$MOD" && CGO_ENABLED=$cgo nice -n 10 go build -p 2 -trimpath -ldflags "$(ldflags)" -o "$tmp/" "$@")
  local f
  for f in "$tmp"/*; do mv "$f" "$OUT/bin/"; done
  rmdir "$tmp"
}

todo=$(missing "${CMDS[@]}")
if [ -n "$todo" ] || [ "${1:-}" = --module ]; then
  say "module: kubevirt.io/kubevirt@$KUBEVIRT_VERSION + published staging modules, go mod tidy (a few minutes cold: downloads)"
  kubevirt_module "$MOD"
  say "module: ready in $MOD ($(elapsed))"
  if [ "${1:-}" = --module ]; then echo "$MOD"; exit 0; fi
fi

# --- the components, one cgo build against our patched libvirt --------------------------------------
if [ -z "$todo" ]; then
  say "$(echo "${CMDS[@]}"): cached"
else
  "$REPO/qemu/libvirt/build.sh" --check ||
    die "our libvirt build is missing: run qemu/libvirt/build.sh (a step of npm run setup) first"
  libvirt=$("$REPO/qemu/libvirt/build.sh" --print-path)
  pc=$(find "$libvirt" -name libvirt.pc -path '*pkgconfig*' | head -1)
  [ -n "$pc" ] || die "no libvirt.pc under $libvirt"
  say "go build $(echo $todo) (cgo, libvirt $(dirname "$pc"), one build; cold: ~2000 packages) ($(elapsed))"
  PKG_CONFIG_PATH="$(dirname "$pc")" CGO_LDFLAGS="-Wl,-rpath,$libvirt/lib -Wl,-rpath,$(dirname "$(dirname "$pc")")" \
    build_into_out 1 $(for c in $todo; do cmd_path "$c"; done)
  say "components: done ($(elapsed))"
fi

# --- images ---------------------------------------------------------------------------------------
# localhost/kubevirt/<component>:v1.8.4 — the names virt-operator derives from its own image — and
# our launcher under the tag LauncherReady recognises (<version>-risc5-<release>). Each image is
# one layer (hack/lib-oci.sh) assembled from files here (hack/kubevirt/lib-rootfs.sh).
# shellcheck source=hack/kubevirt/lib-rootfs.sh
source "$HACK/kubevirt/lib-rootfs.sh"
KV_SRC=$(go env GOMODCACHE)/kubevirt.io/kubevirt@$KUBEVIRT_VERSION
image_ref() {
  case $1 in
    virt-launcher) echo "$IMAGE_PREFIX/virt-launcher:$LAUNCHER_TAG" ;;
    *) echo "$IMAGE_PREFIX/$1:$KUBEVIRT_VERSION" ;;
  esac
}
bin_to() { local b; for b in "${@:2}"; do install -m 755 "$OUT/bin/$b" "$1/usr/bin/$b"; done; }

# virt-operator, virt-api, virt-controller: the binary and the C libraries it links, a non-root user.
rootfs_static() {
  kv_base_root "$1"
  kv_users "$1" "kubevirt:$IMAGE_UID"
  bin_to "$1" "$2"
  kv_elf_closure "$1"
  echo "{\"User\":\"$IMAGE_UID\",\"Entrypoint\":[\"/usr/bin/$2\"],\"Env\":[\"PATH=/usr/bin:/bin\"]}"
}
# virt-handler: the handler, virt-chroot (its helper for mounts in other namespaces), root.
rootfs_handler() {
  kv_base_root "$1"
  kv_users "$1" "qemu:$QEMU_UID"
  bin_to "$1" virt-handler virt-chroot
  cp "$KV_SRC/cmd/virt-handler/nsswitch.conf" "$1/etc/nsswitch.conf"
  kv_elf_closure "$1"
  echo '{"Entrypoint":["/usr/bin/virt-handler"],"Env":["PATH=/usr/bin:/usr/sbin:/bin"]}'
}
# virt-launcher: KubeVirt's launcher and helpers, our patched libvirt daemons (at their build path:
# libvirt compiled its prefix in), our qemu-system-risc5 with its keymaps, KubeVirt's libvirt
# configuration files from the module, our node-labeller.sh, passwd with qemu:107.
rootfs_launcher() {
  local libvirt qemu d
  libvirt=$("$REPO/qemu/libvirt/build.sh" --print-path)
  qemu=$(dirname "$(dirname "$("$REPO/qemu/build.sh" --print-path)")")
  [ -x "$qemu/bin/qemu-system-risc5" ] || die "our QEMU is not built: run qemu/build.sh (a step of npm run setup)"
  kv_base_root "$1"
  kv_users "$1" "qemu:$QEMU_UID"
  bin_to "$1" virt-launcher virt-launcher-monitor virt-freezer virt-probe virt-tail
  # The monitor starts virt-launcher (as the qemu user) with CAP_NET_BIND_SERVICE as an ambient
  # capability, which it may raise only if it holds it: the file capability KubeVirt's image gives it.
  setcap cap_net_bind_service=+ep "$1/usr/bin/virt-launcher-monitor"
  install -m 755 "$HACK/kubevirt/node-labeller.sh" "$1/usr/bin/node-labeller.sh"
  kv_copy_tree "$libvirt" "$1"
  # Only the daemons and the client KubeVirt runs (the rest of libvirt's tools stay out).
  rm -rf "$1$libvirt/share/doc" "$1$libvirt/share/locale" "$1$libvirt/include" "$1$libvirt/libexec"
  find "$1$libvirt/bin" "$1$libvirt/sbin" -type f ! -name virsh ! -name virtqemud ! -name virtlogd -delete
  for d in virtqemud virtlogd; do ln -s "$libvirt/sbin/$d" "$1/usr/sbin/$d"; done
  ln -s "$libvirt/bin/virsh" "$1/usr/bin/virsh"
  mkdir -p "$1/etc/libvirt" "$1/usr/local/bin" "$1/usr/local/share/qemu" "$1/var/lib/kubevirt-node-labeller" "$1/var/run/libvirt"
  cp "$KV_SRC/cmd/virt-launcher/qemu.conf" "$KV_SRC/cmd/virt-launcher/virtqemud.conf" "$1/etc/libvirt/"
  cp "$libvirt/etc/libvirt/virtlogd.conf" "$1/etc/libvirt/virtlogd.conf"
  cp "$KV_SRC/cmd/virt-launcher/nsswitch.conf" "$1/etc/nsswitch.conf"
  install -m 755 "$qemu/bin/qemu-system-risc5" "$1/usr/local/bin/qemu-system-risc5"
  cp -r "$qemu/share/qemu/keymaps" "$1/usr/local/share/qemu/keymaps"
  kv_elf_closure "$1"
  echo '{"Entrypoint":["/usr/bin/virt-launcher"],"Env":["PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin"]}'
}
# sidecar-shim: KubeVirt's shim (cmd/sidecars) and Debian's python3 for the hook it runs (our
# onDefineDomain is Python, from the ConfigMap the operator renders).
rootfs_sidecar() {
  local py=/usr/lib/python3.11
  kv_base_root "$1"
  kv_users "$1" "qemu:$QEMU_UID"
  install -m 755 "$OUT/bin/sidecars" "$1/sidecar-shim"
  install -m 755 /usr/bin/python3.11 "$1/usr/bin/python3.11"
  ln -s python3.11 "$1/usr/bin/python3"
  mkdir -p "$1$py"
  tar -C "$py" --exclude=./test --exclude=./idlelib --exclude=./tkinter --exclude=./ensurepip --exclude=./lib2to3 \
    --exclude=./site-packages --exclude=./dist-packages --exclude=__pycache__ -cf - . | tar -C "$1$py" -xf -
  kv_elf_closure "$1"
  echo '{"Entrypoint":["/sidecar-shim"],"Env":["PATH=/usr/bin:/bin"]}'
}

mkdir -p "$OUT/images/$image_key"
for img in $(missing_images); do
  say "image $(image_ref "$img") ($(elapsed))"
  root="$WORK/rootfs-$img-$$"
  rm -rf "$root" && mkdir -p "$root"
  case $img in
    virt-operator | virt-api | virt-controller) config=$(rootfs_static "$root" "$img") ;;
    virt-handler) config=$(rootfs_handler "$root") ;;
    virt-launcher) config=$(rootfs_launcher "$root") ;;
    sidecar-shim) config=$(rootfs_sidecar "$root") ;;
  esac
  kv_image "$root" "$OUT/images/$image_key/$img.oci.tar" "$(image_ref "$img")" "$config"
  say "image $(image_ref "$img"): $(du -h "$OUT/images/$image_key/$img.oci.tar" | cut -f1) ($(elapsed))"
  rm -rf "$root"
done

"$OUT/bin/virtctl" version --client >&2 || true
say "KubeVirt $KUBEVIRT_VERSION binaries and images ready in $(elapsed) (images: $OUT/images/$image_key)"
echo "$OUT"
