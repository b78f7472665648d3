// The emulator's HTTP edge in Google's shapes: the error a v4 endpoint answers with (code, status,
// message, details), reading a JSON request body within a size bound, and writing a JSON reply.
import type http from 'node:http';

export class ApiError extends Error {
  readonly code: number;
  readonly status: string;
  readonly details: unknown[] | undefined;
  constructor(code: number, status: string, message: string, details?: unknown[]) {
    super(message);
    this.code = code;
    this.status = status;
    this.details = details;
  }
}
export const invalid = (message: string): ApiError => new ApiError(400, 'INVALID_ARGUMENT', message);

/** A JSON object field of a request, or {} when it is absent or not an object. */
export function obj(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

export async function readBody(req: http.IncomingMessage, maxBytes: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const ch of req) {
    n += (ch as Buffer).length;
    if (n > maxBytes) throw invalid('Request payload size exceeds the limit.');
    chunks.push(ch as Buffer);
  }
  if (n === 0) return {};
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw invalid('Invalid JSON payload received.');
  }
}

export function send(res: http.ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, {
    'content-type': 'application/json; charset=UTF-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
