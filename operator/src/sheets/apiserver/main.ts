// Lean entry point of the apiserver (no CLI tree): `node operator/src/sheets/apiserver/main.ts
// --workbook cluster.xlsx --port 8787 --token T [--key K] [--node-ttl 30] [--flush-ms 1000]`.
// `retrokube sheets serve` is the documented way; this one starts faster for tests and benchmarks.
import { parseArgs } from 'node:util';
import { serveUntilSignal } from './serve.ts';
import { DEFAULT_TOKEN } from './server.ts';

const { values } = parseArgs({
  options: {
    workbook: { type: 'string', default: process.env.WORKBOOK ?? 'cluster.xlsx' },
    port: { type: 'string', default: process.env.PORT ?? '8787' },
    host: { type: 'string', default: '127.0.0.1' },
    token: { type: 'string', default: process.env.TOKEN ?? DEFAULT_TOKEN },
    key: { type: 'string' },
    'node-ttl': { type: 'string', default: '30' },
    'flush-ms': { type: 'string' },
    'no-samples': { type: 'boolean', default: false },
  },
});

const num = (v: string | undefined, flag: string): number => {
  if (v === undefined || !/^\d+$/.test(v)) throw new Error(`${flag} must be a whole number`);
  return Number(v);
};

await serveUntilSignal({
  workbook: values.workbook as string,
  port: num(values.port, '--port'),
  host: values.host as string,
  token: values.token as string,
  key: values.key,
  signTtl: 300,
  nodeTtl: num(values['node-ttl'], '--node-ttl'),
  nodeportRange: '30000-32767',
  metricsInterval: 15,
  metricsRetention: 3600,
  samples: !values['no-samples'],
  flushDelayMs: values['flush-ms'] === undefined ? undefined : num(values['flush-ms'], '--flush-ms'),
});
