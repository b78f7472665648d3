// The relay Service's EndpointSlice as the endpointslice controller would publish it (the test
// API server runs no kube-controller-manager). No vitest here: the operator benchmark uses it too.
import { ENDPOINT_SLICE } from '../../operator/src/controllers/oberonmachine-observe.ts';
import { CORE, type KubeClient, type KubeObject } from '../../operator/src/runtime/client.ts';

/**
 * Publishes a ready endpoint for the relay Service of `air` as the endpointslice controller would
 * (the test API server runs no kube-controller-manager): an EndpointSlice labelled with the
 * Service's name (and its labels), owned by the Service when it exists. Returns the slice's name.
 */
export async function publishRelayEndpoint(
  k: KubeClient,
  namespace: string,
  air: string,
  opts: { ready?: boolean; address?: string } = {},
): Promise<string> {
  const service = `rk-air-${air}`;
  const svc = await k.getOrUndefined(CORE.service, namespace, service);
  const name = `${service}-${Math.random().toString(36).slice(2, 7)}`; // as generateName would
  const slice = await k.create<KubeObject>(ENDPOINT_SLICE, {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace,
      labels: {
        ...(svc?.metadata.labels ?? {}),
        'kubernetes.io/service-name': service,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
      ...(svc
        ? {
            ownerReferences: [
              {
                apiVersion: 'v1',
                kind: 'Service',
                name: service,
                uid: svc.metadata.uid as string,
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          }
        : {}),
    },
    addressType: 'IPv4',
    endpoints: [
      {
        addresses: [opts.address ?? '10.244.0.7'],
        conditions: { ready: opts.ready ?? true, serving: opts.ready ?? true, terminating: false },
      },
    ],
    ports: [{ name: 'air', port: 7524, protocol: 'UDP' }],
  });
  return slice.metadata.name as string;
}
