// Setup: turn an empty store into a cluster, or upgrade an older one. Idempotent.
// - Missing tabs are created with their headers (in TAB_ORDER).
// - Missing columns are appended at the right-hand end; existing data never moves; existing rows
//   get the schema's backfill (Nodes.schedulable = true) or "".
// - Sample deployments (and the sample WASM images they run) are written only when the store had no Deployments tab at all (a brand-new
//   cluster), so running setup again, or on a cluster whose user deleted the samples, adds nothing.

import { digestOf, importImageTx, WASM_MEDIA_TYPE, wasmConfig } from '../images/sicf.ts';
import { helloWasm, tickerWasm } from '../images/wasm-hello.ts';
import { SAMPLE_DEPLOYMENTS, SAMPLE_TICKER_IMAGE, SAMPLE_WASM_IMAGE, TAB_ORDER, TABS } from './schema.ts';
import type { Store, Tx } from './types.ts';

export interface SetupOptions {
  samples?: boolean; // write the sample deployments into a new cluster (default true)
}

export interface SetupReport {
  createdTabs: string[];
  addedColumns: Record<string, string[]>;
  samples: string[];
  changed: boolean;
}

export async function setupCluster(store: Store, opts: SetupOptions = {}): Promise<SetupReport> {
  const { value } = await store.transact((tx) => {
    const report: SetupReport = { createdTabs: [], addedColumns: {}, samples: [], changed: false };
    const brandNew = !tx.hasTab('Deployments');
    for (const name of TAB_ORDER) {
      const r = tx.ensureTab(TABS[name]);
      if (r.created) report.createdTabs.push(name);
      else if (r.addedColumns.length > 0) report.addedColumns[name] = r.addedColumns;
    }
    if (brandNew && (opts.samples ?? true)) {
      for (const d of SAMPLE_DEPLOYMENTS) {
        tx.insert('Deployments', d);
        report.samples.push(String(d.name));
      }
      ensureSampleImages(tx, store.limits.maxCellChars);
    }
    report.changed = report.createdTabs.length > 0 || Object.keys(report.addedColumns).length > 0;
    return report;
  });
  return value;
}

/** The samples' WASM images, imported into the image store where missing (the samples run them). */
export function ensureSampleImages(tx: Tx, maxCellChars: number): void {
  const modules: [string, Uint8Array][] = [
    [
      SAMPLE_WASM_IMAGE,
      helloWasm('hello from Sheeternetes: this WebAssembly module was stored in spreadsheet cells\n'),
    ],
    [SAMPLE_TICKER_IMAGE, tickerWasm('ticker: still running, a WebAssembly module from spreadsheet cells\n')],
  ];
  for (const [name, mod] of modules) {
    if (tx.get('Images', name)) continue;
    importImageTx(
      tx,
      maxCellChars,
      name,
      [{ bytes: mod, mediaType: WASM_MEDIA_TYPE }],
      wasmConfig(digestOf(mod)),
    );
  }
}
