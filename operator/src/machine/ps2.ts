// Characters to PS/2 scan code set 2 (US layout, as Oberon's Input module assumes).
// A key press is the make code; the release is F0 + code. Shifted characters are wrapped in
// left-Shift (0x12) make/break.

const SHIFT = 0x12;

/** Unshifted characters → scan code. */
const PLAIN: Record<string, number> = {
  a: 0x1c,
  b: 0x32,
  c: 0x21,
  d: 0x23,
  e: 0x24,
  f: 0x2b,
  g: 0x34,
  h: 0x33,
  i: 0x43,
  j: 0x3b,
  k: 0x42,
  l: 0x4b,
  m: 0x3a,
  n: 0x31,
  o: 0x44,
  p: 0x4d,
  q: 0x15,
  r: 0x2d,
  s: 0x1b,
  t: 0x2c,
  u: 0x3c,
  v: 0x2a,
  w: 0x1d,
  x: 0x22,
  y: 0x35,
  z: 0x1a,
  '0': 0x45,
  '1': 0x16,
  '2': 0x1e,
  '3': 0x26,
  '4': 0x25,
  '5': 0x2e,
  '6': 0x36,
  '7': 0x3d,
  '8': 0x3e,
  '9': 0x46,
  '`': 0x0e,
  '-': 0x4e,
  '=': 0x55,
  '[': 0x54,
  ']': 0x5b,
  '\\': 0x5d,
  ';': 0x4c,
  "'": 0x52,
  ',': 0x41,
  '.': 0x49,
  '/': 0x4a,
  ' ': 0x29,
  '\t': 0x0d,
  '\n': 0x5a,
  '\r': 0x5a,
  '\b': 0x66,
  '\x1b': 0x76,
};

/** Shifted characters → the unshifted key that produces them. */
const SHIFTED: Record<string, string> = {
  '~': '`',
  '!': '1',
  '@': '2',
  '#': '3',
  $: '4',
  '%': '5',
  '^': '6',
  '&': '7',
  '*': '8',
  '(': '9',
  ')': '0',
  _: '-',
  '+': '=',
  '{': '[',
  '}': ']',
  '|': '\\',
  ':': ';',
  '"': "'",
  '<': ',',
  '>': '.',
  '?': '/',
};

/** Special keys by name (F1 sets Oberon's star marker; Esc neutralises; Del is keypad Del). */
export const KEYS = {
  F1: [0x05],
  Esc: [0x76],
  Enter: [0x5a],
  Backspace: [0x66],
  Tab: [0x0d],
  Delete: [0x71],
} as const;

/** One key stroke (make then break) for a scan code, optionally with Shift held. */
export function stroke(code: number, shift = false): number[] {
  const press = [code, 0xf0, code];
  return shift ? [SHIFT, ...press, 0xf0, SHIFT] : press;
}

/** The key sequence for one character, or null if it has no key on a US keyboard. */
export function charToPs2(ch: string): number[] | null {
  if (ch in PLAIN) return stroke(PLAIN[ch]);
  const lower = ch.toLowerCase();
  if (ch !== lower && lower in PLAIN && lower.length === 1) return stroke(PLAIN[lower], true);
  if (ch in SHIFTED) return stroke(PLAIN[SHIFTED[ch]], true);
  return null;
}

/** Key sequences for a text, one per character; throws on a character with no key. */
export function textToPs2(text: string): number[][] {
  const out: number[][] = [];
  for (const ch of text) {
    const seq = charToPs2(ch);
    if (seq === null) {
      throw new Error(`cannot type ${JSON.stringify(ch)}: no key for it on a US keyboard (use ASCII)`);
    }
    out.push(seq);
  }
  return out;
}
