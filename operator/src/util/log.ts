import { type DestinationStream, type Logger, pino } from 'pino';

// Secrets never reach logs: any field with one of these names is replaced wherever we name it.
const REDACTED_PATHS = ['key', '*.key', 'token', '*.token', 'secret', '*.secret', 'password', '*.password'];

// Level from RETROKUBE_LOG_LEVEL (default info; under vitest warn, so test output stays readable).
const defaultLevel = process.env.RETROKUBE_LOG_LEVEL ?? (process.env.VITEST ? 'warn' : 'info');

export function createLogger(destination?: DestinationStream, level = defaultLevel): Logger {
  const options = { level, base: undefined, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

// One root logger for the process. Components take a child with their own `component` field so a
// person can filter one part of a busy log.
export const rootLogger: Logger = createLogger();

export function logger(component: string, bindings: Record<string, unknown> = {}): Logger {
  return rootLogger.child({ component, ...bindings });
}

export type { Logger };
