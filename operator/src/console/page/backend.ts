// The page's one interface to a cluster: the console server of `retrokube up` or `retrokube sheets
// up` (server-backend.ts) or the browser lab's own machines and air (lab-backend.ts). Everything
// above it is shared.
import type { ClusterView, FrameRecord } from '../../air/view.ts';
import type {
  AirOp,
  ConsoleState,
  Done,
  InjectReport,
  IntruderKind,
  SheetsAction,
  SheetsTabs,
} from '../types.ts';

export interface BackendEvents {
  state(s: ConsoleState): void;
  view(v: ClusterView): void;
  /** Frames heard, judged; `dropped` counts frames the page was too slow to be sent. */
  records(r: FrameRecord[], dropped: number): void;
  /** The link to the cluster went down (with why) or came back. */
  link(up: boolean, why: string): void;
  notice(text: string): void;
  sheets(t: SheetsTabs): void;
}

/** A machine's live screen on a canvas, and the input going back to it. */
export interface ScreenLink {
  /** X11 keysym, press or release. */
  key(keysym: number, down: boolean): void;
  /** Screen position from the top-left, RFB button mask (1 left, 2 middle, 4 right). */
  pointer(x: number, y: number, mask: number): void;
  close(): void;
}

export interface Backend {
  readonly kind: 'console' | 'lab';
  connect(ev: BackendEvents): void;
  power(name: string, on: boolean): Promise<Done>;
  air(op: AirOp): Promise<Done>;
  inject(kind: IntruderKind): Promise<InjectReport>;
  /** Types a command into the plane's System.Tool and middle-clicks it. */
  command(text: string): Promise<Done>;
  screen(name: string, canvas: HTMLCanvasElement, status: (text: string) => void): ScreenLink;
  /** Steers the sheet cluster alongside or alone (absent in the lab, which has none). */
  sheets?(a: SheetsAction): Promise<Done>;
}
