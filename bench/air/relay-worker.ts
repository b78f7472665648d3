// Runs one relay in its own thread (its own core), so the benchmark's stations do not share its CPU.
// workerData `{ raw: true }` (the default) is `--no-rate-limit`; `{ raw: false }` the default limits.
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { startRelay } from '../../operator/src/air/relay.ts';

/** CPU time of this thread alone (µs), so a busy machine does not distort frames per core-second. */
const threadCpu = (): number => {
  const u = process.threadCpuUsage();
  return u.user + u.system;
};

const raw = (workerData as { raw?: boolean } | undefined)?.raw ?? true;
const relay = await startRelay({ port: 0, bind: '127.0.0.1', ...(raw ? { rate: null } : {}) });
parentPort!.postMessage({ type: 'ready', port: relay.address.port });
parentPort!.on('message', async (m: { type: string }) => {
  if (m.type === 'stats')
    parentPort!.postMessage({
      type: 'stats',
      stats: relay.stats(),
      elu: performance.eventLoopUtilization(),
      cpuUs: threadCpu(),
    });
  if (m.type === 'close') {
    await relay.close();
    process.exit(0);
  }
});
