// The switch `up` uses to keep JSON log lines off the people's console.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { logger, sendLogsTo } from './log.ts';

afterEach(() => sendLogsTo('stdout'));

describe('log destination', () => {
  it('loggers made before the switch write to the file chosen after it, as JSON lines', () => {
    const log = logger('switch-test'); // made first, as every module's logger is (at import)
    const dir = mkdtempSync(join(tmpdir(), 'rk-log-'));
    try {
      const file = join(dir, 'sub', 'up.log');
      sendLogsTo(file);
      log.warn({ n: 1 }, 'to the file');
      const line = JSON.parse(readFileSync(file, 'utf8').trim());
      expect(line).toMatchObject({ level: 40, component: 'switch-test', n: 1, msg: 'to the file' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
