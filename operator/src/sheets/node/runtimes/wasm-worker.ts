// Runs one WASI module in a worker thread, so a busy module never blocks the agent's heartbeats and
// a stop is immediate. stdout/stderr go to the pod's log file.
// Self-contained on purpose: a worker loads this file directly.
//
// Sleeping: node's own poll_oneoff blocks the thread where worker.terminate() cannot reach it (a
// sleeping module would make a stop hang for good), so clock-only polls are served here instead,
// waiting on a shared word the agent sets when it stops the pod. Polls on files go to node's.

import { closeSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { openLog } from '../workdir.ts';

interface Job {
  module: Uint8Array;
  args: string[];
  env: Record<string, string>;
  logFile: string;
  /** Int32Array over a SharedArrayBuffer: [0] becomes 1 when the pod is being stopped. */
  stop: Int32Array;
}

// The WebAssembly global, typed here because the project's lib (ES2024, no DOM) does not declare it.
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}
const WA = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

type PollFn = (inPtr: number, outPtr: number, nsubs: number, neventsPtr: number) => number;

const SUB_BYTES = 48; // wasi subscription_t
const EVENT_BYTES = 32; // wasi event_t
const EVENTTYPE_CLOCK = 0;
const SUBCLOCK_ABSTIME = 1;

/** poll_oneoff for clock subscriptions only: sleep until the first deadline or a stop. */
function clockPoll(memory: () => DataView, stop: Int32Array, fallback: PollFn): PollFn {
  return (inPtr, outPtr, nsubs, neventsPtr) => {
    const m = memory();
    let waitNs = Number.POSITIVE_INFINITY;
    for (let i = 0; i < nsubs; i++) {
      const at = inPtr + i * SUB_BYTES;
      if (m.getUint8(at + 8) !== EVENTTYPE_CLOCK) return fallback(inPtr, outPtr, nsubs, neventsPtr);
      const clock = m.getUint32(at + 16, true);
      const timeout = m.getBigUint64(at + 24, true);
      let ns = timeout;
      if (m.getUint16(at + 40, true) & SUBCLOCK_ABSTIME) {
        const now = clock === 0 ? BigInt(Date.now()) * 1_000_000n : process.hrtime.bigint();
        ns = timeout > now ? timeout - now : 0n;
      }
      waitNs = Math.min(waitNs, Number(ns));
    }
    if (Number.isFinite(waitNs) && waitNs > 0) Atomics.wait(stop, 0, 0, waitNs / 1e6);
    let n = 0;
    for (let i = 0; i < nsubs; i++) {
      const at = inPtr + i * SUB_BYTES;
      const ev = outPtr + n * EVENT_BYTES;
      m.setBigUint64(ev, m.getBigUint64(at, true), true); // userdata
      m.setUint16(ev + 8, 0, true); // no error
      m.setUint8(ev + 10, EVENTTYPE_CLOCK);
      n++;
    }
    m.setUint32(neventsPtr, n, true);
    return 0;
  };
}

// Node warns that WASI is experimental in every thread that uses it — once per pod start here. The
// agent says it once for the whole node instead (agent.ts), so this thread's warning printer goes
// before node:wasi is loaded (loading it is what warns).
process.removeAllListeners('warning');
const { WASI } = await import('node:wasi');

const job = workerData as Job;
const fd = openLog(job.logFile);
try {
  const wasi = new WASI({
    version: 'preview1',
    args: job.args,
    env: job.env,
    stdout: fd,
    stderr: fd,
    returnOnExit: true,
  });
  const imports = wasi.getImportObject() as { wasi_snapshot_preview1: Record<string, unknown> };
  let memory: { buffer: ArrayBuffer } | undefined;
  const view = () => new DataView((memory as { buffer: ArrayBuffer }).buffer);
  const ns = imports.wasi_snapshot_preview1;
  ns.poll_oneoff = clockPoll(view, job.stop, ns.poll_oneoff as PollFn);
  const mod = new WA.Module(job.module);
  const instance = new WA.Instance(mod, imports);
  memory = instance.exports.memory as { buffer: ArrayBuffer };
  const code = wasi.start(instance);
  parentPort?.postMessage({ code });
} catch (e) {
  parentPort?.postMessage({ code: 1, message: `wasm trap: ${e instanceof Error ? e.message : String(e)}` });
} finally {
  closeSync(fd);
}
