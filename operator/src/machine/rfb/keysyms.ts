// X11 keysyms (as RFB KeyEvents carry them) to PS/2 scan code set 2, US layout, the only layout
// Oberon's Input module knows. A press sends the make code, a release F0 + code; extended keys
// get the E0 prefix.

interface Key {
  code: number;
  extended?: boolean;
}

const SHIFT_L = 0x12;
const SHIFT_R = 0x59;

/** Unshifted characters on a US keyboard → scan code. */
// biome-ignore format: a keyboard table reads better in rows
const PLAIN: Record<string, number> = {
  a: 0x1c, b: 0x32, c: 0x21, d: 0x23, e: 0x24, f: 0x2b, g: 0x34, h: 0x33, i: 0x43, j: 0x3b,
  k: 0x42, l: 0x4b, m: 0x3a, n: 0x31, o: 0x44, p: 0x4d, q: 0x15, r: 0x2d, s: 0x1b, t: 0x2c,
  u: 0x3c, v: 0x2a, w: 0x1d, x: 0x22, y: 0x35, z: 0x1a,
  '0': 0x45, '1': 0x16, '2': 0x1e, '3': 0x26, '4': 0x25, '5': 0x2e, '6': 0x36, '7': 0x3d, '8': 0x3e, '9': 0x46,
  '`': 0x0e, '-': 0x4e, '=': 0x55, '[': 0x54, ']': 0x5b, '\\': 0x5d, ';': 0x4c, "'": 0x52,
  ',': 0x41, '.': 0x49, '/': 0x4a, ' ': 0x29,
};

/** Shifted characters → the key that gives them with Shift. */
// biome-ignore format: a keyboard table reads better in rows
const SHIFTED: Record<string, string> = {
  '~': '`', '!': '1', '@': '2', '#': '3', $: '4', '%': '5', '^': '6', '&': '7', '*': '8', '(': '9', ')': '0',
  _: '-', '+': '=', '{': '[', '}': ']', '|': '\\', ':': ';', '"': "'", '<': ',', '>': '.', '?': '/',
};

/** Non-character keysyms. */
const SPECIAL: Record<number, Key> = {
  65288: { code: 0x66 }, // BackSpace
  65289: { code: 0x0d }, // Tab
  65293: { code: 0x5a }, // Return
  65307: { code: 0x76 }, // Escape (Oberon: neutralise)
  65535: { code: 0x71, extended: true }, // Delete
  65360: { code: 0x6c, extended: true }, // Home
  65361: { code: 0x6b, extended: true }, // Left
  65362: { code: 0x75, extended: true }, // Up
  65363: { code: 0x74, extended: true }, // Right
  65364: { code: 0x72, extended: true }, // Down
  65365: { code: 0x7d, extended: true }, // Page_Up
  65366: { code: 0x7a, extended: true }, // Page_Down
  65367: { code: 0x69, extended: true }, // End
  65379: { code: 0x70, extended: true }, // Insert
  65421: { code: 0x5a, extended: true }, // KP_Enter
  65439: { code: 0x71 }, // KP_Delete (Oberon: DEL, 7FX)
  65470: { code: 0x05 }, // F1 (Oberon: set the star marker)
  65471: { code: 0x06 }, // F2
  65472: { code: 0x04 }, // F3
  65473: { code: 0x0c }, // F4
  65474: { code: 0x03 }, // F5
  65475: { code: 0x0b }, // F6
  65476: { code: 0x83 }, // F7
  65477: { code: 0x0a }, // F8
  65478: { code: 0x01 }, // F9
  65479: { code: 0x09 }, // F10
  65480: { code: 0x78 }, // F11
  65481: { code: 0x07 }, // F12
  65505: { code: SHIFT_L }, // Shift_L
  65506: { code: SHIFT_R }, // Shift_R
  65507: { code: 0x14 }, // Control_L
  65508: { code: 0x14, extended: true }, // Control_R
  65509: { code: 0x58 }, // Caps_Lock
  65513: { code: 0x11 }, // Alt_L
  65514: { code: 0x11, extended: true }, // Alt_R
};

interface CharKey {
  code: number;
  shift: boolean;
}

function charKey(keysym: number): CharKey | undefined {
  if (keysym < 0x20 || keysym > 0x7e) return undefined;
  const ch = String.fromCharCode(keysym);
  if (ch in PLAIN) return { code: PLAIN[ch], shift: false };
  const lower = ch.toLowerCase();
  if (lower !== ch && lower in PLAIN) return { code: PLAIN[lower], shift: true };
  const base = SHIFTED[ch];
  if (base !== undefined) return { code: PLAIN[base], shift: true };
  return undefined;
}

/**
 * Keeps the Shift state of one keyboard and turns key events into PS/2 byte sequences. When a
 * client sends a character whose Shift state differs from the held keys (e.g. '!' without a
 * Shift event), the make code is wrapped in a Shift press/release so Oberon still reads it right.
 */
export class KeyTranslator {
  private shiftL = false;
  private shiftR = false;

  /** PS/2 bytes for one key event, or undefined for a keysym with no PS/2 key. */
  translate(keysym: number, down: boolean): number[] | undefined {
    const special = SPECIAL[keysym];
    if (special) {
      if (special.code === SHIFT_L && !special.extended) this.shiftL = down;
      if (special.code === SHIFT_R) this.shiftR = down;
      const prefix = special.extended ? [0xe0] : [];
      return down ? [...prefix, special.code] : [...prefix, 0xf0, special.code];
    }
    const key = charKey(keysym);
    if (!key) return undefined;
    if (!down) return [0xf0, key.code];
    const held = this.shiftL || this.shiftR;
    if (key.shift && !held) return [SHIFT_L, key.code, 0xf0, SHIFT_L];
    if (!key.shift && held) {
      const release = [...(this.shiftL ? [0xf0, SHIFT_L] : []), ...(this.shiftR ? [0xf0, SHIFT_R] : [])];
      const press = [...(this.shiftL ? [SHIFT_L] : []), ...(this.shiftR ? [SHIFT_R] : [])];
      return [...release, key.code, ...press];
    }
    return [key.code];
  }
}
