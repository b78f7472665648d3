// What the OberonKube benchmarks (kube.ts, rss-variants.ts) create and change: one 3-node cluster,
// its relay's endpoint published as the endpointslice controller would (no machine runs: the
// planes stay gated behind their nodes until the grace period), and the change whose child write
// the latency phase times.
import { OBERONKUBE } from '../../operator/src/controllers/oberonkube.ts';
import { liveCommandsName } from '../../operator/src/controllers/oberonkube-render.ts';
import { LIVE_KEY } from '../../operator/src/controllers/oberonmachine-render.ts';
import { CORE, type KubeClient } from '../../operator/src/runtime/client.ts';
import { publishRelayEndpoint } from '../../test/envtest/relay-endpoint.ts';
import type { ChangeProbe } from './phases.ts';

export const NODES = 3;

/** OberonKube `k<i>` in `ns`, with its relay's endpoint. */
export async function createKube(k: KubeClient, ns: string, i: number): Promise<void> {
  await k.create(OBERONKUBE, {
    apiVersion: 'retrokube.io/v1alpha1',
    kind: 'OberonKube',
    metadata: { name: `k${i}`, namespace: ns },
    spec: { nodes: NODES, deployments: 'web 4 Ticker; api 2 Ticker2' },
  });
  await publishRelayEndpoint(k, ns, `k${i}-air`);
}

/** A changed `deployments` line → the operator's write of the cluster's live-commands ConfigMap. */
export const kubeChangeProbe: ChangeProbe = {
  child: CORE.configMap,
  primary: OBERONKUBE,
  async change(k, ns, i, round) {
    const web = 5 + (round % 20); // never the 4 of createKube(), and within what 3 nodes may run
    await k.mergePatch(OBERONKUBE, ns, `k${i}`, {
      spec: { deployments: `web ${web} Ticker; api 2 Ticker2` },
    });
    return {
      child: liveCommandsName(`k${i}`),
      primaryName: `k${i}`,
      done: (cm) =>
        String((cm.data as Record<string, string> | undefined)?.[LIVE_KEY]).includes(`web ${web} `),
    };
  },
};
