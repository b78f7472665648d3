// Browser key events → X11 keysyms, the words RFB KeyEvents carry; the machine side (our RFB server,
// or the lab's worker) turns them into PS/2 scan codes with rfb/keysyms.ts.

// biome-ignore format: a key table reads better in rows
const NAMED: Record<string, number> = {
  Backspace: 0xff08, Tab: 0xff09, Enter: 0xff0d, Escape: 0xff1b, Delete: 0xffff,
  Home: 0xff50, ArrowLeft: 0xff51, ArrowUp: 0xff52, ArrowRight: 0xff53, ArrowDown: 0xff54,
  PageUp: 0xff55, PageDown: 0xff56, End: 0xff57, Insert: 0xff63,
  F1: 0xffbe, F2: 0xffbf, F3: 0xffc0, F4: 0xffc1, F5: 0xffc2, F6: 0xffc3,
  F7: 0xffc4, F8: 0xffc5, F9: 0xffc6, F10: 0xffc7, F11: 0xffc8, F12: 0xffc9,
  Control: 0xffe3, Alt: 0xffe9, CapsLock: 0xffe5,
};

/** The keysym of a key event, or undefined for keys Oberon has no use for. */
export function keysymOf(key: string, code: string): number | undefined {
  if (key === 'Shift') return code === 'ShiftRight' ? 0xffe2 : 0xffe1;
  if (key.length === 1) {
    const c = key.charCodeAt(0);
    return c >= 0x20 && c <= 0xff ? c : undefined;
  }
  return NAMED[key];
}

/** Browser mouse buttons (e.buttons: 1 left, 2 right, 4 middle) → the RFB mask (1 left, 2 middle, 4 right). */
export function rfbMask(buttons: number): number {
  return (buttons & 1) | ((buttons & 4) >> 1) | ((buttons & 2) << 1);
}
