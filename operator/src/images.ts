// The images this project builds — the only images a default, a chart value or a render may name
// (a user names others only through spec fields they set: disk.image, image, launcher.images):
//   retrokube         the product image (Dockerfile; hack/build-image.sh builds it without Docker as
//                     localhost/retrokube:<key>): operator, relay, machine pods, fill Jobs, sheets
//   virt-launcher     KubeVirt's launcher with our libvirt patch and qemu-system-risc5
//                     (images/virt-launcher/Containerfile), tagged <KubeVirt version>-risc5-<release>
//   virt-launcher-hook  KubeVirt's sidecar-shim with our onDefineDomain (images/virt-launcher/hook.Containerfile)
// controllers/images.test.ts walks every render, the chart's values and the marketplace's values.
export const OUR_IMAGE_REPOSITORIES = [
  'ghcr.io/retrokube/retrokube',
  'localhost/retrokube',
  'ghcr.io/retrokube/virt-launcher',
  'ghcr.io/retrokube/virt-launcher-hook',
] as const;

/** The repository of an image reference (`repo:tag`, `repo@sha256:...`, `repo:tag@sha256:...`). */
export function imageRepository(ref: string): string {
  const noDigest = ref.split('@')[0] as string;
  const lastSlash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > lastSlash ? noDigest.slice(0, colon) : noDigest;
}

export function isOurImage(ref: string): boolean {
  return (OUR_IMAGE_REPOSITORIES as readonly string[]).includes(imageRepository(ref));
}
