// Backend factories for tests (the shared store suite, and other engineers' tests that want to run
// against every backend). Each factory makes a fresh, empty store and can "reopen" it: a new store
// object over the same storage, which is how tests prove something was really persisted.

import path from 'node:path';
import { google } from 'googleapis';
import { SheetsEmulator } from '../google-emulator/server.ts';
import { openGoogleStore } from './google.ts';
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
  emulator?: () => SheetsEmulator | undefined;
}

// An OAuth2 client holding a ready access token: googleapis sends it as a Bearer token and never
// asks a token endpoint (the expiry is far away). Each user token gets its own quota.
export function testAuth(user: string): InstanceType<typeof google.auth.OAuth2> {
  const c = new google.auth.OAuth2();
  c.setCredentials({ access_token: `test-${user}`, expiry_date: Date.now() + 3_600_000 });
  return c;
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
    {
      name: 'google',
      emulator: () => emu,
      async create() {
        if (!emu) {
          emu = new SheetsEmulator();
          await emu.listen();
        }
        const e = emu;
        const spreadsheetId = e.createSpreadsheet(`suite-${++seq}`, ['Sheet1']);
        const opts = {
          spreadsheetId,
          auth: testAuth(`user-${seq}`),
          rootUrl: e.url,
          writesPerMinute: 6_000, // the suite tests semantics; pacing has its own test
          flushDelayMs: 20,
          pollMs: 0,
          backoffBaseMs: 20,
        };
        const store = await openGoogleStore(opts);
        return {
          store,
          reopen: async () => {
            await store.flush();
            return openGoogleStore(opts);
          },
        };
      },
      async cleanup() {
        // The emulator lives for the whole suite; closeEmulators() stops it.
      },
    },
  ];
}

let emu: SheetsEmulator | undefined;
export async function closeEmulators(): Promise<void> {
  await emu?.close();
  emu = undefined;
}
