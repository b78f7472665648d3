// The contract between a running RISC5 machine and whatever shows its screen or feeds it input
// (PNG snapshots, the RFB/VNC server, the disk builder, the web console). The machine side
// implements MachineScreen and MachineInput; viewers depend only on these two interfaces.

/** A 1-bpp framebuffer as Oberon lays it out in RAM. */
export interface FrameSnapshot {
  readonly width: number; // pixels, a multiple of 32
  readonly height: number; // pixels
  /**
   * width/32 words per line; line 0 is the BOTTOM screen line (Oberon's y grows upwards);
   * bit 0 of a word is the leftmost pixel of its 32; a set bit is foreground (white).
   */
  readonly words: Uint32Array;
  /** Increases whenever a framebuffer word is written, so viewers can skip unchanged frames. */
  readonly version: number;
}

export interface MachineScreen {
  snapshot(): FrameSnapshot;
}

/** Oberon's mouse buttons as Input.Mouse reports them: {2} left, {1} middle, {0} right. */
export interface MouseButtons {
  readonly left: boolean;
  readonly middle: boolean;
  readonly right: boolean;
}

export interface MachineInput {
  /** One whole key sequence in PS/2 scan code set 2 (make, or F0+code for a break; E0 prefixes kept). */
  ps2(bytes: readonly number[]): void;
  /** Absolute position in Oberon coordinates (origin bottom-left), clamped by the machine. */
  mouse(x: number, y: number, buttons: MouseButtons): void;
}
