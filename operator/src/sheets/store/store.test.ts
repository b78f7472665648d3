// One suite, every backend: memory, xlsx (real files) and Google (the real googleapis client against
// our Sheets v4 emulator on 127.0.0.1).

import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ExcelJS from 'exceljs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pullImage } from '../images/sicf.ts';
import { MemoryStore } from './memory.ts';
import { OLD_HMAC_SCHEMA, TABS } from './schema.ts';
import { setupCluster } from './setup.ts';
import { type BackendFactory, backendFactories, closeEmulators } from './testing.ts';
import { CellLimitError, ConflictError, KeepRow, SchemaError, type Store } from './types.ts';
import { openXlsxStore, piecesOf, TEMP_PREFIX } from './xlsx.ts';
import { Journal } from './xlsx-journal.ts';

let tmp: string;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'sk-store-'));
});
afterAll(async () => {
  await closeEmulators();
  await fsp.rm(tmp, { recursive: true, force: true });
});

const factories = backendFactories(() => tmp);

describe.each(factories)('store backend $name', (f: BackendFactory) => {
  const open: Store[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close().catch(() => {});
    await f.cleanup?.();
  });
  async function fresh(): Promise<{ store: Store; reopen: () => Promise<Store> }> {
    const h = await f.create();
    open.push(h.store);
    return {
      store: h.store,
      reopen: async () => {
        const s = await h.reopen();
        open.push(s);
        return s;
      },
    };
  }

  it('setup turns an empty store into a cluster with every tab, exact headers and two samples', async () => {
    const { store, reopen } = await fresh();
    const r = await setupCluster(store);
    expect(r.createdTabs).toContain('Deployments');
    expect(store.headers('Deployments')).toEqual(TABS.Deployments.headers);
    expect(store.headers('Nodes')).toEqual(TABS.Nodes.headers);
    expect(store.headers('Layers')).toEqual(TABS.Layers.headers);
    expect(store.rows('Deployments').map((d) => d.name)).toEqual(['hello', 'ticker']);
    // The "hello" sample's WASM module is in the cluster's own image store, and verifies.
    const img = pullImage(
      { images: store.rows('Images'), layers: store.rows('Layers') },
      'sicf:hello-wasm:v1',
    );
    expect(img.config.architecture).toBe('wasm');
    const again = await reopen();
    expect(again.headers('Routes')).toEqual(TABS.Routes.headers);
    expect(again.rows('Deployments').map((d) => d.name)).toEqual(['hello', 'ticker']);
  });

  it('setup is idempotent: a second run changes nothing and adds no samples', async () => {
    const { store, reopen } = await fresh();
    await setupCluster(store);
    await store.transact((tx) => tx.delete('Deployments', 'hello'));
    const v = store.version();
    const r = await setupCluster(store);
    expect(r.changed).toBe(false);
    expect(store.version()).toBe(v);
    const again = await reopen();
    const r2 = await setupCluster(again);
    expect(r2.changed).toBe(false);
    expect(again.rows('Deployments').map((d) => d.name)).toEqual(['ticker']);
  });

  it('reads and writes by header name, even when a person reordered columns and added their own', async () => {
    const { store, reopen } = await fresh();
    // A hand-made Nodes tab: columns shuffled, a "notes" column of the person's own.
    await store.transact((tx) => {
      tx.ensureTab({ name: 'Nodes', headers: ['status', 'notes', 'name', 'cpu_total'], key: ['name'] });
      tx.insert('Nodes', { name: 'n1', status: 'Ready', notes: 'rack 4', cpu_total: 2000 });
    });
    await setupCluster(store, { samples: false });
    await store.transact((tx) => tx.update('Nodes', 'n1', { cpu_used: 300, status: 'NotReady' }));
    const s2 = await reopen();
    expect(s2.headers('Nodes').slice(0, 4)).toEqual(['status', 'notes', 'name', 'cpu_total']);
    const n1 = s2.get('Nodes', 'n1')!;
    expect(n1).toMatchObject({
      name: 'n1',
      status: 'NotReady',
      notes: 'rack 4',
      cpu_total: 2000,
      cpu_used: 300,
    });
    // The upgrade backfilled schedulable=true for the existing node.
    expect(n1.schedulable).toBe(true);
  });

  it('an update whose patch repeats the row key keeps key lookups exact; one that renames still checks duplicates', async () => {
    const { store, reopen } = await fresh();
    await setupCluster(store, { samples: false });
    await store.transact((tx) => {
      for (let i = 0; i < 5; i++) tx.insert('Deployments', { name: `d${i}`, image: 'x', replicas: i });
    });
    await store.transact((tx) => {
      tx.update('Deployments', 'd2', { name: 'd2', replicas: 20 }); // same key, as a status write does
      tx.update('Deployments', 'd3', { name: 'd3', replicas: 30 });
      expect(tx.get('Deployments', 'd2')?.replicas).toBe(20);
      expect(tx.get('Deployments', 'd4')?.replicas).toBe(4);
      expect(() => tx.insert('Deployments', { name: 'd3', image: 'x' })).toThrow(/already has a row/);
      expect(() => tx.update('Deployments', 'd1', { name: 'd2' })).toThrow(/already has a row/);
      tx.update('Deployments', 'd1', { name: 'd9' }); // a real rename re-indexes
      expect(tx.get('Deployments', 'd1')).toBeUndefined();
      expect(tx.get('Deployments', 'd9')?.replicas).toBe(1);
    });
    const s2 = await reopen();
    expect(s2.get('Deployments', 'd3')?.replicas).toBe(30);
    expect(s2.get('Deployments', 'd9')?.replicas).toBe(1);
  });

  it('rewrite keeps the rows it is told to keep, in the new order, with their cells untouched', async () => {
    const { store, reopen } = await fresh();
    await setupCluster(store, { samples: false });
    await store.transact((tx) => {
      for (let i = 0; i < 4; i++) tx.insert('Deployments', { name: `d${i}`, image: 'x', replicas: i });
    });
    await store.transact((tx) => {
      // d1 is dropped, d9 is new, d3 moves ahead of d2 and is rewritten.
      tx.rewrite('Deployments', [
        new KeepRow('d0'),
        { name: 'd3', image: 'y', replicas: 33 },
        new KeepRow('d2'),
        { name: 'd9', image: 'z', replicas: 9 },
      ]);
      expect(tx.get('Deployments', 'd1')).toBeUndefined();
      expect(() => tx.rewrite('Deployments', [new KeepRow('nope')])).toThrow(/no row nope/);
      expect(() => tx.rewrite('Deployments', [new KeepRow('d0'), { name: 'd0' }])).toThrow(/duplicate/);
    });
    const s2 = await reopen();
    expect(s2.rows('Deployments').map((r) => [r.name, r.image, r.replicas])).toEqual([
      ['d0', 'x', 0],
      ['d3', 'y', 33],
      ['d2', 'x', 2],
      ['d9', 'z', 9],
    ]);
  });

  it('supports CRUD by key: upsert merges, update/delete report missing rows, Layers use a compound key', async () => {
    const { store, reopen } = await fresh();
    await setupCluster(store, { samples: false });
    const { value } = await store.transact((tx) => [
      tx.upsert('Deployments', { name: 'web', image: 'nginx', replicas: 2 }),
      tx.upsert('Deployments', { name: 'web', replicas: 3 }),
      tx.update('Deployments', 'nope', { replicas: 1 }),
      tx.delete('Deployments', 'nope'),
    ]);
    expect(value).toEqual(['created', 'updated', false, false]);
    await store.transact((tx) => {
      tx.insert('Layers', { digest: 'sha256:ab', ordinal: 0, media_type: 'x', data: 'AA' });
      tx.insert('Layers', { digest: 'sha256:ab', ordinal: 1, media_type: 'x', data: 'BB' });
    });
    const s2 = await reopen();
    expect(s2.get('Deployments', 'web')).toMatchObject({ image: 'nginx', replicas: 3 });
    expect(s2.get('Layers', ['sha256:ab', 1])?.data).toBe('BB');
    await s2.transact((tx) => tx.delete('Deployments', 'web'));
    expect(s2.rows('Deployments')).toEqual([]);
  });

  it('a failing transaction applies nothing', async () => {
    const { store } = await fresh();
    await setupCluster(store, { samples: false });
    const v = store.version();
    await expect(
      store.transact((tx) => {
        tx.upsert('Deployments', { name: 'a', replicas: 1 });
        tx.upsert('Deployments', { name: 'b', nosuchcolumn: 1 });
      }),
    ).rejects.toBeInstanceOf(SchemaError);
    expect(store.rows('Deployments')).toEqual([]);
    expect(store.version()).toBe(v);
  });

  it('values starting with = + - @ are stored and read back as text, never as formulas', async () => {
    const { store, reopen } = await fresh();
    await setupCluster(store, { samples: false });
    const evil = ['=1+1', '+cmd|calc', '-2+3', '@SUM(A1)', '=HYPERLINK("http://x")'];
    await store.transact((tx) => {
      for (const [i, e] of evil.entries()) tx.insert('Events', { ts: i, kind: 'x', object: 'o', message: e });
    });
    const s2 = await reopen();
    expect(s2.rows('Events').map((r) => r.message)).toEqual(evil);
    if (f.name === 'xlsx') {
      const wb = new ExcelJS.Workbook();
      await wb.xlsx.readFile(f.file!());
      const ws = wb.getWorksheet('Events')!;
      for (let i = 0; i < evil.length; i++) expect(ws.getCell(i + 2, 4).type).toBe(ExcelJS.ValueType.String);
    }
  });

  it('a cell longer than the backend allows is refused with a clear error, not truncated', async () => {
    const { store } = await fresh();
    await setupCluster(store, { samples: false });
    const big = 'x'.repeat(store.limits.maxCellChars + 1);
    await expect(store.transact((tx) => tx.insert('Secrets', { name: 's', data: big }))).rejects.toThrow(
      CellLimitError,
    );
    await store.transact((tx) => tx.insert('Secrets', { name: 's', data: big.slice(1) }));
    expect(String(store.get('Secrets', 's')?.data).length).toBe(store.limits.maxCellChars);
  });

  it('concurrent writers do not lose updates (50 parallel read-modify-write increments)', async () => {
    const { store, reopen } = await fresh();
    await setupCluster(store, { samples: false });
    await store.transact((tx) => tx.insert('Deployments', { name: 'c', replicas: 0 }));
    await Promise.all(
      Array.from({ length: 50 }, () =>
        store.transact((tx) => {
          const n = Number(tx.get('Deployments', 'c')!.replicas);
          tx.update('Deployments', 'c', { replicas: n + 1 });
        }),
      ),
    );
    expect(store.get('Deployments', 'c')!.replicas).toBe(50);
    await store.flush();
    expect((await reopen()).get('Deployments', 'c')!.replicas).toBe(50);
  });

  it('optimistic concurrency: a transaction made against an old version is refused', async () => {
    const { store } = await fresh();
    await setupCluster(store, { samples: false });
    const v = store.version();
    await store.transact((tx) => tx.insert('Deployments', { name: 'a' }), { ifVersion: v });
    await expect(
      store.transact((tx) => tx.insert('Deployments', { name: 'b' }), { ifVersion: v }),
    ).rejects.toThrow(ConflictError);
  });

  it('upgrades an old-schema cluster by appending columns at the right, never moving data', async () => {
    const { store, reopen } = await fresh();
    await store.transact((tx) => {
      for (const t of OLD_HMAC_SCHEMA) tx.ensureTab(t);
      tx.insert('Deployments', { name: 'old', image: 'nginx', replicas: 2, tolerations: 'gpu' });
      tx.insert('Pods', {
        name: 'old-1',
        deployment: 'old',
        node: 'n1',
        phase: 'Running',
        container_id: 'abc',
      });
    });
    const r = await setupCluster(store);
    expect(r.addedColumns.Deployments).toEqual(['env', 'secret_files', 'ports', 'restart_policy']);
    expect(r.samples).toEqual([]); // not a new cluster
    const s2 = await reopen();
    expect(s2.headers('Deployments')).toEqual(TABS.Deployments.headers);
    expect(s2.headers('Pods')).toEqual(TABS.Pods.headers);
    expect(s2.get('Deployments', 'old')).toMatchObject({
      image: 'nginx',
      replicas: 2,
      tolerations: 'gpu',
      ports: null,
    });
    expect(s2.get('Pods', 'old-1')).toMatchObject({ node: 'n1', container_id: 'abc', endpoints: null });
    expect(s2.tabs()).toEqual(expect.arrayContaining(['Images', 'Layers', 'Secrets', 'Gateways', 'Routes']));
  });

  it('buffered changes are acknowledged at once and reach storage within the flush delay', async () => {
    const { store, reopen } = await fresh();
    await setupCluster(store, { samples: false });
    for (let i = 0; i < 20; i++) {
      await store.transact((tx) => tx.upsert('Nodes', { name: 'n1', last_heartbeat: i }), {
        durability: 'buffered',
      });
    }
    await store.flush();
    expect((await reopen()).get('Nodes', 'n1')!.last_heartbeat).toBe(19);
  });
});

describe('xlsx backend specifics', () => {
  it('a save sends its rows to the I/O worker in pieces; headers go with the first piece of their tab', () => {
    const rows = (n: number, from = 0): [number, string[]][] =>
      Array.from({ length: n }, (_, i) => [from + i, [`r${from + i}`]]);
    const pieces = piecesOf(
      [
        { name: 'A', headers: ['a'], oldHeaderWidth: 1, rows: rows(5) },
        { name: 'B', headers: ['b'], oldHeaderWidth: 0, rows: [] },
        { name: 'C', headers: undefined, oldHeaderWidth: 1, rows: rows(3) },
      ],
      4,
    );
    expect(pieces.map((p) => p.map((t) => `${t.name}${t.headers ? '+h' : ''}:${t.rows.length}`))).toEqual([
      ['A+h:4'],
      ['A:1', 'B+h:0', 'C:3'],
    ]);
    expect(pieces.flat().flatMap((t) => t.rows.map(([i]) => `${t.name}${i}`))).toEqual([
      'A0',
      'A1',
      'A2',
      'A3',
      'A4',
      'C0',
      'C1',
      'C2',
    ]);
    expect(piecesOf([], 4)).toEqual([[]]);
  });

  it('saves atomically: no temp file is left behind and the file always opens', async () => {
    const file = path.join(tmp, 'atomic.xlsx');
    const s = await openXlsxStore(file, { watchMs: 0 });
    await setupCluster(s);
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        s.transact((tx) => tx.upsert('Deployments', { name: `d${i}`, replicas: i })),
      ),
    );
    await s.close();
    const names = await fsp.readdir(tmp);
    expect(names.filter((n) => n.startsWith(TEMP_PREFIX))).toEqual([]);
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.readFile(file);
    expect(wb.getWorksheet('Deployments')!.rowCount).toBe(33);
  });

  it('a burst of heartbeats is saved in few writes (write-behind), not one save per heartbeat', async () => {
    const file = path.join(tmp, 'burst.xlsx');
    const s = await openXlsxStore(file, { watchMs: 0, flushDelayMs: 200 });
    await setupCluster(s);
    const before = s.saves;
    for (let i = 0; i < 200; i++) {
      await s.transact((tx) => tx.upsert('Nodes', { name: `n${i % 10}`, last_heartbeat: i }), {
        durability: 'buffered',
      });
    }
    await s.flush();
    expect(s.saves - before).toBeLessThanOrEqual(2);
    await s.close();
  });

  it("notices a person's edit of the file, reloads it, and merges: person wins a conflict, our other changes stay", async () => {
    const file = path.join(tmp, 'external.xlsx');
    const s = await openXlsxStore(file, { watchMs: 50, flushDelayMs: 5_000 });
    await setupCluster(s);
    await s.flush(); // durable writes are in the journal at once, in the workbook after the save delay
    const seen: string[] = [];
    s.onChange((ev) => ev.source === 'external' && seen.push(...ev.tabs));
    // Our buffered change (not yet on disk) to a cell the person does not touch, and one they do.
    await s.transact(
      (tx) => {
        tx.upsert('Nodes', { name: 'n1', last_heartbeat: 111, status: 'Ready' });
        tx.update('Deployments', 'ticker', { image: 'ours' });
      },
      { durability: 'buffered' },
    );
    // A person edits in "Excel": scales ticker to 7, changes its image too (conflict), adds a row.
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.readFile(file);
    const ws = wb.getWorksheet('Deployments')!;
    ws.getCell('C3').value = 7; // ticker.replicas
    ws.getCell('B3').value = 'theirs'; // ticker.image (we changed it too)
    ws.getRow(4).values = ['added-by-hand', 'busybox', 1];
    ws.getCell('M1').value = 'owner'; // their own column
    ws.getCell('M3').value = 'alice';
    await wb.xlsx.writeFile(file);
    await waitFor(() => seen.includes('Deployments'));
    const ticker = s.get('Deployments', 'ticker')!;
    expect(ticker.replicas).toBe(7);
    expect(ticker.image).toBe('theirs');
    expect(ticker.owner).toBe('alice');
    expect(s.get('Deployments', 'added-by-hand')?.image).toBe('busybox');
    expect(s.get('Nodes', 'n1')?.last_heartbeat).toBe(111); // ours kept
    await s.close();
    const again = await openXlsxStore(file, { watchMs: 0 });
    expect(again.get('Nodes', 'n1')?.last_heartbeat).toBe(111);
    expect(again.get('Deployments', 'ticker')?.owner).toBe('alice');
    await again.close();
  });

  it("#17.11 formula-looking values carry Text format and Excel's quote prefix, so an edit in Excel keeps them text", async () => {
    const file = path.join(tmp, 'quoted.xlsx');
    const s = await openXlsxStore(file, { watchMs: 0 });
    await setupCluster(s, { samples: false });
    await s.transact((tx) =>
      tx.upsert('Deployments', {
        name: 'x',
        image: '=HYPERLINK("http://evil.example","click")',
        command: '@SUM(1)',
      }),
    );
    await s.close();
    const JSZip = (await import('jszip')).default;
    const zip = await JSZip.loadAsync(await fsp.readFile(file));
    const styles = await zip.file('xl/styles.xml')!.async('string');
    // The style of the image cell: Text (49) with quotePrefix="1".
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.readFile(file);
    const ws = wb.getWorksheet('Deployments')!;
    const row = ws.getColumn(1).values.indexOf('x');
    const cell = ws.getRow(row).getCell(TABS.Deployments.headers.indexOf('image') + 1);
    expect(cell.value).toBe('=HYPERLINK("http://evil.example","click")'); // text, not a formula
    expect(cell.numFmt).toBe('@');
    const xfs = [
      ...(/<cellXfs[^>]*>([\s\S]*?)<\/cellXfs>/.exec(styles)?.[1] ?? '').matchAll(/<xf\b[^>]*>/g),
    ].map((m) => m[0]);
    const textXfs = xfs.filter((x) => /numFmtId="49"/.test(x));
    expect(textXfs.length).toBeGreaterThan(0);
    for (const x of textXfs) expect(x).toMatch(/quotePrefix="1"/);
    // The store reads the values back unchanged.
    const again = await openXlsxStore(file, { watchMs: 0 });
    expect(again.get('Deployments', 'x')).toMatchObject({ command: '@SUM(1)' });
    await again.transact((tx) => tx.update('Deployments', 'x', { replicas: 2 }));
    await again.close();
    // Saved again by exceljs (which drops the flag on its own): the flag is still there.
    const z2 = await JSZip.loadAsync(await fsp.readFile(file));
    const st2 = await z2.file('xl/styles.xml')!.async('string');
    for (const x of [...st2.matchAll(/<xf\b[^>]*numFmtId="49"[^>]*>/g)])
      expect(x[0]).toMatch(/quotePrefix="1"/);
  });

  it("keeps a person's formula until that cell is overwritten", async () => {
    const file = path.join(tmp, 'formula.xlsx');
    const s0 = await openXlsxStore(file, { watchMs: 0 });
    await setupCluster(s0);
    await s0.close();
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.readFile(file);
    wb.getWorksheet('Deployments')!.getCell('C2').value = { formula: '1+2', result: 3 } as ExcelJS.CellValue;
    await wb.xlsx.writeFile(file);
    const s = await openXlsxStore(file, { watchMs: 0 });
    expect(s.get('Deployments', 'hello')!.replicas).toBe(3);
    await s.transact((tx) => tx.update('Deployments', 'ticker', { replicas: 5 }));
    await s.close();
    const wb2 = new ExcelJS.Workbook();
    await wb2.xlsx.readFile(file);
    expect(wb2.getWorksheet('Deployments')!.getCell('C2').formula).toBe('1+2');
    expect(wb2.getWorksheet('Deployments')!.getCell('C3').value).toBe(5);
  });
});

describe('memory backend specifics', () => {
  it('rejects asynchronous transaction functions (they could interleave and lose updates)', async () => {
    const s = new MemoryStore();
    await expect(s.transact(async () => 1)).rejects.toThrow(/synchronous/);
  });
});

async function waitFor(pred: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('xlsx durability', () => {
  it("a durable commit swept into a save's journal cut is acknowledged only once that cut is durable", async () => {
    // The race the kill -9 chain once hit in CI (a whole acknowledged batch lost): a save's timer
    // runs between a commit and the journal flush, its cut sweeps the commit into its own record,
    // and the flush, finding nothing left to append, acknowledged before that record was written.
    const file = path.join(await fsp.mkdtemp(path.join(tmp, 'cut-')), 'cut.xlsx');
    const s = await openXlsxStore(file, { watchMs: 0, flushDelayMs: 60_000 });
    await setupCluster(s, { samples: false });
    // Private members, reached on purpose: the race is between two of them.
    const inner = s as unknown as {
      book: { snapshot(): unknown };
      cutJournal(snapshot: unknown): Promise<number>;
      persist(changed: string[], durability: string): Promise<void>;
    };
    let release = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const realCut = Journal.prototype.cut;
    Journal.prototype.cut = function (this: Journal, ...a: Parameters<typeof realCut>) {
      return gate.then(() => realCut.apply(this, a));
    };
    const persist = inner.persist.bind(s);
    let cutOnce = false;
    inner.persist = (changed, durability) => {
      const p = persist(changed, durability);
      if (!cutOnce) {
        cutOnce = true;
        void inner.cutJournal(inner.book.snapshot());
      }
      return p;
    };
    try {
      let acked = false;
      const write = s
        .transact((tx) => tx.upsert('Deployments', { name: 'swept', replicas: 3 }))
        .then(() => {
          acked = true;
        });
      await new Promise((r) => setTimeout(r, 100));
      expect(acked, 'acknowledged while the record holding it was not written').toBe(false);
      release();
      await write;
      expect(acked).toBe(true);
    } finally {
      Journal.prototype.cut = realCut;
      release();
    }
    await s.close();
    const again = await openXlsxStore(file, { watchMs: 0 });
    expect(again.get('Deployments', 'swept')?.replicas).toBe(3);
    await again.close();
  });

  // One chain of writer processes on one workbook, each killed with SIGKILL — at a random moment of
  // a write burst, or at a chosen point of the save/journal protocol (testdata/crash-writer.ts) — and
  // each opening what the previous one left, so every open replays a crash's journal and the
  // replaying process's own first save is among the kill points. Values only grow, so an
  // acknowledged write lost at any step still shows at the end (its row holds a smaller value).
  // Chosen points rather than many random kills: a random kill almost never lands in the
  // milliseconds between a save's rename and the journal recording it, which lost every write
  // acknowledged during the save before the journal learned the new file's hash first.
  const KILLS: { point?: string; why: string }[] = [
    { why: 'a burst on a new workbook: a torn journal append, no workbook file yet' },
    { point: 'cut:2', why: 'a generation was just cut; its save has not begun' },
    {
      point: 'prepared:1',
      why: 'a temp file is written but unknown to the journal (removed by the next open)',
    },
    { point: 'intended:1', why: 'the journal names the temp file; the old workbook is still in place' },
    {
      point: 'renamed:1',
      why: 'a save is in place, not yet recorded as the base; writes acknowledged meanwhile',
    },
    { point: 'saved:1', why: 'the base is recorded; older generations deleted' },
    { why: 'a burst again, after all of the above' },
  ];

  it(`kill -9 at ${KILLS.length} chosen points of the save and journal protocol: the workbook always opens and no acknowledged write is lost`, async () => {
    const { spawn } = await import('node:child_process');
    const dir = await fsp.mkdtemp(path.join(tmp, 'crash-'));
    const file = path.join(dir, 'crash.xlsx');
    const script = new URL('./testdata/crash-writer.ts', import.meta.url).pathname;
    const acked = new Map<string, number>(); // row → the largest value acknowledged for it
    let writes = 0;
    let next = 0;
    for (const [round, kill] of KILLS.entries()) {
      const child = spawn(
        process.execPath,
        [script, file, String(next), ...(kill.point ? [kill.point] : [])],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      const target = 5 + Math.floor(Math.random() * 40);
      let seen = 0;
      let crashed = '';
      let buf = '';
      // 'close', not 'exit': the last lines (the crash point, the last acks) may still be in the pipe.
      const exited = new Promise<void>((resolve, reject) => {
        child.once('close', () => resolve());
        child.once('error', reject);
      });
      const guard = setTimeout(() => child.kill('SIGKILL'), 60_000); // a point never reached fails below
      child.stdout.on('data', (b: Buffer) => {
        buf += b.toString();
        const lines = buf.split('\n');
        buf = lines.pop() ?? '';
        for (const l of lines) {
          const [word, name, value] = l.split(' ');
          if (word === 'ack') {
            const v = Number(value);
            acked.set(name, Math.max(acked.get(name) ?? -1, v));
            seen++;
            next = Math.max(next, v + 1000); // beyond any value (and new row name) the writer tried
          } else if (word === 'crash') crashed = name;
        }
        if (!kill.point && seen >= target) child.kill('SIGKILL');
      });
      await exited;
      clearTimeout(guard);
      writes += seen;
      const context = `round ${round} (${kill.point ?? 'burst'}: ${kill.why})`;
      expect(child.signalCode, `${context}: the writer died otherwise`).toBe('SIGKILL');
      if (kill.point)
        expect(crashed, `${context}: the point was never reached`).toBe(kill.point.split(':')[0]);
      expect(seen, `${context}: nothing was acknowledged`).toBeGreaterThan(0);
      // What kill -9 left is a whole workbook, readable by exceljs itself (or, before the first save
      // of a new workbook, none: everything is in the journal).
      if (round > 0 || (await fsp.stat(file).catch(() => null))) {
        const wb = new ExcelJS.Workbook();
        await wb.xlsx.readFile(file);
        expect(wb.getWorksheet('Deployments'), context).toBeDefined();
      }
    }
    const s = await openXlsxStore(file, { watchMs: 0 });
    const lost = [...acked].filter(([name, v]) => !(Number(s.get('Deployments', name)?.replicas ?? -1) >= v));
    expect(lost, 'acknowledged writes lost ([row, value])').toEqual([]);
    await s.close();
    expect(writes).toBeGreaterThan(KILLS.length * 5); // every round wrote under way, not just at its kill
    // Temp files of killed saves are removed by the next open; no journal was set aside as unapplied.
    const left = await fsp.readdir(dir);
    expect(left.filter((n) => n.startsWith(TEMP_PREFIX) || n.endsWith('.unapplied'))).toEqual([]);
  }, 300_000); // 7 writer processes and one reopening: 17-38 s at load 6-11; a deadline, not a cost
});
