// A federation member: one apiserver reached over the signed contract (spec §1, §6). Errors come
// back as BridgeError with the member's name and a hint a person can act on.
import { HttpStatusError, SheetsClient } from '../ctl/client.ts';
import type { Row } from '../store/types.ts';
import type { MemberView } from './plan.ts';

export interface MemberConfig {
  name: string; // "local", "peer", or a SheetFederation member name
  url: string;
  token: string;
  key?: string; // HMAC signing key of THIS member (each member has its own)
  timeoutMs?: number;
  /** The URL came from a resource's spec (the operator): see ClientConfig.untrusted. */
  untrusted?: boolean;
}

export class BridgeError extends Error {
  override name = 'BridgeError';
  readonly member: string;
  readonly status: number | undefined; // HTTP status, undefined when unreachable
  constructor(member: string, message: string, status?: number) {
    super(message);
    this.member = member;
    this.status = status;
  }
}

/** The reference's wording (spec §7.1), plus which member failed. */
function explain(member: string, e: unknown, what = ''): BridgeError {
  if (e instanceof BridgeError) return e;
  if (e instanceof HttpStatusError) {
    const detail =
      e.status === 401
        ? 'signature/auth rejected — check tokens and --*-signing-key'
        : e.message.replace(/^HTTP \d+: /, '');
    return new BridgeError(
      member,
      `request failed: HTTP ${e.status} — ${detail} (member ${member})`,
      e.status,
    );
  }
  const cause = (e as { cause?: { code?: string; message?: string; name?: string } }).cause;
  const reason = cause?.code ?? cause?.message ?? (e as Error).message ?? String(e);
  const timedOut = cause?.name === 'TimeoutError' || (e as { name?: string }).name === 'TimeoutError';
  const why = WHY[reason] ?? (timedOut ? WHY.timeout : undefined);
  return new BridgeError(
    member,
    `cannot reach a cluster: ${reason} (member ${member})${what ? ` ${what}` : ''}${why ? `: ${why}` : ''}`,
  );
}

/** Socket-level failures in words (undici's codes alone mean little to a person). */
const WHY: Record<string, string> = {
  ECONNREFUSED: 'nothing listens there; is its apiserver running, and is the URL right?',
  ENOTFOUND: 'the host name does not resolve',
  ECONNRESET: 'the apiserver reset the connection',
  UND_ERR_SOCKET:
    'the apiserver closed the connection mid-answer (a reference apiserver does this when it crashes on concurrent requests)',
  timeout: 'no answer in time',
};

export class Member {
  readonly name: string;
  readonly url: string;
  private readonly client: SheetsClient;
  constructor(cfg: MemberConfig) {
    this.name = cfg.name;
    this.url = cfg.url;
    this.client = new SheetsClient({
      url: cfg.url,
      token: cfg.token,
      key: cfg.key,
      timeoutMs: cfg.timeoutMs,
      untrusted: cfg.untrusted,
    });
  }

  async get(kind: 'deployments' | 'pods' | 'nodes'): Promise<Row[]> {
    try {
      return (await this.client.get(kind)) as Row[];
    } catch (e) {
      throw explain(this.name, e, `reading ${kind} from ${this.url}`);
    }
  }

  /**
   * The member's three tabs, read one after the other: the reference apiserver saves its workbook
   * without a lock and corrupts it under concurrent requests (its defect), so a bridge that may
   * face one never sends it two at once. Three small GETs in a row cost little.
   */
  async observe(): Promise<MemberView> {
    const deployments = await this.get('deployments');
    const pods = await this.get('pods');
    const nodes = await this.get('nodes');
    return { name: this.name, deployments, pods, nodes };
  }

  private async post(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    // The same write twice in one second is fine: each signed body carries its own nonce (signing.ts).
    try {
      return (await this.client.post(body)) as Record<string, unknown>;
    } catch (e) {
      throw explain(this.name, e);
    }
  }

  /** Upsert deployments; any row the apiserver refuses is an error naming it. */
  async apply(rows: Row[]): Promise<string[]> {
    if (rows.length === 0) return [];
    const reply = await this.post({ action: 'apply', deployments: rows });
    const results = Array.isArray(reply.applied) ? reply.applied.map(String) : [];
    const bad = results
      .map((r, i) => ({ r, name: String(rows[i]?.name ?? '?') }))
      .filter((x) => x.r.startsWith('invalid'));
    if (bad.length)
      throw new BridgeError(
        this.name,
        `member ${this.name} refused ${bad.map((b) => `${b.name}: ${b.r}`).join('; ')}`,
      );
    return results;
  }

  /** Delete a deployment; "not found" is success (the write is idempotent). */
  async delete(name: string): Promise<string> {
    const reply = await this.post({ action: 'delete', name });
    return String(reply.result ?? '');
  }
}
