// Messages between a MachineRunner (main thread) and its worker (worker.ts). Plain data only.

import type { MessagePort } from 'node:worker_threads';
import type { BootImage } from './boot-image.ts';
import type { ButtonName, ClockMode } from './machine.ts';
import type { FrameSnapshot, MouseButtons } from './screen-input.ts';

export interface WorkerInit {
  diskPath: string;
  clock: ClockMode;
  /** Deterministic clock only: run as fast as the host can instead of pacing to the wall clock. */
  fast: boolean;
  memoryMiB?: number;
  width?: number;
  height?: number;
  commands?: string;
  switches?: number;
  air?: { host: string; port: number; localPort?: number };
  /** Push framebuffer snapshots to the main thread when the screen changes. */
  frames: boolean;
  jit: boolean;
  boot: 'native' | 'assembled';
  /** Boot images this process holds (boot-image.ts); absent: boot for real, record none. */
  bootImages?: BootImage[];
  /** Post every frame Oberon reads from the radio ('radio'): a message per frame, for tests. */
  radioTrace?: boolean;
}

export type ToWorker =
  | { t: 'typeText'; text: string }
  | { t: 'ps2'; bytes: number[] }
  | { t: 'mouse'; x: number; y: number; buttons: MouseButtons }
  | { t: 'click'; x: number; y: number; button: ButtonName; holdMs?: number }
  | { t: 'move'; x: number; y: number; buttons: ButtonName[] }
  | { t: 'runCommand'; command: string }
  | { t: 'pause'; ms: number }
  | { t: 'serialIn'; data: string }
  | { t: 'clipboard'; text: string }
  | { t: 'frames'; on: boolean }
  | { t: 'query'; id: number }
  | { t: 'snapshot'; id: number }
  | { t: 'powerCycle' }
  | { t: 'reset' }
  | { t: 'stop'; id: number };

export interface MachineState {
  booted: boolean;
  idle: boolean;
  inputPending: boolean;
  instructions: number;
  timerMs: number;
  leds: number;
  diskWrites: number;
  radio: { sent: number; received: number; dropped: number };
  air: {
    sent: number;
    received: number;
    sendErrors: number;
    ignored: number;
    resolves: number;
    localPort: number;
    /** Since when (ms since the epoch) the relay's name has not resolved; null when it resolves. */
    unresolvedSince: number | null;
    resolveError: string | null;
  } | null;
  /** Host CPU time used by the worker thread so far (ms). */
  cpuMs: number;
  voidFetches: number;
  /** This boot started from a boot image. */
  restored: boolean;
}

export type FromWorker =
  | { t: 'ready'; airPort: number | null }
  | { t: 'serial'; bytes: Uint8Array }
  | { t: 'leds'; value: number }
  | { t: 'clipboard'; text: string }
  | { t: 'booted' }
  /** A frame Oberon read from the radio (WorkerInit.radioTrace): the wall time, channel and payload. */
  | { t: 'radio'; at: number; channel: number; payload: Uint8Array }
  | { t: 'bootImage'; image: BootImage }
  | { t: 'frame'; snap: FrameSnapshot }
  | { t: 'state'; id: number; state: MachineState }
  | { t: 'snapshot'; id: number; snap: FrameSnapshot }
  | { t: 'stopped'; id: number }
  | { t: 'error'; message: string };

/**
 * A machine for a shared thread (worker.ts): its init without boot images, the images the thread
 * does not hold yet, and which of the thread's images it may start from (null: none, boot for real).
 */
export interface HostMessage {
  t: 'host';
  init: WorkerInit;
  port: MessagePort;
  images: BootImage[];
  imageIds: string[] | null;
}

/** A boot image's identity: its configuration and the blocks it read (what decides a match). */
export const imageId = (b: BootImage): string => `${b.key}:${b.readsHash}`;
