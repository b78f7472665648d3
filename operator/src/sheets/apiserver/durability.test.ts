// kill -9 the apiserver (a real child process on the xlsx backend) in the middle of a burst of
// writes, 6 times over the same workbook: it always opens again, and no acknowledged change is lost.
// What this proves is the HTTP edge: a 200 is sent only once the change is durable. The store's own
// crash points (a save's temp file, rename and journal records) are each killed at on purpose in
// operator/src/sheets/store/store.test.ts, which random kills here would hit only by luck; so a few
// rounds suffice (SK_KILL_ROUNDS=20 or more for a longer soak).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openXlsxStore } from '../store/xlsx.ts';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const TOKEN = 'durable';
const ROUNDS = Number(process.env.SK_KILL_ROUNDS ?? 6);
let dir = '';
let child: ChildProcess | undefined;
afterAll(async () => {
  child?.kill('SIGKILL');
  if (dir) await rm(dir, { recursive: true, force: true });
});

function start(file: string): Promise<{ proc: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      [MAIN, '--workbook', file, '--port', '0', '--token', TOKEN, '--flush-ms', '200'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    proc.stdout?.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ proc, url: m[1] });
    });
    proc.stderr?.on('data', (d) => {
      err += d;
    });
    proc.once('exit', (code) =>
      reject(new Error(`apiserver exited (${code}) before listening: ${err.slice(-500)}`)),
    );
  });
}

async function post(url: string, body: Record<string, unknown>): Promise<number> {
  const r = await fetch(url, {
    method: 'POST',
    body: JSON.stringify({ token: TOKEN, ...body }),
    headers: { 'content-type': 'application/json' },
  });
  await r.arrayBuffer();
  return r.status;
}

describe('durability', () => {
  it(`${ROUNDS} × kill -9 during a write burst: the workbook opens and every acknowledged write is there`, {
    timeout: 120_000 + ROUNDS * 30_000, // seconds per round idle; generous for a loaded machine
  }, async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sk-kill-'));
    const file = path.join(dir, 'cluster.xlsx');
    const acked = new Map<string, number>(); // deployment → acknowledged replicas
    // A change whose answer never came (the server died after saving it, before replying) may or
    // may not be on disk: either value is right for that row.
    const unanswered = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      if (process.env.SK_DEBUG) console.error('round', round, acked.size, new Date().toISOString());
      const s = await start(file);
      if (process.env.SK_DEBUG) console.error('started', s.url);
      child = s.proc;
      let stop = false;
      const writers = Array.from({ length: 6 }, async (_, w) => {
        for (let k = 0; !stop; k++) {
          const name = `r${round}-w${w}-${k}`;
          try {
            const st = await post(s.url, {
              action: 'apply',
              deployments: [{ name, image: 'x', replicas: k % 3, cpu_req: 1, mem_req: 1 }],
            });
            if (st === 200) acked.set(name, k % 3);
            const prev = `r${round}-w${w}-${k - 1}`;
            if (k > 0 && acked.has(prev)) {
              unanswered.set(prev, 7);
              if ((await post(s.url, { action: 'scale', name: prev, replicas: 7 })) === 200)
                acked.set(prev, 7);
              unanswered.delete(prev);
            }
            await post(s.url, { node: `n${w}`, cpu_total: 1000, mem_total: 1000 });
          } catch {
            return; // the process died under us: this write was never acknowledged
          }
        }
      });
      // Kill once a random number (1..8) of this round's writes were acknowledged, so every round
      // dies mid-burst with acknowledged writes behind it, however fast or slow the machine is.
      const target = 1 + Math.floor(Math.random() * 8);
      const before = acked.size;
      const t0 = Date.now();
      while (acked.size - before < target && Date.now() - t0 < 60_000)
        await new Promise((r) => setTimeout(r, 5));
      s.proc.kill('SIGKILL');
      stop = true;
      if (process.env.SK_DEBUG) console.error('killed');
      await Promise.all(writers);
      if (process.env.SK_DEBUG) console.error('writers done');
      if (s.proc.exitCode === null && s.proc.signalCode === null)
        await new Promise((r) => s.proc.once('exit', r));
      // The workbook opens, and holds every acknowledged write with its acknowledged value.
      const store = await openXlsxStore(file, { watchMs: 0 });
      try {
        const rows = new Map(store.rows('Deployments').map((d) => [String(d.name), d.replicas]));
        const lost = [...acked]
          .filter(
            ([name, replicas]) => rows.get(name) !== replicas && rows.get(name) !== unanswered.get(name),
          )
          .map(([name, replicas]) => ({ name, acknowledged: replicas, onDisk: rows.get(name) ?? 'missing' }));
        expect(lost, `round ${round}`).toEqual([]);
        // What is on disk now is what later rounds must keep.
        for (const [name, value] of unanswered) {
          if (process.env.SK_DEBUG && rows.get(name) === value) console.error('saved, never answered:', name);
          acked.set(name, rows.get(name) as number);
        }
        unanswered.clear();
      } finally {
        await store.close();
      }
    }
    expect(acked.size).toBeGreaterThanOrEqual(ROUNDS); // every round acknowledged 1..8 writes before its kill
    child = undefined;
    // Temp files of interrupted saves may remain after kill -9 but never replace the workbook.
    const names = await readdir(dir);
    expect(names).toContain('cluster.xlsx');
  });
});
