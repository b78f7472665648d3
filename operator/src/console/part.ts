// What the console server (server.ts) hands each part of a cluster it shows — the Oberon cluster
// of `retrokube up` (kube-part.ts), a sheet cluster (sheets-part.ts) — and what a part gives back:
// its actions, its extra sockets, what a page that just connected is told. The server owns the
// HTTP guard, the pages and their memory budget; a part owns its cluster.
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocketServer } from 'ws';
import type { ConsoleEvent } from './types.ts';

/** One open page (its event socket). */
export interface PageSocket {
  /** The page has more unread bytes than its budget: send it nothing until it catches up. */
  behind(): boolean;
  send(e: ConsoleEvent): void;
}

export interface Pages {
  all(): Iterable<PageSocket>;
  /** To every page that keeps up (snapshots: a page behind gets the next one). */
  broadcast(e: ConsoleEvent): void;
}

/** A POST action: a JSON object in, the reply out; BadRequest → 400, any other error → 409. */
export type Action = (body: Record<string, unknown>) => Promise<unknown>;

/** A socket a part serves itself (after the server's guard passed it), by path. */
export type Upgrade = (
  req: http.IncomingMessage,
  socket: Duplex,
  head: Buffer,
  wss: WebSocketServer,
  refuse: (code: number, why: string) => void,
) => void;

export interface ConsolePart {
  /** POST path → action. */
  actions: Record<string, Action>;
  /** GET path → JSON reply (for scripts and tests; pages use the event socket). */
  reads: Record<string, () => unknown>; // a Promise is awaited
  upgrades: Record<string, Upgrade>;
  /** What a page that just connected is sent first. */
  greet(): ConsoleEvent[];
  close(): Promise<void>;
}
