// Messages between the browser lab's page and a machine worker (machine-worker.ts).

export type ToLabWorker =
  | { t: 'init'; disk: ArrayBuffer; commands: string }
  | { t: 'power'; on: boolean }
  | { t: 'radio'; channel: number; payload: Uint8Array }
  | { t: 'serial'; text: string }
  | { t: 'command'; text: string }
  | { t: 'key'; keysym: number; down: boolean }
  | { t: 'pointer'; x: number; y: number; mask: number }
  | { t: 'bench'; ms: number };

export type FromLabWorker =
  | { t: 'booted' }
  | { t: 'radio'; channel: number; payload: Uint8Array }
  | { t: 'frame'; words: Uint32Array; width: number; height: number }
  | { t: 'stats'; instructions: number; ms: number; busyMs: number }
  | { t: 'bench'; perSecond: number }
  | { t: 'error'; message: string };
