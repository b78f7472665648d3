// Forged assignments, made from one the plane was just heard sending (kube-on-oberon spec §2.6):
// pure, no sockets, so the injector (inject.ts) and the browser lab's air (console/page) share it.

import { nextCounter } from './freshness.ts';
import { decodeKubeFrame, encodeNodeMessageData, otherClusterTag, ZERO_KEY } from './kubenet.ts';
import { encodeDatagram, LIMITS, TYP, writeSccHeader } from './wire.ts';

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
