// What `retrokube up` is asked to do: shared by the single-cluster run (up.ts) and the fleet
// (fleet.ts), which up.ts starts, so it lives apart from both.
export interface UpOptions {
  file?: string;
  dir: string;
  /** First VNC port; 0 = any free ports; null = no VNC. */
  vncBase: number | null;
  /** Redraw the live table (else progress and summary lines only). */
  view: boolean;
  /** Run the sample Sheeternetes cluster too (only with no FILE). */
  sheets: boolean;
  /** Machine names (or "all") to run as qemu-system-risc5, and the binary. */
  qemu?: { binary: string; machines: string[] };
  /**
   * human (default): the console shows the view only, JSON log lines go to up.log in the state
   * folder (its path printed); json: the log lines go to stderr.
   */
  logFormat?: 'human' | 'json';
  /** The sample Sheeternetes nodes offer the process runtime (named opt-in, `--allow-process`). */
  allowProcess?: boolean;
  /** Port of the web console on 127.0.0.1 (0 = any free port); null = no console. */
  consolePort?: number | null;
  out?: (s: string) => void;
}
