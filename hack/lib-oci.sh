# Sourced by hack/build-image.sh and hack/node-up.sh: an OCI image archive (one layer) from a
# folder, with no registry and no Docker. The archive loads with `ctr images import`,
# `kind load image-archive` or `skopeo copy oci-archive:...`.

# oci_layer ROOTFS LAYER_TAR
# A deterministic tar of ROOTFS: names sorted, mtime 0, owner root, no atime/ctime, hard links
# stored as files (the folder may hard-link into caches); file capabilities kept (a binary that
# needs one carries it in the image, as KubeVirt's virt-launcher-monitor does).
oci_layer() {
  local root=$1 out=$2
  (cd "$root" && tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --hard-dereference \
    --xattrs --xattrs-include=security.capability \
    --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "$out" .)
}

# oci_archive LAYER_TAR OUT_TAR NAME:TAG CONFIG_JSON
# CONFIG_JSON is the image's "config" object (Env, Entrypoint, ...). Gzips the layer (the slow
# step for a big layer), writes config, manifest and index, then the archive (written to a temp
# name and renamed, so a reader never sees half an archive). Prints the manifest digest.
oci_archive() {
  local layer_tar=$1 out=$2 ref=$3 image_config=$4
  local oci="$out.d.$$"
  rm -rf "$oci" && mkdir -p "$oci/blobs/sha256"
  local diff_id layer_digest layer_size config config_digest manifest manifest_digest index
  diff_id=sha256:$(sha256sum <"$layer_tar" | cut -d' ' -f1)
  nice -n 10 gzip -n -6 <"$layer_tar" >"$oci/layer.gz"
  layer_digest=sha256:$(sha256sum <"$oci/layer.gz" | cut -d' ' -f1)
  layer_size=$(stat -c %s "$oci/layer.gz")
  mv "$oci/layer.gz" "$oci/blobs/sha256/${layer_digest#sha256:}"
  config=$(printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"hack/lib-oci.sh"}]}' \
    "$image_config" "$diff_id")
  config_digest=sha256:$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
  manifest=$(printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%d}]}' \
    "$config_digest" "${#config}" "$layer_digest" "$layer_size")
  manifest_digest=sha256:$(printf '%s' "$manifest" | sha256sum | cut -d' ' -f1)
  index=$(printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%d,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"},"platform":{"architecture":"amd64","os":"linux"}}]}' \
    "$manifest_digest" "${#manifest}" "$ref" "${ref##*:}")
  printf '{"imageLayoutVersion":"1.0.0"}' >"$oci/oci-layout"
  printf '%s' "$index" >"$oci/index.json"
  printf '%s' "$config" >"$oci/blobs/sha256/${config_digest#sha256:}"
  printf '%s' "$manifest" >"$oci/blobs/sha256/${manifest_digest#sha256:}"
  (cd "$oci" && tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$out.tmp.$$" oci-layout index.json blobs)
  rm -rf "$oci"
  mv "$out.tmp.$$" "$out"
  echo "$manifest_digest"
}

# node_rootfs ROOTFS NODE_BINARY "DEBIAN_LIB_PACKAGES" "BUSYBOX_APPLETS"
# A minimal root filesystem that runs Node (what node:24-slim gives the Dockerfile): busybox-static
# for /bin/sh and the applets named, the shared libraries exactly as their Debian packages list
# them, Node in /usr/local/bin, /etc/passwd with root and the `node` user 1000.
node_rootfs() {
  local root=$1 node=$2 libs=$3 applets=$4 a d f
  # shellcheck disable=SC2086
  mkdir -p "$root"/{bin,etc,tmp,proc,sys,dev,run,home/node,usr/local/bin}
  chmod 1777 "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  for a in $applets; do ln -s busybox "$root/bin/$a"; done
  # The shared libraries exactly as their Debian packages list them (paths kept, docs dropped).
  for d in $libs; do
    dpkg-query -L "$d" | while IFS= read -r f; do
      case $f in /usr/share/*) continue ;; esac
      [ -d "$f" ] && continue # folders (and usrmerge's /lib -> usr/lib) come with their files
      if [ -L "$f" ] || [ -f "$f" ]; then
        mkdir -p "$root$(dirname "$f")" && cp -a "$f" "$root$f"
      fi
    done
  done
  cp "$node" "$root/usr/local/bin/node"
  printf 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnode:x:1000:\n' >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  printf '127.0.0.1 localhost\n' >"$root/etc/hosts"
}
