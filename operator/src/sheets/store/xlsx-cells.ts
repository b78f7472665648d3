// Cell conversions between exceljs and the store model, and the workbook → plain data reader.
// Used by the xlsx worker (xlsx-worker.ts); plain data crosses the thread boundary.

import type ExcelJS from 'exceljs';

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
// first character ("=", "+", "-", "@").
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
