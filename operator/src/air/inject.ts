// The intruder of the DR test (kube-on-oberon spec §2.6, §8.2 scenario 7): forged assignments sent
// right after the plane's genuine assignment to one node. Only a forgery sent just then is what the
// node holds when it next reports, so only then can a test tell an ignored forgery from an obeyed
// one (the plane's next round restores the truth).
import { FORGERY_KINDS, type Forgery, type ForgeryKind, forge } from './forge.ts';
import { clusterTag, decodeKubeFrame, macValid, ZERO_KEY } from './kubenet.ts';
import { openStation } from './station.ts';
import { LIMITS, TYP, toHex } from './wire.ts';

export { FORGERY_KINDS, type Forgery, type ForgeryKind, forge, forgeAssignment } from './forge.ts';

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
