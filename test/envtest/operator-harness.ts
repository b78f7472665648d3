// Helpers for the operator's envtest files: an in-process operator against the test API server,
// a raw client for assertions, and polling.
import type { KubeConfig } from '@kubernetes/client-node';
import { onTestFinished } from 'vitest';
import { createOperatorManager } from '../../operator/src/cli/operator-run.ts';
import { OBERONAIR, type OberonAir } from '../../operator/src/controllers/oberonair.ts';
import { ENDPOINT_SLICE } from '../../operator/src/controllers/oberonmachine-observe.ts';
import { CORE, KubeClient, type KubeObject } from '../../operator/src/runtime/client.ts';
import type { Manager } from '../../operator/src/runtime/manager.ts';
import { kubeconfigPath } from './harness.ts';

export type { KubeObject, OberonAir };
export { CORE, OBERONAIR };

/** A client for assertions (admin); closed when the test finishes. */
export function testClient(): KubeClient {
  const c = KubeClient.fromDefault(kubeconfigPath());
  onTestFinished(() => c.close());
  return c;
}

export interface TestOperatorOptions {
  namespace: string;
  leaderElect?: boolean;
  identity?: string;
  leaseNamespace?: string;
  resyncMs?: number;
  /** Watch KubeVirt VirtualMachines too. */
  kubevirt?: boolean;
  /** Where the operator hears airs (a local relay). */
  airAddress?: (namespace: string, air: string, port: number) => { host: string; port: number };
  keySeed?: string;
  /** Bind /metrics and probes on a free loopback port. */
  http?: boolean;
  /** Act as this kubeconfig's user (e.g. the chart's ServiceAccount, impersonated); default admin. */
  kubeConfig?: KubeConfig;
}

/** Starts the operator in this process, scoped to `namespace`; stopped when the test finishes. */
export async function startOperator(o: TestOperatorOptions): Promise<Manager> {
  const mgr = createOperatorManager({
    client: o.kubeConfig ? new KubeClient(o.kubeConfig) : KubeClient.fromDefault(kubeconfigPath()),
    namespace: o.namespace,
    leaderElect: o.leaderElect,
    leaseNamespace: o.leaseNamespace ?? o.namespace,
    leaseName: 'retrokube-operator',
    identity: o.identity,
    image: 'ghcr.io/retrokube/retrokube:test',
    kubevirt: o.kubevirt,
    airAddress: o.airAddress,
    keySeed: o.keySeed,
    resyncMs: o.resyncMs ?? 0,
    metrics: o.http ? { host: '127.0.0.1', port: 0 } : undefined,
    health: o.http ? { host: '127.0.0.1', port: 0 } : undefined,
  });
  onTestFinished(() => mgr.stop());
  await mgr.start();
  return mgr;
}

/** Polls `fn` until it returns a truthy value (or throws no more); fails with `what` on timeout. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function air(namespace: string, name: string, spec: Record<string, unknown> = {}): OberonAir {
  return { apiVersion: 'retrokube.io/v1alpha1', kind: 'OberonAir', metadata: { name, namespace }, spec };
}

/** Waits until the manager's controllers have nothing queued or in flight. */
export async function quiescent(mgr: Manager, settleMs = 500): Promise<void> {
  const idle = () => mgr.controllers.every((c) => c.queue.length === 0 && c.queue.processingCount === 0);
  await waitFor('an idle work queue', async () => idle());
  await new Promise((r) => setTimeout(r, settleMs));
  await waitFor('an idle work queue', async () => idle());
}

export function condition(
  obj: KubeObject | undefined,
  type: string,
): { status: string; reason: string; message?: string; observedGeneration?: number } | undefined {
  const conds = (
    obj?.status as
      | {
          conditions?: Array<{
            type: string;
            status: string;
            reason: string;
            message?: string;
            observedGeneration?: number;
          }>;
        }
      | undefined
  )?.conditions;
  return conds?.find((c) => c.type === type);
}

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
