// The intruder of the DR test (kube-on-oberon spec §2.6, §8.2 scenario 7): forged assignments sent
// right after the plane's genuine assignment to one node. Only a forgery sent just then is what the
// node holds when it next reports, so only then can a test tell an ignored forgery from an obeyed
// one (the plane's next round restores the truth).
import { nextCounter } from './freshness.ts';
import {
  clusterTag,
  decodeKubeFrame,
  encodeNodeMessageData,
  macValid,
  otherClusterTag,
  ZERO_KEY,
} from './kubenet.ts';
import { openStation } from './station.ts';
import { encodeDatagram, LIMITS, TYP, toHex, writeSccHeader } from './wire.ts';

export const INJECT_LIMITS = {
  /** The reference injector gives up after 30 s without enough assignments. */
  TIMEOUT_MS: 30_000,
  /** It says hello every 4 s (a little more often than machines, so the relay never forgets it). */
  HELLO_INTERVAL_MS: 4000,
  /** Forged counter = heard plane counter + 2 by default: fresh, and ahead of the plane's next. */
  AHEAD: 2,
  /** Genuine assignments remembered as replay material. */
  RECORDED: 64,
} as const;

export const FORGERY_KINDS = ['other-cluster', 'zero-key', 'wrong-key', 'replay', 'signed'] as const;
export type ForgeryKind = (typeof FORGERY_KINDS)[number];

/** What a forgery is made from: the genuine assignment just heard, and the cluster's secrets. */
export interface ForgeContext {
  tag: number;
  key: Uint8Array;
  /** Key of a "wrong key" forgery; default: the real key with every byte XOR 0xA5. */
  wrongKey?: Uint8Array;
  /** Ids the forged assignment lists; [] means "run nothing". */
  ids: readonly number[];
  ahead: number;
  /** Earlier genuine assignments of the node, oldest first (replay material). */
  recorded: readonly Uint8Array[];
}

export interface Forgery {
  kind: ForgeryKind | 'raw';
  datagram: Uint8Array;
  /** Why this forgery may not prove anything (e.g. a replay whose ids equal the current ones). */
  note?: string;
}

const sameIds = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Builds a freshly signed assignment for the heard frame's node: channel byte and SCC header copied
 * from the heard frame, `len` = 14 + ids, data padded to 24, counter = heard + ahead.
 */
export function forgeAssignment(
  heard: Uint8Array,
  tag: number,
  key: Uint8Array,
  ids: readonly number[],
  ahead: number,
): Uint8Array {
  const f = decodeKubeFrame(heard);
  if (!f?.kube.ok || f.kube.msg.typ !== TYP.ASSIGN)
    throw new Error('forgeries are made from a heard assignment');
  let counter = f.kube.msg.counter;
  for (let i = 0; i < ahead; i++) counter = nextCounter(counter);
  const data = encodeNodeMessageData(TYP.ASSIGN, { cluster: tag, node: f.kube.msg.node, ids, counter }, key);
  const payload = new Uint8Array(LIMITS.FRAME_BYTES);
  payload.set(heard.subarray(1, 1 + LIMITS.SCC_HEADER_BYTES));
  writeSccHeader(payload, { ...f.header, len: data.length });
  payload.set(data, LIMITS.SCC_HEADER_BYTES);
  return encodeDatagram(f.channel, payload);
}

/** The forgeries of one round, in the order asked. Pure. */
export function forge(kinds: readonly ForgeryKind[], heard: Uint8Array, ctx: ForgeContext): Forgery[] {
  const out: Forgery[] = [];
  const f = decodeKubeFrame(heard);
  if (!f?.kube.ok || f.kube.msg.typ !== TYP.ASSIGN)
    throw new Error('forgeries are made from a heard assignment');
  const current = f.kube.msg.ids;
  for (const kind of kinds) {
    switch (kind) {
      case 'other-cluster':
        out.push({
          kind,
          datagram: forgeAssignment(heard, otherClusterTag(ctx.tag), ctx.key, ctx.ids, ctx.ahead),
        });
        break;
      case 'zero-key':
        out.push({
          kind,
          datagram: forgeAssignment(heard, ctx.tag, ZERO_KEY, ctx.ids, ctx.ahead),
          note: ctx.key.every((b) => b === 0)
            ? 'the cluster key is all zero, so this frame is genuine'
            : undefined,
        });
        break;
      case 'wrong-key': {
        const wrong = ctx.wrongKey ?? ctx.key.map((b) => b ^ 0xa5);
        out.push({ kind, datagram: forgeAssignment(heard, ctx.tag, wrong, ctx.ids, ctx.ahead) });
        break;
      }
      case 'signed':
        out.push({ kind, datagram: forgeAssignment(heard, ctx.tag, ctx.key, ctx.ids, ctx.ahead) });
        break;
      case 'replay': {
        const differing = ctx.recorded.find((r) => {
          const g = decodeKubeFrame(r);
          return g?.kube.ok && g.kube.msg.typ === TYP.ASSIGN && !sameIds(g.kube.msg.ids, current);
        });
        const pick = differing ?? ctx.recorded[0];
        if (!pick) {
          out.push({ kind, datagram: heard, note: 'nothing recorded yet: replaying the frame just heard' });
        } else {
          out.push({
            kind,
            datagram: pick,
            note: differing
              ? undefined
              : 'no recorded assignment lists other ids: this replay cannot show obedience',
          });
        }
        break;
      }
    }
  }
  return out;
}

export interface InjectOptions {
  host: string;
  port?: number;
  /** The node whose assignments trigger the forgeries. */
  node: string;
  cluster?: string;
  key?: Uint8Array;
  wrongKey?: Uint8Array;
  forgeries: readonly ForgeryKind[];
  /** Verbatim 33-byte frames to send as well (recorded genuine frames to replay). */
  raw?: readonly Uint8Array[];
  ids?: readonly number[];
  ahead?: number;
  /** Inject after this many genuine assignments to the node. Default 1. */
  rounds?: number;
  /** Genuine assignments to only record before injecting starts. Default 0. */
  skip?: number;
  timeoutMs?: number;
  /** Told once when nothing at all is heard for a few seconds (see openStation). */
  onSilence?: (silenceMs: number) => void;
  onInject?: (e: { round: number; forgery: Forgery; raw: string }) => void;
}

export interface InjectResult {
  assignmentsHeard: number;
  rounds: number;
  injected: { round: number; kind: Forgery['kind']; raw: string; note?: string }[];
  timedOut: boolean;
}

/** Joins the air, waits for the plane's assignments to `node`, and sends the forgeries after each. */
export async function runInjector(opts: InjectOptions): Promise<InjectResult> {
  const tag = clusterTag(opts.cluster ?? 'kube');
  const key = opts.key ?? ZERO_KEY;
  const rounds = opts.rounds ?? 1;
  const skip = opts.skip ?? 0;
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('rounds must be a whole number ≥ 1');
  if (opts.forgeries.length === 0 && !opts.raw?.length) {
    throw new Error(`name at least one forgery (${FORGERY_KINDS.join(', ')}) or a raw frame`);
  }
  for (const r of opts.raw ?? []) {
    if (r.length !== LIMITS.DATAGRAM_BYTES)
      throw new Error(`a raw frame must be ${LIMITS.DATAGRAM_BYTES} bytes, got ${r.length}`);
  }
  const result: InjectResult = { assignmentsHeard: 0, rounds: 0, injected: [], timedOut: false };
  const recorded: Uint8Array[] = [];
  const sends: Promise<void>[] = [];
  let finish: () => void = () => {};
  const done = new Promise<void>((r) => {
    finish = r;
  });
  const station = await openStation({
    host: opts.host,
    port: opts.port,
    helloIntervalMs: INJECT_LIMITS.HELLO_INTERVAL_MS,
    onSilence: opts.onSilence,
    onDatagram: (msg) => {
      if (result.rounds >= rounds) return;
      const heard = new Uint8Array(msg);
      const f = decodeKubeFrame(heard);
      if (!f?.kube.ok || f.kube.msg.typ !== TYP.ASSIGN) return;
      if (f.kube.msg.cluster !== tag || f.kube.msg.node !== opts.node || !macValid(key, f.kube)) return;
      result.assignmentsHeard++;
      if (result.assignmentsHeard > skip) {
        result.rounds++;
        const round = result.rounds;
        const list: Forgery[] = [
          ...forge(opts.forgeries, heard, {
            tag,
            key,
            wrongKey: opts.wrongKey,
            ids: opts.ids ?? [],
            ahead: opts.ahead ?? INJECT_LIMITS.AHEAD,
            recorded,
          }),
          ...(opts.raw ?? []).map((datagram) => ({ kind: 'raw' as const, datagram })),
        ];
        for (const forgery of list) {
          sends.push(station.send(forgery.datagram));
          const raw = toHex(forgery.datagram);
          result.injected.push({
            round,
            kind: forgery.kind,
            raw,
            ...(forgery.note ? { note: forgery.note } : {}),
          });
          opts.onInject?.({ round, forgery, raw });
        }
        if (result.rounds >= rounds) finish();
      }
      recorded.push(heard);
      if (recorded.length > INJECT_LIMITS.RECORDED) recorded.shift();
    },
  });
  const timer = setTimeout(() => {
    result.timedOut = true;
    finish();
  }, opts.timeoutMs ?? INJECT_LIMITS.TIMEOUT_MS);
  await done;
  clearTimeout(timer);
  await Promise.all(sends);
  await station.close();
  return result;
}
