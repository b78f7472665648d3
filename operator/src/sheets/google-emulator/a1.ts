// A1 notation as the Sheets v4 API reads it: `Sheet1!A1:D5`, `'My tab'!B:B`, `Sheet1!2:4`, `Sheet1`,
// `A1:C3` (first sheet). Pure functions.

export interface A1Range {
  sheet: string | undefined; // undefined = the first sheet
  // 0-based, inclusive start; end exclusive. undefined end = to the edge of the grid.
  startRow: number;
  startCol: number;
  endRow: number | undefined;
  endCol: number | undefined;
}

export function colName(index: number): string {
  let n = index + 1;
  let s = '';
  while (n > 0) {
    const r = (n - 1) % 26;
    s = String.fromCharCode(65 + r) + s;
    n = Math.floor((n - 1) / 26);
  }
  return s;
}

function colIndex(letters: string): number {
  let n = 0;
  for (const ch of letters.toUpperCase()) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

export function quoteSheet(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !/^[A-Za-z]{1,3}[0-9]+$/.test(name)
    ? name
    : `'${name.replaceAll("'", "''")}'`;
}

const CELL = /^([A-Za-z]{0,3})([0-9]*)$/;

// Throws an Error("Unable to parse range: ...") as Google words it.
export function parseA1(input: string): A1Range {
  const fail = (): never => {
    throw new Error(`Unable to parse range: ${input}`);
  };
  let sheet: string | undefined;
  let rest = input;
  if (input.startsWith("'")) {
    let i = 1;
    let name = '';
    for (; i < input.length; i++) {
      if (input[i] === "'") {
        if (input[i + 1] === "'") {
          name += "'";
          i++;
          continue;
        }
        break;
      }
      name += input[i];
    }
    if (i >= input.length) fail();
    sheet = name;
    rest = input.slice(i + 1);
    if (rest === '') return { sheet, startRow: 0, startCol: 0, endRow: undefined, endCol: undefined };
    if (!rest.startsWith('!')) fail();
    rest = rest.slice(1);
  } else {
    const bang = input.lastIndexOf('!');
    if (bang >= 0) {
      sheet = input.slice(0, bang);
      rest = input.slice(bang + 1);
    } else if (!/^[A-Za-z]{0,3}[0-9]*(:[A-Za-z]{0,3}[0-9]*)?$/.test(input) || input === '') {
      // A bare word that is not a cell reference names a whole sheet.
      return { sheet: input, startRow: 0, startCol: 0, endRow: undefined, endCol: undefined };
    }
  }
  if (sheet === '') fail();
  const parts = rest.split(':');
  if (parts.length > 2 || rest === '') fail();
  const a = CELL.exec(parts[0]) ?? fail();
  const b = parts.length === 2 ? (CELL.exec(parts[1]) ?? fail()) : a;
  const [, ac, ar] = a;
  const [, bc, br] = b;
  if ((ac === '' && ar === '') || (bc === '' && br === '')) fail();
  if (parts.length === 1 && (ac === '' || ar === '')) fail();
  const r0 = ar === '' ? 0 : Number(ar) - 1;
  const c0 = ac === '' ? 0 : colIndex(ac);
  const r1 = br === '' ? undefined : Number(br);
  const c1 = bc === '' ? undefined : colIndex(bc) + 1;
  if (r0 < 0 || (r1 !== undefined && r1 < 1)) fail();
  return {
    sheet,
    startRow: Math.min(r0, r1 !== undefined ? r1 - 1 : r0),
    startCol: Math.min(c0, c1 !== undefined ? c1 - 1 : c0),
    endRow: r1 === undefined ? undefined : Math.max(r1, r0 + 1),
    endCol: c1 === undefined ? undefined : Math.max(c1, c0 + 1),
  };
}

export function formatA1(sheet: string, r0: number, c0: number, r1: number, c1: number): string {
  const a = `${colName(c0)}${r0 + 1}`;
  const b = `${colName(c1 - 1)}${r1}`;
  return `${quoteSheet(sheet)}!${a === b ? a : `${a}:${b}`}`;
}
