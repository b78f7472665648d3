// Setup: turn an empty store into a cluster, or upgrade an older one. Idempotent.
// - Missing tabs are created with their headers (in TAB_ORDER).
// - Missing columns are appended at the right-hand end; existing data never moves; existing rows
//   get the schema's backfill (Nodes.schedulable = true) or "".
// - Sample deployments (and the sample WASM image "hello" runs) are written only when the store had no Deployments tab at all (a brand-new
//   cluster), so running setup again, or on a cluster whose user deleted the samples, adds nothing.

import { digestOf, importImageTx, WASM_MEDIA_TYPE, wasmConfig } from '../images/sicf.ts';
import { helloWasm } from '../images/wasm-hello.ts';
import { SAMPLE_DEPLOYMENTS, SAMPLE_WASM_IMAGE, TAB_ORDER, TABS } from './schema.ts';
import type { Store } from './types.ts';

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
      // The "hello" sample runs a WASM module from the cluster's own image store.
      if (!tx.get('Images', SAMPLE_WASM_IMAGE)) {
        const mod = helloWasm(
          'hello from Sheeternetes: this WebAssembly module was stored in spreadsheet cells\n',
        );
        importImageTx(
          tx,
          store.limits.maxCellChars,
          SAMPLE_WASM_IMAGE,
          [{ bytes: mod, mediaType: WASM_MEDIA_TYPE }],
          wasmConfig(digestOf(mod)),
        );
      }
    }
    report.changed = report.createdTabs.length > 0 || Object.keys(report.addedColumns).length > 0;
    return report;
  });
  return value;
}
