#!/usr/bin/env python3
# retrokube's OnDefineDomain hook for KubeVirt's stock sidecar-shim (hook API v1alpha3; its
# OnDefineDomain hands the hook the same two arguments as v1alpha2).
# Called as: onDefineDomain --vmi <VMI JSON> --domain <libvirt domain XML>
# Prints the domain rewritten for the RISC5 "oberon" machine, or exits non-zero with a reason on
# stderr and prints nothing (KubeVirt then retries). Written independently for retrokube.
import json
import os
import re
import socket
import sys
import time
import xml.etree.ElementTree as ET

ANNOTATION = "paleocomputing.io/machine"
QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
KEY_FILE = "key"  # the fill Job writes the KubeNet key here; commands carry $(KEY) in its place
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
DNS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
PRINTABLE = re.compile(r"^[ -~]{1,240}$")
PROP = re.compile(r"^[^,= ]+$")
# QEMU resolves the relay's name once, at start, and exits if it cannot: the VMI then crashes and
# waits out KubeVirt's restart back-off. A name that has only just got its Service (or a DNS hiccup)
# is worth a short wait here instead; OnDefineDomain has a minute (KubeVirt's hook timeout), and
# after this the hook refuses, so KubeVirt retries the sync without crashing anything.
RESOLVE_WITHIN_S = 20
RESOLVE_EVERY_S = 1
SOCKET_PATH = re.compile(r"^/[A-Za-z0-9_./-]{1,200}$")  # no comma: it goes into a QEMU option
DROP_DEVICES = ("controller", "video", "memballoon", "sound", "channel", "rng", "watchdog", "redirdev",
                "hostdev", "input", "interface", "disk", "serial", "console", "tpm", "smartcard", "filesystem")
DROP_TOP = ("features", "cpu", "clock", "pm", "cputune", "numatune", "launchSecurity", "iothreads", "vcpus")


class Refuse(Exception):
    pass


def arg(name):
    argv = sys.argv[1:]
    if name not in argv or argv.index(name) + 1 >= len(argv):
        raise Refuse("missing " + name)
    return argv[argv.index(name) + 1]


def check(desc):
    dom = desc.get("domain") or {}
    for field in ("arch", "machine"):
        if not NAME.match(str(dom.get(field, ""))):
            raise Refuse("domain.%s is not a name" % field)
    if not str(dom.get("emulator", "")).startswith("/"):
        raise Refuse("domain.emulator is not an absolute path")
    if not isinstance(dom.get("vcpus", 1), int) or dom.get("vcpus", 1) < 1:
        raise Refuse("domain.vcpus must be at least 1")
    if dom.get("graphics", "vnc") not in ("vnc", "none"):
        raise Refuse("domain.graphics must be vnc or none")
    payload = desc.get("payload") or {}
    if not str(payload.get("path", "")).startswith("/"):
        raise Refuse("payload.path is not an absolute path")
    for f in payload.get("files") or []:
        if f.get("role") not in ("firmware", "disk") or not NAME.match(str(f.get("name", ""))):
            raise Refuse("payload file %r has a bad name or role" % f.get("name"))
        if not any("{path}" in a for a in f.get("qemuArgs") or []):
            raise Refuse("payload file %s has no {path} in its QEMU args" % f["name"])
    variant = desc.get("variant", "base")
    props = (desc.get("variants") or {"base": {}}).get(variant)
    if props is None:
        raise Refuse("variant %s does not exist" % variant)
    for k, v in props.items():
        if not PROP.match(str(k)) or not PROP.match(str(v)):
            raise Refuse("variant property %s=%s has a comma, space or =" % (k, v))
    host = (desc.get("air") or {}).get("host")
    if host is not None and not DNS.match(host):
        raise Refuse("air.host is not a DNS name")
    text = (desc.get("commands") or {}).get("text")
    if text is not None and not PRINTABLE.match(text):
        raise Refuse("commands.text must be 1-240 printable characters")
    return dom, payload, props, host, text


def wait_for_relay(host, port, within):
    """Returns once the relay's name resolves; refuses after `within` seconds of trying."""
    deadline = time.monotonic() + within
    while True:
        try:
            socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_DGRAM)
            return
        except OSError as err:
            if time.monotonic() + RESOLVE_EVERY_S > deadline:
                raise Refuse("the relay %s does not resolve (%s) after %d s: is its OberonAir Ready?"
                             % (host, err.strerror or err, within))
        time.sleep(RESOLVE_EVERY_S)


def serial_socket(devices):
    """KubeVirt's serial console socket (virtctl console, and the operator's live channel, reach it
    through virt-handler), wired to the board's RS-232 port; None when the VMI has no console."""
    for el in devices.findall("serial"):
        src = el.find("source")
        if el.get("type") == "unix" and src is not None and src.get("path"):
            path = src.get("path")
            if not SOCKET_PATH.match(path) or "/../" in path + "/":
                raise Refuse("the serial console socket %r is not a plain path" % path)
            return path
    return None


def rewrite(xml, dom, payload, props, host, text, air_port=7524):
    root = ET.fromstring(xml)
    if root.get("type") == "kvm":
        root.set("type", "qemu")
    os_el = root.find("os")
    if os_el is not None:
        t = os_el.find("type")
        if t is not None:
            t.set("arch", dom["arch"])
            t.set("machine", dom["machine"])
        os_el.attrib.pop("firmware", None)
        for child in list(os_el):
            if child.tag in ("smbios", "loader", "nvram", "firmware"):
                os_el.remove(child)  # <sysinfo> elsewhere is kept: virt-launcher reads it after start
    for tag in DROP_TOP:
        for el in root.findall(tag):
            root.remove(el)
    vcpu = root.find("vcpu")
    if vcpu is None:
        vcpu = ET.SubElement(root, "vcpu")
    vcpu.attrib.clear()
    vcpu.text = str(dom.get("vcpus", 1))
    devices = root.find("devices")
    if devices is None:
        devices = ET.SubElement(root, "devices")
    serial = serial_socket(devices)
    for child in list(devices):
        if child.tag in DROP_DEVICES or (child.tag == "graphics" and (child.get("type") != "vnc" or dom.get("graphics") == "none")):
            devices.remove(child)
    emulator = devices.find("emulator")
    if emulator is None:
        emulator = ET.SubElement(devices, "emulator")
    emulator.text = dom["emulator"]
    ET.SubElement(devices, "controller", {"type": "usb", "model": "none"})
    ET.SubElement(devices, "memballoon", {"model": "none"})
    ET.SubElement(ET.SubElement(devices, "video"), "model", {"type": "none"})
    for el in root.findall("{%s}commandline" % QEMU_NS):
        root.remove(el)
    args = []
    for f in payload.get("files") or []:
        path = os.path.join(payload["path"], f["name"])
        args += [a.replace("{path}", path) for a in f["qemuArgs"]]
    if props:
        args += ["-machine", ",".join("%s=%s" % kv for kv in sorted(props.items()))]
    if host:
        port = int(air_port)
        args += ["-chardev", "udp,id=air,host=%s,port=%d,localaddr=0.0.0.0,localport=%d" % (host, port, port),
                 "-machine", "radio=air"]
    if serial:
        # QEMU listens on the socket KubeVirt named; the board reads its RS-232 from it, so lines
        # written there reach the running Oberon (Boot keeps reading the port after the commands).
        args += ["-chardev", "socket,id=serial0,path=%s,server=on,wait=off" % serial, "-serial", "chardev:serial0"]
    if text:
        args += ["-machine", "commands=" + text.replace(",", ",,")]
    ET.register_namespace("qemu", QEMU_NS)
    cl = ET.SubElement(root, "{%s}commandline" % QEMU_NS)
    for a in args:
        ET.SubElement(cl, "{%s}arg" % QEMU_NS, {"value": a})
    return ET.tostring(root, encoding="unicode")


def main():
    vmi = json.loads(arg("--vmi"))
    xml = arg("--domain")
    raw = ((vmi.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if not raw:
        raise Refuse("annotation %s is missing" % ANNOTATION)
    desc = json.loads(raw)
    dom, payload, props, host, text = check(desc)
    for f in payload.get("files") or []:
        p = os.path.join(payload["path"], f["name"])
        if not os.path.isfile(p) or os.path.getsize(p) == 0:
            raise Refuse("machine files are not on the volume yet (%s)" % p)
    if text and "$(KEY)" in text:
        kp = os.path.join(payload["path"], KEY_FILE)
        key = open(kp).read().strip() if os.path.isfile(kp) else ""
        if not re.match(r"^[0-9a-fA-F]{0,16}$", key):
            raise Refuse("the key on the volume is not 0-16 hex digits")
        text = text.replace("$(KEY)", key).rstrip()
        if not PRINTABLE.match(text):
            raise Refuse("commands.text with the key must be 1-240 printable characters")
    air = desc.get("air") or {}
    port = air.get("port", 7524)
    if not isinstance(port, int) or not 0 < port < 65536:
        raise Refuse("air.port must be 1..65535")
    within = air.get("resolveWithinSeconds", RESOLVE_WITHIN_S)
    if isinstance(within, bool) or not isinstance(within, int) or not 0 <= within <= 50:
        raise Refuse("air.resolveWithinSeconds must be 0..50 (the hook has a minute in all)")
    if host:
        wait_for_relay(host, port, within)
    sys.stdout.write(rewrite(xml, dom, payload, props, host, text, port))


if __name__ == "__main__":
    try:
        main()
    except (Refuse, ValueError, KeyError, ET.ParseError) as err:
        sys.stderr.write("onDefineDomain: %s\n" % err)
        sys.exit(1)
