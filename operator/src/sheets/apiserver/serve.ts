// Run the apiserver until SIGINT/SIGTERM. Used by `retrokube sheets serve` and by the lean entry
// point main.ts (which tests and benchmarks start as a child process without the whole CLI).
import { parseRange } from '../scheduler/ports.ts';
import { openWorkbook } from './open.ts';
import { createApiServer, DEFAULT_TOKEN } from './server.ts';

export interface ServeOptions {
  workbook: string;
  port: number;
  host: string;
  token: string;
  key?: string;
  signTtl: number;
  nodeTtl: number;
  nodeportRange: string;
  metricsInterval: number;
  metricsRetention: number;
  samples: boolean;
  googleCredentials?: string;
  googleRootUrl?: string;
  flushDelayMs?: number;
}

export async function serveUntilSignal(
  o: ServeOptions,
  out: (s: string) => void = (s) => process.stdout.write(s),
): Promise<void> {
  const portRange = parseRange(o.nodeportRange);
  const store = await openWorkbook(o.workbook, {
    googleCredentials: o.googleCredentials,
    googleRootUrl: o.googleRootUrl,
    flushDelayMs: o.flushDelayMs,
  });
  const server = await createApiServer({
    store,
    token: o.token,
    signingKey: o.key,
    signTtlSec: o.signTtl,
    nodeTtlSec: o.nodeTtl,
    portRange,
    samples: o.samples,
    metricsIntervalSec: o.metricsInterval,
    metricsRetentionSec: o.metricsRetention,
  });
  const addr = await server.listen(o.port, o.host);
  const warn = o.token === DEFAULT_TOKEN ? ' · WARNING: default token' : '';
  out(
    `sheeternetes apiserver listening on ${addr} · workbook ${o.workbook} (${store.backend})${o.key ? ' · HMAC signing REQUIRED on POST' : ''}${warn}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await server.close();
  await store.close();
}
