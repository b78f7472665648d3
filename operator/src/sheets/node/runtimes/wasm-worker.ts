// Runs one WASI module in a worker thread, so a busy module never blocks the agent's heartbeats and
// a stop is immediate (worker.terminate()). stdout/stderr go to the pod's log file.
// Self-contained on purpose: a worker loads this file directly.

import { closeSync, openSync } from 'node:fs';
import { WASI } from 'node:wasi';
import { parentPort, workerData } from 'node:worker_threads';

interface Job {
  module: Uint8Array;
  args: string[];
  env: Record<string, string>;
  logFile: string;
}

// The WebAssembly global, typed here because the project's lib (ES2024, no DOM) does not declare it.
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => object;
}
const WA = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

const job = workerData as Job;
const fd = openSync(job.logFile, 'a');
try {
  const wasi = new WASI({
    version: 'preview1',
    args: job.args,
    env: job.env,
    stdout: fd,
    stderr: fd,
    returnOnExit: true,
  });
  const mod = new WA.Module(job.module);
  const instance = new WA.Instance(mod, wasi.getImportObject());
  const code = wasi.start(instance);
  parentPort?.postMessage({ code });
} catch (e) {
  parentPort?.postMessage({ code: 1, message: `wasm trap: ${e instanceof Error ? e.message : String(e)}` });
} finally {
  closeSync(fd);
}
