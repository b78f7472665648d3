// Opens the store a `--workbook` argument names: `memory:`, `google:<spreadsheetId>`, or an xlsx path.
import { readFile } from 'node:fs/promises';
import { MemoryStore } from '../store/memory.ts';
import type { Store } from '../store/types.ts';
import { openXlsxStore } from '../store/xlsx.ts';

export interface OpenOptions {
  /** Service-account or authorized-user JSON file, for google: workbooks. */
  googleCredentials?: string;
  /** Sheets API root URL (the emulator in tests). */
  googleRootUrl?: string;
  flushDelayMs?: number;
}

export async function openWorkbook(spec: string, o: OpenOptions = {}): Promise<Store> {
  if (spec === 'memory:' || spec === 'memory') return new MemoryStore();
  if (spec.startsWith('google:')) {
    const spreadsheetId = spec.slice('google:'.length);
    if (!/^[A-Za-z0-9_-]{10,}$/.test(spreadsheetId))
      throw new Error(
        `--workbook ${spec}: the spreadsheet id after google: looks wrong (copy it from the sheet's URL)`,
      );
    const credFile =
      o.googleCredentials ?? process.env.GOOGLE_APPLICATION_CREDENTIALS ?? process.env.SHEETSOP_CREDS;
    if (!credFile)
      throw new Error(
        'a google: workbook needs credentials: pass --google-credentials FILE (service account or authorized-user JSON)',
      );
    // googleapis is large; load it only for a google: workbook.
    const { authFromCredentials, openGoogleStore } = await import('../store/google.ts');
    const auth = authFromCredentials(await readFile(credFile, 'utf8'));
    return openGoogleStore({ spreadsheetId, auth, rootUrl: o.googleRootUrl, flushDelayMs: o.flushDelayMs });
  }
  if (!/\.xlsx$/i.test(spec))
    throw new Error(`--workbook ${spec}: use a .xlsx file, memory:, or google:<spreadsheetId>`);
  return openXlsxStore(spec, { flushDelayMs: o.flushDelayMs });
}
