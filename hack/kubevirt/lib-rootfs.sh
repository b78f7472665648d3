# Sourced by hack/build-kubevirt.sh: root filesystems for KubeVirt's images, made from files on
# this machine (our builds, Debian's packages), with no container engine.

# kv_base_root ROOT
# The folders every image has, usrmerge links (/lib -> usr/lib, as Debian), busybox-static for
# /bin/sh and the few applets KubeVirt's pods run (virt-handler's init container is
# `/bin/sh -c node-labeller.sh`; the launcher's init copies with cp; virt-handler asks sysctl
# whether the node can run realtime guests), nsswitch (files, then DNS).
kv_base_root() {
  local root=$1 a
  mkdir -p "$root"/{bin,sbin,etc,tmp,proc,sys,dev,run,var/lib,var/log,usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,root,home}
  # /var/run is /run, as on every distribution KubeVirt builds on: the pod mounts its private
  # volume at /var/run/kubevirt-private, and virt-handler looks for it at /run/kubevirt-private.
  ln -s ../run "$root/var/run"
  ln -s usr/lib "$root/lib"
  ln -s usr/lib64 "$root/lib64"
  chmod 1777 "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  for a in sh cat cp mv rm mkdir ls test '[' sleep echo env id head tail grep cut chmod mknod uname sync ps sysctl; do
    ln -s busybox "$root/bin/$a"
  done
  ln -s ../../bin/busybox "$root/usr/bin/env"
  ln -s ../../bin/busybox "$root/usr/bin/cp"
  ln -s ../../bin/busybox "$root/usr/bin/sync"
  printf 'hosts: files dns\npasswd: files\ngroup: files\nshadow: files\n' >"$root/etc/nsswitch.conf"
  printf '127.0.0.1 localhost\n' >"$root/etc/hosts"
}

# kv_users ROOT "name:uid ..."
# /etc/passwd and /etc/group: root plus the users named (each with a group of its own id).
kv_users() {
  local root=$1 u
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\n' >"$root/etc/group"
  for u in $2; do
    printf '%s:x:%s:%s::/home/%s:/sbin/nologin\n' "${u%%:*}" "${u#*:}" "${u#*:}" "${u%%:*}" >>"$root/etc/passwd"
    printf '%s:x:%s:\n' "${u%%:*}" "${u#*:}" >>"$root/etc/group"
  done
}

# kv_elf_closure ROOT
# Every shared library an ELF file under ROOT needs, as this machine's loader resolves it (rpaths
# included: our libvirt sits at its build path in the image too), copied to the same path under
# ROOT (a /lib path lands in usr/lib, which /lib links to). Refuses a library that does not resolve.
kv_elf_closure() {
  local root=$1 f lib dest missing=""
  local list
  list=$(mktemp)
  find "$root" -type f -perm -u+x -o -type f -name '*.so*' | while IFS= read -r f; do
    head -c 4 "$f" 2>/dev/null | grep -q 'ELF' || continue
    # ldd of the file at its host path when it is a copy of one (rpath $ORIGIN and absolute rpaths
    # then resolve as on the host); the copy itself otherwise.
    ldd "$f" 2>/dev/null | awk -v f="$f" '/=> not found/ { print "MISSING " $1 " (needed by " f ")"; next }
      /=> \// { print $3 } /^[[:space:]]*\/[^ ]+ \(/ { print $1 }'
  done | sort -u >"$list"
  missing=$(grep '^MISSING' "$list" || true)
  [ -z "$missing" ] || { echo "kv_elf_closure: $missing" >&2; rm -f "$list"; return 1; }
  while IFS= read -r lib; do
    case $lib in /lib/* | /lib64/*) dest="$root/usr$lib" ;; *) dest="$root$lib" ;; esac
    [ -e "$dest" ] && continue
    mkdir -p "$(dirname "$dest")" && cp -L "$lib" "$dest"
  done <"$list"
  rm -f "$list"
}

# kv_copy_tree SRC ROOT
# SRC copied to the same absolute path under ROOT (our libvirt build: it compiled its prefix in).
kv_copy_tree() {
  local src=$1 root=$2
  mkdir -p "$root$(dirname "$src")"
  cp -a "$src" "$root$src"
}

# kv_image ROOT OUT NAME:TAG CONFIG_JSON  (hack/lib-oci.sh): world-readable, one layer, archived.
kv_image() {
  local root=$1 out=$2 ref=$3 config=$4
  chmod -R a+rX,go-w "$root"
  chmod 1777 "$root/tmp"
  oci_layer "$root" "$out.layer.tar"
  oci_archive "$out.layer.tar" "$out" "$ref" "$config" >/dev/null
  rm -f "$out.layer.tar"
}
