import { join } from 'node:path';
import { REPO } from './qemu-harness.ts';

/** Our KubeVirt OnDefineDomain hook, as the launcher's hook sidecar runs it. */
export const HOOK = join(REPO, 'images/virt-launcher/onDefineDomain.py');

// What KubeVirt v1.8.x hands our onDefineDomain hook for a plain VM without KVM (the parts the
// hook rewrites), with the VNC socket where virt-handler looks for it (here: a test folder).
export function kubevirtDomain(vncSocket = '/var/run/kubevirt-private/x/virt-vnc'): string {
  return `<domain type="kvm" xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0">
<name>lab_oberon-node1</name><memory unit="b">134217728</memory>
<os><type arch="x86_64" machine="pc-q35-rhel9.6.0">hvm</type><smbios mode="sysinfo"/></os>
<sysinfo type="smbios"><system><entry name="uuid">6a1c0a2e-0000-4000-8000-000000000001</entry></system></sysinfo>
<features><acpi/></features><cpu mode="host-model"/><clock offset="utc"/><vcpu placement="static">1</vcpu>
<devices><emulator>/usr/libexec/qemu-kvm</emulator>
<controller type="usb" index="0" model="none"/><controller type="virtio-serial" index="0"/>
<channel type="unix"><target type="virtio" name="org.qemu.guest_agent.0"/></channel>
<graphics type="vnc"><listen type="socket" socket="${vncSocket}"/></graphics>
<video><model type="bochs"/></video><memballoon model="virtio-non-transitional"/>
<serial type="unix"/><console type="pty"/><input type="tablet" bus="usb"/></devices></domain>`;
}
