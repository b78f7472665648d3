// The two colours of Oberon's 1-bit screen, as the reference emulator (pdewacht/oberon-risc-emu)
// shows them: one place for every viewer (PNG snapshots, the RFB server, the browser lab's canvas).
export interface Palette {
  /** RGB of a set bit (Oberon's "white", the foreground). */
  readonly foreground: number;
  /** RGB of a clear bit (Oberon's "black", the background). */
  readonly background: number;
}

/** The reference emulator's colours: 1 → #FDF6E3, 0 → #657B83. */
export const OBERON_PALETTE: Palette = { foreground: 0xfdf6e3, background: 0x657b83 };
export const BLACK_WHITE_PALETTE: Palette = { foreground: 0xffffff, background: 0x000000 };
