// vitest globalSetup of the `nodes` project: what test/cluster/nodes.test.ts needs before it starts
// its own several nodes (hack/nodes-up.sh, in its beforeAll): root, the kube binaries, the product
// image (hack/build-image.sh, cached: the cluster project's set-up builds the same one), and
// the machine's lock of the several nodes, so that two runs (or a run and bench/nodes) take turns.
// It starts no cluster: the nodes cost CPU from the moment they run, so they run only while their
// file does. The several nodes share nothing with the single node of the cluster project (their
// own names, addresses, cgroups and lock), so the two may be up at once. The project does not exist
// when the suite is pointed at another cluster (vitest.config.ts, SEVERAL_NODES).
import type { TestProject } from 'vitest/node';
import { locateTestBins } from '../envtest/control-plane.ts';
import { imageNameOf, NODES_LOCK, script, skipOrFail, takeNodeLock } from './global-setup.ts';

export default async function setup(project: TestProject): Promise<(() => void) | undefined> {
  const bins = locateTestBins();
  project.provide('clusterTools', { kubectl: bins.kubectl, helm: bins.helm });
  project.provide('clusterSkip', '');
  project.provide('clusterNode', undefined);
  project.provide('clusterReadyFile', '');
  project.provide('clusterKubeconfig', ''); // nodes.test.ts points the harness at its own cluster
  project.provide('clusterImage', '');
  if (process.getuid?.() !== 0) {
    skipOrFail(project, 'several nodes need root (namespaces, bridges, containerd); run as root');
    return undefined;
  }
  const release = await takeNodeLock(NODES_LOCK);
  try {
    project.provide('clusterImage', imageNameOf(await script('build-image.sh')));
  } catch (err) {
    release();
    skipOrFail(project, `the product image was not built (${(err as Error).message.split('\n')[0]})`);
    return undefined;
  }
  return release;
}
