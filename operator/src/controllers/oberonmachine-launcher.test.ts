import { describe, expect, it } from 'vitest';
import { imageTag } from './oberonmachine-launcher.ts';

describe("the launcher image's tag (LauncherReady reads the KubeVirt version from it)", () => {
  it('is found in a reference pinned by digest, behind a registry port, or not at all', () => {
    expect(imageTag('quay.io/kubevirt/virt-launcher:v1.8.4')).toBe('v1.8.4');
    expect(
      imageTag(`ghcr.io/tym83/paleocomputing/virt-launcher:v1.8.4-paleo-0.1.16@sha256:${'ab'.repeat(32)}`),
    ).toBe('v1.8.4-paleo-0.1.16');
    expect(imageTag('registry.local:5000/virt-launcher:v1.9.0-risc5-3')).toBe('v1.9.0-risc5-3');
    expect(imageTag('registry.local:5000/virt-launcher')).toBe('');
    expect(imageTag(`ghcr.io/x/virt-launcher@sha256:${'cd'.repeat(32)}`)).toBe('');
  });
});
