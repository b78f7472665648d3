// Runs one relay in its own thread (its own core), so the benchmark's stations do not share its CPU.
// workerData `{ raw: true }` (the default) is `--no-rate-limit`; `{ raw: false }` the default limits;
// `{ sendThread: true }` adds the relay's send thread (`--send-thread`), whose CPU counts as the relay's.
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { startRelay } from '../../operator/src/air/relay.ts';

/** CPU time of this thread alone (µs), so a busy machine does not distort frames per core-second. */
const threadCpu = (): number => {
  const u = process.threadCpuUsage();
  return u.user + u.system;
};

const data = workerData as { raw?: boolean; sendThread?: boolean } | undefined;
const raw = data?.raw ?? true;
const relay = await startRelay({
  port: 0,
  bind: '127.0.0.1',
  ...(raw ? { rate: null } : {}),
  ...(data?.sendThread ? { sendThread: true } : {}),
});
parentPort!.postMessage({ type: 'ready', port: relay.address.port });
parentPort!.on('message', async (m: { type: string }) => {
  if (m.type === 'stats')
    parentPort!.postMessage({
      type: 'stats',
      stats: relay.stats(),
      elu: performance.eventLoopUtilization(),
      cpuUs: threadCpu() + (await relay.sendThreadCpuUs()),
    });
  if (m.type === 'close') {
    await relay.close();
    process.exit(0);
  }
});
