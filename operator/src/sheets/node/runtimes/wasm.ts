// The wasm runtime: a pod is a WASI (preview1) module, fetched from the sheet's image store and
// digest-verified by the agent before it gets here, run through node:wasi in a worker thread.
// argv = [module name, ...command words]; env = the order's env plus SK_POD/SK_NODE.
// Not enforced: cpu_req and mem_req (a worker cannot be given a CPU share, and WASM memory is not
// counted by the worker's heap limits).

import { Worker } from 'node:worker_threads';
import type { Exit, PodSpec, RunningPod, Runtime } from './types.ts';

// The project's lib (ES2024, no DOM) does not declare the WebAssembly global.
export const WA = (globalThis as unknown as { WebAssembly: { validate(bytes: Uint8Array): boolean } })
  .WebAssembly;

const WORKER = new URL('./wasm-worker.ts', import.meta.url);

export class WasmRuntime implements Runtime {
  readonly name = 'wasm' as const;

  async start(spec: PodSpec): Promise<RunningPod> {
    if (!spec.module) throw new Error(`pod ${spec.pod}: no verified module to run`);
    if (!WA.validate(spec.module))
      throw new Error(`pod ${spec.pod}: the image is not a valid WebAssembly module`);
    const args = [spec.image, ...(spec.command.trim() ? spec.command.trim().split(/\s+/) : [])];
    const env = { ...spec.env, SK_POD: spec.pod, SK_NODE: spec.node, SK_DEPLOYMENT: spec.deployment };
    // Set to 1 on stop: wakes a module sleeping in poll_oneoff (see wasm-worker.ts).
    const stopWord = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(WORKER, {
      workerData: { module: spec.module, args, env, logFile: spec.logFile, stop: stopWord },
      stdout: false,
      stderr: false,
    });
    let stopping = false;
    const exited = new Promise<Exit>((resolve) => {
      let result: Exit | undefined;
      worker.on('message', (m: Exit) => {
        result = m;
      });
      worker.on('error', (e) => {
        result = { code: 1, message: `wasm worker failed: ${e.message}` };
      });
      worker.on('exit', () =>
        resolve(
          result ?? (stopping ? { code: 137, message: 'stopped' } : { code: 1, message: 'worker ended' }),
        ),
      );
    });
    return {
      id: `wasm-${worker.threadId}`,
      exited,
      async stop() {
        stopping = true;
        Atomics.store(stopWord, 0, 1);
        Atomics.notify(stopWord, 0);
        await worker.terminate();
        await exited;
      },
    };
  }
}
