// Backend factories for tests (the shared store suite, and other engineers' tests that want to run
// against every backend). Each factory makes a fresh, empty store and can "reopen" it: a new store
// object over the same storage, which is how tests prove something was really persisted.

import path from 'node:path';
import { MemoryStore } from './memory.ts';
import type { Store } from './types.ts';
import { openXlsxStore } from './xlsx.ts';

export interface BackendHandle {
  store: Store;
  reopen(): Promise<Store>;
}

export interface BackendFactory {
  name: 'memory' | 'xlsx' | 'google';
  create(): Promise<BackendHandle>;
  file?: () => string; // xlsx: the file of the most recent create()
  cleanup?: () => Promise<void>;
}

let seq = 0;

export function backendFactories(dir: () => string): BackendFactory[] {
  let lastFile = '';
  return [
    {
      name: 'memory',
      async create() {
        const store = new MemoryStore();
        return { store, reopen: async () => store };
      },
    },
    {
      name: 'xlsx',
      file: () => lastFile,
      async create() {
        const file = path.join(dir(), `suite-${process.pid}-${++seq}.xlsx`);
        lastFile = file;
        const store = await openXlsxStore(file, { watchMs: 0, flushDelayMs: 50 });
        return {
          store,
          reopen: async () => {
            await store.flush();
            return openXlsxStore(file, { watchMs: 0, flushDelayMs: 50 });
          },
        };
      },
    },
  ];
}
