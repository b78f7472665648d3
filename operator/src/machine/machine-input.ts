// The machine's input queue: key strokes and mouse states queued by the host and fed to Oberon at
// its pace (a key sequence only into an empty PS/2 FIFO; a mouse state held until Oberon has read
// it LIMITS.mouseMinReads times and for its holdMs of machine time), and the steps of a command
// typed and clicked the way a person does (machine.ts runCommand).

import { LIMITS } from './machine-config.ts';
import { textToPs2 } from './ps2.ts';
import type { FrameSnapshot } from './screen-input.ts';
import { leftmostInk, lowestInkRow, titleBars } from './screen-scan.ts';

export type MouseItem = Extract<InputItem, { kind: 'mouse' }>;

export type InputItem =
  | { kind: 'keys'; bytes: number[] }
  | {
      kind: 'mouse';
      x: number;
      y: number;
      buttons: number;
      /** Keep the current mouse state (a pause between steps). */
      keep: boolean;
      holdMs: number;
      applied: boolean;
      at: number;
      reads: number;
    }
  /** A step that looks at the machine (e.g. the screen) when reached and returns the next items. */
  | { kind: 'action'; run: () => InputItem[] };

export function mouseItem(x: number, y: number, buttons: number, holdMs: number): MouseItem {
  return { kind: 'mouse', x, y, buttons, keep: false, holdMs, applied: false, at: 0, reads: 0 };
}

export type ButtonName = 'left' | 'middle' | 'right';
export const BUTTON_BITS: Record<ButtonName, number> = { right: 1 << 24, middle: 1 << 25, left: 1 << 26 };

export class InputQueue {
  /** Queued key strokes, mouse states and actions, in order. */
  readonly items: InputItem[] = [];
  /** The board's PS/2 FIFO (LIMITS.keyFifoBytes). */
  readonly keyFifo: number[] = [];
  /** The mouse register: position and button bits as Oberon reads them. */
  mouseState = 0;
  /** Input came in since power-on: from then on keyboard and mouse reads depend on it. */
  ever = false;

  private readonly timerMs: () => number;
  /** The screen's size: mouse positions are clamped to it. */
  private readonly width: number;
  private readonly height: number;

  constructor(timerMs: () => number, width: number, height: number) {
    this.timerMs = timerMs;
    this.width = width;
    this.height = height;
  }

  /** Power-on: nothing queued, no key, no button, no input yet. */
  clear(): void {
    this.keyFifo.length = 0;
    this.items.length = 0;
    this.mouseState = 0;
    this.ever = false;
  }

  /** True while queued key strokes or mouse states have not all been consumed by Oberon. */
  get pending(): boolean {
    return this.items.length > 0 || this.keyFifo.length > 0;
  }

  /** Oberon read the mouse register: count it for the held state and maybe move to the next. */
  mouseRead(): void {
    const head = this.items[0];
    if (head !== undefined && head.kind === 'mouse' && head.applied) {
      head.reads++;
      if (head.reads >= LIMITS.mouseMinReads && this.timerMs() - head.at >= head.holdMs) {
        this.items.shift();
        this.pump();
      }
    } else if (head !== undefined) this.pump();
    // Actions run only here, at a mouse poll with the key FIFO drained: Oberon has handled
    // every key and click before them, so the screen shows their effect.
    let next = this.items[0];
    while (next !== undefined && next.kind === 'action' && this.keyFifo.length === 0) {
      this.items.shift();
      this.items.unshift(...next.run());
      this.pump();
      next = this.items[0];
    }
  }

  /** The head is a mouse state Oberon has read often enough: only its hold time is left. */
  holding(): boolean {
    const head = this.items[0];
    return head !== undefined && head.kind === 'mouse' && head.applied && head.reads >= LIMITS.mouseMinReads;
  }

  /** Feed the head of the input queue when the keyboard FIFO is empty. */
  pump(): void {
    while (this.items.length > 0 && this.keyFifo.length === 0) {
      const head = this.items[0];
      if (head.kind === 'keys') {
        this.items.shift();
        for (const b of head.bytes) this.keyFifo.push(b);
        return;
      }
      if (head.kind === 'action') return;
      if (!head.applied) {
        head.applied = true;
        head.at = this.timerMs();
        head.reads = 0;
        if (!head.keep) {
          this.mouseState = (this.mouseState & ~0xffffff) | (head.y << 12) | head.x;
          this.mouseState = (this.mouseState & ~0x07000000) | head.buttons;
        }
      }
      return;
    }
  }

  /** Queue an item (throws when LIMITS.inputQueueItems wait: Oberon is not consuming input). */
  enqueue(item: InputItem): void {
    if (this.items.length >= LIMITS.inputQueueItems) {
      throw new Error(
        `input queue full (${LIMITS.inputQueueItems} items): the machine is not consuming input`,
      );
    }
    this.ever = true; // from now on keyboard and mouse reads depend on what came in
    this.items.push(item);
    this.pump();
  }

  /** Queue a mouse state (clamped to the screen); coalesce: replace a not yet applied one with the same buttons. */
  queueMouse(x: number, y: number, buttons: number, holdMs: number, coalesce: boolean): void {
    const cx = Math.min(Math.max(Math.round(x), 0), this.width - 1);
    const cy = Math.min(Math.max(Math.round(y), 0), this.height - 1);
    const last = this.items[this.items.length - 1];
    if (
      coalesce &&
      last !== undefined &&
      last.kind === 'mouse' &&
      !last.applied &&
      last.buttons === buttons
    ) {
      last.x = cx;
      last.y = cy;
      return;
    }
    this.enqueue(mouseItem(cx, cy, buttons, holdMs));
  }
}

/** What a command's steps read of the machine when the queue reaches them. */
export interface CommandScreen {
  readonly width: number;
  readonly height: number;
  snapshot(): FrameSnapshot;
  screenToOberon(yFromTop: number): number;
}

/**
 * The queue item of machine.ts runCommand: when reached, it finds the command line on the screen
 * and returns the clicks and key strokes that type the command there and middle-click it.
 */
export function commandAction(command: string, screen: CommandScreen): InputItem {
  if (/[\r\n]/.test(command)) throw new Error('runCommand takes one line; call it once per command');
  const keys = textToPs2(`\r${command}`); // validate now, not when the queue reaches it
  return {
    kind: 'action',
    run: () => {
      const area = commandArea(screen);
      const yBelow = Math.min(area.lowest + 8, screen.height - 2);
      // Below the last line and far right: Oberon puts the caret at the end of the last line.
      const x = screen.width - 12;
      return [
        mouseItem(x, screen.screenToOberon(yBelow), 0, 0),
        mouseItem(x, screen.screenToOberon(yBelow), BUTTON_BITS.left, LIMITS.clickHoldMs),
        mouseItem(x, screen.screenToOberon(yBelow), 0, LIMITS.clickHoldMs),
        // The pointer is drawn into the framebuffer: park it in the user track before scanning.
        mouseItem(8, screen.height >> 1, 0, 0),
        ...keys.map((bytes): InputItem => ({ kind: 'keys', bytes })),
        { ...mouseItem(0, 0, 0, LIMITS.clickHoldMs), keep: true },
        {
          kind: 'action',
          run: () => {
            const a = commandArea(screen);
            const snap = screen.snapshot();
            const x = leftmostInk(snap, a.x0, screen.width, a.lowest - 10, a.lowest - 1);
            const px = (x < 0 ? a.x0 : x) + 2;
            const py = screen.screenToOberon(a.lowest - 6);
            return [
              mouseItem(px, py, 0, 0),
              mouseItem(px, py, BUTTON_BITS.middle, LIMITS.clickHoldMs),
              mouseItem(px, py, 0, LIMITS.clickHoldMs),
            ];
          },
        },
      ];
    },
  };
}

/** The text area of the lowest viewer in the system track, and its lowest inked row. */
function commandArea(screen: CommandScreen): { x0: number; top: number; lowest: number } {
  const snap = screen.snapshot();
  const trackX = Math.floor((screen.width * 5) / 8); // Oberon's default system track starts at 5/8
  const x0 = trackX + 20; // right of the viewer's left border and scroll bar
  const bars = titleBars(snap, x0, screen.width - 8);
  const top = bars.length > 0 ? bars[bars.length - 1] + 15 : 0;
  const lowest = lowestInkRow(snap, x0, screen.width - 8, top, screen.height);
  return { x0, top, lowest: lowest < 0 ? top + 12 : lowest };
}
