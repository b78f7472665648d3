import { type DestinationStream, type Logger, pino } from 'pino';

// Secrets never reach logs: any field with one of these names is replaced wherever we name it.
const REDACTED_PATHS = ['key', '*.key', 'token', '*.token', 'secret', '*.secret', 'password', '*.password'];

// Level from RETROKUBE_LOG_LEVEL (default info; under vitest warn, so test output stays readable).
const defaultLevel = process.env.RETROKUBE_LOG_LEVEL ?? (process.env.VITEST ? 'warn' : 'info');

export function createLogger(destination?: DestinationStream, level = defaultLevel): Logger {
  const options = { level, base: undefined, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

// Where the process's JSON log lines go: stdout unless a command that draws for people (`up`)
// sends them to a file or to stderr. Loggers are made at import time, so they write through this
// switch rather than to a fixed stream.
let target: DestinationStream = pino.destination({ dest: 1, sync: true });
const switchable: DestinationStream = { write: (line: string) => target.write(line) };

/** Send every log line from now on to `to`: 'stdout', 'stderr' or a file (appended, created). */
export function sendLogsTo(to: 'stdout' | 'stderr' | string): void {
  target =
    to === 'stdout' || to === 'stderr'
      ? pino.destination({ dest: to === 'stdout' ? 1 : 2, sync: true })
      : pino.destination({ dest: to, sync: true, mkdir: true, append: true });
}

// One root logger for the process. Components take a child with their own `component` field so a
// person can filter one part of a busy log.
export const rootLogger: Logger = createLogger(switchable);

export function logger(component: string, bindings: Record<string, unknown> = {}): Logger {
  return rootLogger.child({ component, ...bindings });
}

export type { Logger };
