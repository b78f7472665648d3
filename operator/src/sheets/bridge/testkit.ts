// For tests and benchmarks of the federation: a whole Sheeternetes cluster in this process — a real
// apiserver with signing required, over any store, and one real node agent running process pods.

import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApiServer } from '../apiserver/server.ts';
import { NodeAgent } from '../node/agent.ts';
import { MemoryStore } from '../store/memory.ts';
import type { Store } from '../store/types.ts';
import { Member } from './client.ts';

export const LIMITS = {
  agentIntervalMs: 1100, // > 1 s: two identical signed heartbeats in one second would be refused as replays
  nodeTtlSec: 5, // leaves room for a loaded CI machine while a stopped agent is noticed in seconds
} as const;

export interface SheetClusterKit {
  name: string;
  url: string;
  token: string;
  key: string;
  store: Store;
  api: Member; // signed writes as a person's skctl would make them (the apiserver reschedules on them)
  agent: NodeAgent;
  stopAgent(): Promise<void>;
  startAgent(): void;
  close(): Promise<void>;
}

export async function startSheetCluster(o: {
  name: string;
  cpuTotal: number;
  store?: Store;
  token?: string; // default: a fresh random one
  key?: string;
}): Promise<SheetClusterKit> {
  const store = o.store ?? new MemoryStore();
  const suffix = Math.random().toString(36).slice(2, 8);
  const token = o.token ?? `${o.name}-token-${suffix}`;
  const key = o.key ?? `${o.name}-key-${suffix}`;
  const server = await createApiServer({
    store,
    token,
    signingKey: key,
    nodeTtlSec: LIMITS.nodeTtlSec,
    samples: false,
    metricsIntervalSec: 3600,
  });
  const url = (await server.listen(0, '127.0.0.1')).replace('[::1]', '127.0.0.1');
  const workDir = mkdtempSync(path.join(os.tmpdir(), `sk-${o.name}-node-`));
  const newAgent = () =>
    new NodeAgent({
      server: url,
      token,
      key,
      name: `${o.name}-node`,
      ip: '127.0.0.1',
      cpuTotal: o.cpuTotal,
      memTotal: 4096,
      intervalMs: LIMITS.agentIntervalMs,
      runtimes: ['process'],
      allowProcess: true, // the tests opt in by name: their deployments run `sleep`
      workDir,
      stopGraceMs: 500,
    });
  let running = false;
  const kit: SheetClusterKit = {
    name: o.name,
    url,
    token,
    key,
    store,
    api: new Member({ name: o.name, url, token, key }),
    agent: newAgent(),
    startAgent() {
      if (running) return;
      kit.agent = newAgent();
      kit.agent.start();
      running = true;
    },
    async stopAgent() {
      if (running) await kit.agent.stop();
      running = false;
    },
    async close() {
      await kit.stopAgent();
      await server.close();
      await store.close();
    },
  };
  kit.agent.start();
  running = true;
  return kit;
}

export const runningPods = (c: SheetClusterKit, deploy: string): number =>
  c.store.rows('Pods').filter((p) => p.deployment === deploy && p.phase === 'Running').length;

export const hasDeployment = (c: SheetClusterKit, deploy: string): boolean =>
  c.store.rows('Deployments').some((r) => r.name === deploy);

/** A deployment of `sleep 600` process pods, applied through the apiserver. */
export function deploySleeper(
  c: SheetClusterKit,
  name: string,
  replicas: number,
  cpu = 100,
  image = 'process',
) {
  return c.api.apply([{ name, image, command: 'sleep 600', replicas, cpu_req: cpu, mem_req: 16 }]);
}

/** The bridge CLI's endpoint flags for two kits (the reference's flag names). */
export function bridgeFlags(
  local: SheetClusterKit,
  peer: SheetClusterKit,
  o: { peerKey?: string; peerUrl?: string } = {},
): string[] {
  return [
    ...['--local', local.url, '--peer', o.peerUrl ?? peer.url],
    ...['--local-token', local.token, '--peer-token', peer.token],
    ...['--local-signing-key', local.key, '--peer-signing-key', o.peerKey ?? peer.key],
  ];
}
