// Cell conversions between exceljs and the store model, and the workbook → plain data reader.
// Used by the xlsx worker (xlsx-worker.ts); plain data crosses the thread boundary.

import type ExcelJS from 'exceljs';
import JSZip from 'jszip';

export type PlainCell = string | number | boolean | null;
export type SheetCell = PlainCell | { formula: string; result: PlainCell };
export interface SheetData {
  name: string;
  headers: string[];
  rows: SheetCell[][];
}

export function fromExcel(v: ExcelJS.CellValue): SheetCell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v === '' ? null : v;
  if (typeof v === 'number' || typeof v === 'boolean') return v;
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object') {
    const o = v as unknown as Record<string, unknown>;
    if (typeof o.formula === 'string') return { formula: o.formula, result: plainResult(o.result) };
    if ('sharedFormula' in o) return plainResult(o.result);
    if (Array.isArray(o.richText)) return (o.richText as { text: string }[]).map((t) => t.text).join('');
    if (typeof o.text === 'string') return o.text;
    if (typeof o.error === 'string') return o.error;
  }
  return String(v);
}

function plainResult(r: unknown): PlainCell {
  if (r === undefined || r === null) return null;
  if (typeof r === 'string' || typeof r === 'number' || typeof r === 'boolean') return r;
  if (r instanceof Date) return r.toISOString();
  if (typeof r === 'object' && r && 'error' in r) return String((r as { error: unknown }).error);
  return String(r);
}

// Strings go in as strings: exceljs writes them as shared strings, never as formulas, whatever their
// first character ("=", "+", "-", "@"). But a person who later edits such a cell in Excel turns it
// into a live formula — unless the cell is Text-formatted and carries Excel's quote prefix, which
// is what Excel itself stores for a value typed as '=... (see markQuotePrefix).

/** A string Excel would take for a formula (or a DDE call) once the cell is edited. */
export function looksLikeFormula(v: SheetCell): v is string {
  return typeof v === 'string' && /^[=+\-@\t\r]/.test(v);
}

/** Text number format: Excel keeps what is typed into such a cell as text. Built-in id 49. */
export const TEXT_FORMAT = '@';

/**
 * The saved workbook with Excel's quotePrefix="1" on every Text-formatted cell style (exceljs does
 * not write the flag; its styles are otherwise kept). Only touches xl/styles.xml.
 */
export async function markQuotePrefix(xlsx: Buffer): Promise<Buffer> {
  const zip = await JSZip.loadAsync(xlsx);
  const file = zip.file('xl/styles.xml');
  if (!file) return xlsx;
  const xml = await file.async('string');
  const marked = xml.replace(/<xf\b([^>]*\bnumFmtId="49"[^>]*?)(\/?)>/g, (m, attrs: string, close: string) =>
    /\bquotePrefix=/.test(attrs) ? m : `<xf${attrs} quotePrefix="1"${close}>`,
  );
  if (marked === xml) return xlsx;
  zip.file('xl/styles.xml', marked);
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}
export function toExcel(c: SheetCell): ExcelJS.CellValue {
  if (c !== null && typeof c === 'object')
    return { formula: c.formula, result: c.result ?? undefined } as ExcelJS.CellValue;
  return c;
}

const plain = (c: SheetCell): PlainCell => (c !== null && typeof c === 'object' ? c.result : c);

export function readWorkbook(wb: ExcelJS.Workbook): SheetData[] {
  const out: SheetData[] = [];
  wb.eachSheet((ws) => {
    const width = ws.columnCount;
    const height = ws.rowCount;
    const headerRow = ws.getRow(1);
    const headers: string[] = [];
    for (let c = 1; c <= width; c++) {
      const v = plain(fromExcel(headerRow.getCell(c).value));
      headers.push(v === null ? '' : String(v).trim());
    }
    while (headers.length > 0 && headers[headers.length - 1] === '') headers.pop();
    const rows: SheetCell[][] = [];
    for (let r = 2; r <= height; r++) {
      const row = ws.getRow(r);
      const cells: SheetCell[] = [];
      for (let c = 1; c <= width; c++) cells.push(fromExcel(row.getCell(c).value));
      rows.push(cells);
    }
    // Trailing empty rows carry nothing; dropping them keeps row counts honest.
    while (rows.length > 0 && rows[rows.length - 1].every((c) => plain(c) === null || plain(c) === ''))
      rows.pop();
    out.push({ name: ws.name, headers, rows });
  });
  return out;
}
