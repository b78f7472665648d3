// Helpers for the operator's envtest files: an in-process operator against the test API server,
// a raw client for assertions, and polling.
import { onTestFinished } from 'vitest';
import { createOperatorManager } from '../../operator/src/cli/operator-run.ts';
import { OBERONAIR, type OberonAir } from '../../operator/src/controllers/oberonair.ts';
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
}

/** Starts the operator in this process, scoped to `namespace`; stopped when the test finishes. */
export async function startOperator(o: TestOperatorOptions): Promise<Manager> {
  const mgr = createOperatorManager({
    client: KubeClient.fromDefault(kubeconfigPath()),
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
): { status: string; reason: string; observedGeneration?: number } | undefined {
  const conds = (
    obj?.status as
      | { conditions?: Array<{ type: string; status: string; reason: string; observedGeneration?: number }> }
      | undefined
  )?.conditions;
  return conds?.find((c) => c.type === type);
}
