#!/bin/sh
# node-labeller.sh of retrokube's RISC5 virt-launcher image (hack/build-kubevirt.sh puts it in
# /usr/bin). virt-handler's init container runs it (`/bin/sh -c node-labeller.sh`) and virt-handler
# then reads three files from /var/lib/kubevirt-node-labeller: capabilities.xml (it panics without
# it), virsh_domcapabilities.xml and, on amd64, supported_features.xml.
# KubeVirt's own script asks libvirt about an x86_64 q35 machine; this launcher carries one QEMU,
# qemu-system-risc5, so the domain capabilities asked for are the `oberon` machine's, under TCG
# (this launcher never uses /dev/kvm). All three files come from our libvirt itself; the CPU
# features file is libvirt's baseline of that machine's CPU (none: the RISC5 CPU has no features
# libvirt knows), written by hand only in the shape virt-handler parses when virsh has nothing.
set -eu
OUT=/var/lib/kubevirt-node-labeller
export XDG_RUNTIME_DIR=/var/run XDG_CONFIG_HOME=/var/run/kubevirt-private/config XDG_CACHE_HOME=/var/run/kubevirt-private/cache
mkdir -p "$OUT" /var/run/libvirt "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME"
cp /etc/libvirt/virtqemud.conf /var/run/libvirt/virtqemud.conf
/usr/sbin/virtqemud -d -f /var/run/libvirt/virtqemud.conf
uri=qemu:///system
[ "$(id -u)" = 0 ] || uri=qemu:///session
i=0
until virsh -c "$uri" capabilities >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -lt 30 ] || { echo "node-labeller: virtqemud did not answer within 30 s" >&2; exit 1; }
  sleep 1
done
virsh -c "$uri" capabilities >"$OUT/capabilities.xml"
grep -q "<arch>risc5</arch>\|arch name='risc5'" "$OUT/capabilities.xml" ||
  { echo "node-labeller: libvirt lists no risc5 guest (is qemu-system-risc5 in the image?)" >&2; exit 1; }
# virt-handler on an amd64 host expects its host-model mode to name a CPU model, and panics
# without one ("host model mode is expected to contain a model"); the oberon machine has no
# host-model CPU, so the mode gets the RISC5 CPU's name, not usable (nothing asks for host-model).
# It labels the node with the mode's vendor too (cpu-vendor.node.kubevirt.io/<vendor>), and an
# empty vendor makes that label invalid, which fails the whole node update: the RISC5's designer.
awk=awk
command -v awk >/dev/null 2>&1 || awk='busybox awk' # the launcher image has busybox, not awk
virsh -c "$uri" domcapabilities --arch risc5 --machine oberon --virttype qemu |
  $awk '
    /<mode name=.host-model./ && /\/>/ { sub(/\/>/, ">"); print; print "      <model fallback=\x27forbid\x27>risc5</model>"; print "      <vendor>Wirth</vendor>"; print "    </mode>"; next }
    /<mode name=.host-model./ { print; inhost = 1; seen = 0; vendor = 0; next }
    inhost && /<model/ { seen = 1 }
    inhost && /<vendor/ { vendor = 1 }
    inhost && /<\/mode>/ { if (!seen) print "      <model fallback=\x27forbid\x27>risc5</model>"; if (!vendor) print "      <vendor>Wirth</vendor>"; inhost = 0 }
    { print }
  ' >"$OUT/virsh_domcapabilities.xml"
printf "<cpu mode='custom' match='exact'>\n</cpu>\n" >"$OUT/supported_features.xml"
echo "node-labeller: risc5/oberon capabilities written to $OUT"
