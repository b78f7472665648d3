// Types one command at the end of the System.Tool text and middle-clicks it, the way a person
// runs an Oberon command: click right of and below the last line (the caret goes to the end of
// the text), type a new line, then middle-click the first word of the lowest line of text.
import type { Machine } from '../machine.ts';
import type { FrameSnapshot } from '../screen-input.ts';

export const LIMITS = {
  settleInstructions: 500_000_000, // typing one line and redrawing takes a few million
  lineHeight: 12, // rows of one line of Oberon10.Scn.Fnt, the System.Tool font
  trackMargin: 18, // pixels from the system track's left edge to its text (border, scroll bar)
} as const;

function ink(snap: FrameSnapshot, x: number, yFromTop: number): boolean {
  const line = snap.height - 1 - yFromTop;
  return ((snap.words[line * (snap.width >>> 5) + (x >>> 5)] >>> (x & 31)) & 1) === 1;
}

function settle(m: Machine, what: string): void {
  if (!m.runUntilIdle(LIMITS.settleInstructions)) throw new Error(`Oberon did not settle after ${what}`);
}

/** Runs `command` by typing and middle-clicking it in the System.Tool viewer (system track). */
export function typeCommand(m: Machine, command: string, opts: { settle?: boolean } = {}): void {
  const trackX = Math.floor((m.width * 5) / 8); // Oberon's system track: the right 3/8
  const park = () => m.moveMouse(8, m.height >> 1); // the pointer is drawn into the framebuffer
  park();
  m.click(m.width - 12, 4, 'left'); // below and right of everything: caret at the end of the text
  m.typeText(`\r${command}`);
  park();
  settle(m, `typing ${command}`);
  const snap = m.snapshot();
  const x0 = trackX + LIMITS.trackMargin;
  let lowest = -1;
  for (let y = snap.height - 1; y > 0 && lowest < 0; y--) {
    for (let x = x0; x < snap.width - 4; x++) {
      if (ink(snap, x, y)) {
        lowest = y;
        break;
      }
    }
  }
  if (lowest < 0) throw new Error('no text in the system track to click');
  let left = -1;
  for (let x = x0; x < snap.width - 4 && left < 0; x++) {
    for (let y = lowest - LIMITS.lineHeight + 2; y <= lowest; y++) {
      if (ink(snap, x, y)) {
        left = x;
        break;
      }
    }
  }
  const cx = left + 2;
  const cy = m.screenToOberon(lowest - 6);
  m.click(cx, cy, 'middle');
  park();
  if (opts.settle !== false) settle(m, command);
}
