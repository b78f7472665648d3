// One cell as Google keeps it: its effective value and, for USER_ENTERED "=…", its formula text;
// how a written value is read (valueInputOption RAW or USER_ENTERED), how a formula is evaluated
// (plain arithmetic only), and how a cell is rendered (valueRenderOption).
import { invalid } from './http-api.ts';

export type Value = string | number | boolean;
export interface StoredCell {
  v: Value; // effective value
  f?: string; // formula text (USER_ENTERED "=…")
}

export function inputOption(v: string | null | undefined): 'RAW' | 'USER_ENTERED' {
  if (v === 'RAW' || v === 'USER_ENTERED') return v;
  if (v === null || v === undefined || v === '') {
    throw invalid("'valueInputOption' is required but not specified");
  }
  throw invalid(
    `Invalid value at 'value_input_option' (type.googleapis.com/google.apps.sheets.v4.ValueInputOption), "${v}"`,
  );
}

export function parseInput(
  v: unknown,
  input: 'RAW' | 'USER_ENTERED',
  maxCellChars: number,
): StoredCell | undefined | null {
  if (v === null) return null;
  if (v === undefined) return undefined;
  if (typeof v === 'object')
    throw invalid('Invalid values: a cell value must be a string, number or boolean.');
  if (typeof v === 'string' && v.length > maxCellChars) {
    throw invalid(
      `Your input contains more than the maximum of ${maxCellChars} characters in a single cell.`,
    );
  }
  if (typeof v === 'number' || typeof v === 'boolean') return { v };
  const s = String(v);
  if (s === '') return undefined;
  if (input === 'RAW') return { v: s };
  if (s.startsWith("'")) return { v: s.slice(1) };
  if (s.startsWith('=')) return { v: evaluate(s.slice(1)), f: s };
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s.trim())) return { v: Number(s) };
  if (/^(true|false)$/i.test(s.trim())) return { v: s.trim().toLowerCase() === 'true' };
  return { v: s };
}

// Formulas: plain arithmetic (+ - * / parentheses, numbers) is evaluated; anything else shows
// "#NAME?" (this emulator knows no functions).
function evaluate(expr: string): Value {
  const src = expr.replace(/\s+/g, '');
  let pos = 0;
  const num = (): number => {
    const m = /^(\d+\.?\d*|\.\d+)/.exec(src.slice(pos));
    if (!m) throw new Error('syntax');
    pos += m[0].length;
    return Number(m[0]);
  };
  const factor = (): number => {
    const ch = src[pos];
    if (ch === '-' || ch === '+') {
      pos++;
      return ch === '-' ? -factor() : factor();
    }
    if (ch === '(') {
      pos++;
      const v = sum();
      if (src[pos++] !== ')') throw new Error('syntax');
      return v;
    }
    return num();
  };
  const product = (): number => {
    let v = factor();
    while (src[pos] === '*' || src[pos] === '/') v = src[pos++] === '*' ? v * factor() : v / factor();
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (src[pos] === '+' || src[pos] === '-') v = src[pos++] === '+' ? v + product() : v - product();
    return v;
  };
  if (!/^[0-9+\-*/().]+$/.test(src)) return '#NAME?';
  try {
    const v = sum();
    if (pos !== src.length) return '#ERROR!';
    return Number.isFinite(v) ? v : '#DIV/0!';
  } catch {
    return '#ERROR!';
  }
}

export function renderCell(c: StoredCell, render: string): Value {
  if (render === 'FORMULA') return c.f ?? c.v;
  if (render === 'UNFORMATTED_VALUE') return c.v;
  if (typeof c.v === 'boolean') return c.v ? 'TRUE' : 'FALSE';
  return String(c.v);
}
