// What the runtime's unit tests share: a resource type and a kubeconfig that reach no server.
import { KubeConfig } from '@kubernetes/client-node';
import type { ResourceType } from './client.ts';

export const THING: ResourceType = {
  group: 'retrokube.io',
  version: 'v1alpha1',
  plural: 'things',
  kind: 'Thing',
  namespaced: true,
};

/** Nothing listens at its server: a test that uses it never reaches the network. */
export function offlineKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'http://127.0.0.1:9' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}
