// A client of the apiserver contract (spec §1), the same wire format the reference clients use.
// Every POST is signed (spec §6) when a signing key is set.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type Answer, AnswerTooLarge, type Exchange, exchange } from '../../util/http-exchange.ts';
import { signRequest, withNonce } from '../signing.ts';

export const LIMITS = {
  timeoutMs: 30_000, // the reference clients' curl/urllib timeout
  bodyBytes: 256 * 1024 * 1024, // an answer bigger than this is not an apiserver's (100,000 pods are ~40 MiB)
  untrustedBodyBytes: 32 * 1024 * 1024, // an operator reading a member: a reconcile must stay small
} as const;

import { DEFAULT_TOKEN } from '../default-token.ts';

export { DEFAULT_TOKEN };

export interface ClientConfig {
  url: string;
  token: string;
  key?: string;
  timeoutMs?: number;
  /**
   * The URL came from data another party controls (a federation member's `url` the operator reads):
   * no redirects followed, answers bounded to LIMITS.untrustedBodyBytes, and no answer text in
   * errors (they end up in a resource's status, which others read).
   */
  untrusted?: boolean;
}

export class HttpStatusError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, body: unknown, quiet = false) {
    const detail = quiet
      ? 'the answer is not shown (an untrusted endpoint)'
      : body && typeof body === 'object' && 'error' in body
        ? String((body as { error: unknown }).error)
        : String(body).slice(0, 200);
    const hint = status === 401 ? ' (check --token, and --key if the apiserver requires signing)' : '';
    super(`HTTP ${status}: ${detail}${hint}`);
    this.status = status;
    this.body = body;
  }
}

export class SheetsClient {
  readonly cfg: ClientConfig;
  constructor(cfg: ClientConfig) {
    this.cfg = cfg;
  }

  /** GET ?token=&kind= → items. Works with Apps Script style URLs that already carry a `?`. */
  async get(kind: string): Promise<Record<string, unknown>[]> {
    const q = new URLSearchParams({ token: this.cfg.token, kind });
    const sep = this.cfg.url.includes('?') ? '&' : '?';
    const r = await this.exchange(`${this.cfg.url}${sep}${q}`, { method: 'GET' });
    const body = parseJson(r);
    if (!ok(r)) throw new HttpStatusError(r.status, body, this.cfg.untrusted);
    const items = (body as { items?: unknown }).items;
    if (!Array.isArray(items))
      throw new Error(
        `the apiserver answered without an items list${this.cfg.untrusted ? '' : `: ${JSON.stringify(body).slice(0, 200)}`}`,
      );
    return items as Record<string, unknown>[];
  }

  /** POST a JSON body (the token is added), signed when a key is set. */
  async post(body: Record<string, unknown>): Promise<unknown> {
    // Signed bodies carry a nonce: two identical writes in one second are two requests, not a replay.
    const full = { token: this.cfg.token, ...body };
    const raw = JSON.stringify(this.cfg.key ? withNonce(full) : full);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.cfg.key) Object.assign(headers, signRequest(this.cfg.key, raw));
    const r = await this.exchange(this.cfg.url, { method: 'POST', body: raw, headers });
    const reply = parseJson(r);
    if (!ok(r)) throw new HttpStatusError(r.status, reply, this.cfg.untrusted);
    return reply;
  }

  /** The timeout covers the whole exchange, body included; an untrusted URL's redirects are refused. */
  private async exchange(url: string, x: Pick<Exchange, 'method' | 'body' | 'headers'>): Promise<Answer> {
    const r = await exchange(url, {
      ...x,
      timeoutMs: this.cfg.timeoutMs ?? LIMITS.timeoutMs,
      maxBytes: this.cfg.untrusted ? LIMITS.untrustedBodyBytes : LIMITS.bodyBytes,
      followRedirects: !this.cfg.untrusted,
    }).catch((e: unknown) => {
      if (e instanceof AnswerTooLarge) throw new Error(`${e.message} (is this an apiserver?)`);
      throw unreachable(this.cfg.url, e);
    });
    if (r.status >= 300 && r.status < 400)
      throw new HttpStatusError(r.status, 'a redirect, not followed: give the final URL');
    return r;
  }
}

const ok = (r: Answer): boolean => r.status >= 200 && r.status < 300;

function parseJson(r: Answer): unknown {
  try {
    return JSON.parse(r.text);
  } catch {
    return r.text;
  }
}

/**
 * Say which apiserver (its URL without the token, which travels in the query) did not answer, why,
 * and what to check. `e` is a connection error (its code: ECONNREFUSED, ...), the timeout (named
 * TimeoutError), or an error with the reason in its cause.
 */
export function unreachable(url: string, e: unknown): Error {
  const err = e as {
    name?: string;
    code?: string;
    message?: string;
    cause?: { code?: string; message?: string };
  };
  const why =
    err.name === 'TimeoutError'
      ? 'no answer in time'
      : (err.cause?.code ?? err.code ?? err.cause?.message ?? err.message ?? String(e));
  // The cause stays (code ECONNREFUSED, ECONNRESET, ...) for callers that word it their way.
  return new Error(
    `the apiserver at ${url} is unreachable (${why}): check that it runs (a running "retrokube up" shows its address in "retrokube status"; "retrokube sheets serve" starts one) and that --server, WEBAPP_URL or .skctl.env name it`,
    { cause: err.cause ?? e },
  );
}

/** Reads `.skctl.env` (KEY=value lines, # comments, optional quotes) if the file exists. */
export function readEnvFile(file: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return {};
  }
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m || line.trim().startsWith('#')) continue;
    out[m[1]] = m[2].replace(/^(['"])(.*)\1$/, '$2');
  }
  return out;
}

/** Flags win over the environment, which wins over `.skctl.env` in the current directory. */
export function resolveConfig(
  flags: { server?: string; token?: string; key?: string },
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
  /** The apiserver of a running `retrokube up`, if one runs (its state folder says so). */
  upServer: () => string | undefined = () => undefined,
): ClientConfig {
  const file = readEnvFile(path.join(cwd, '.skctl.env'));
  const url = flags.server ?? env.WEBAPP_URL ?? file.WEBAPP_URL ?? upServer();
  if (!url)
    throw new Error(
      'no apiserver URL: no running "retrokube up" with a Sheeternetes cluster was found; pass --server http://HOST:8787 or set WEBAPP_URL (or a .skctl.env file)',
    );
  if (!/^https?:\/\//.test(url))
    throw new Error(`--server ${JSON.stringify(url)} must start with http:// or https://`);
  return {
    url,
    token: flags.token ?? env.TOKEN ?? file.TOKEN ?? DEFAULT_TOKEN,
    key: flags.key ?? env.SIGNING_KEY ?? file.SIGNING_KEY ?? undefined,
  };
}
