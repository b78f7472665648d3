import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../api/generate.ts';
import { parseBindAddress } from './operator-options.ts';

const NODE = join(REPO_ROOT, 'node_modules/.bin/node');
const MAIN = join(REPO_ROOT, 'operator/src/cli/main.ts');

describe('retrokube operator and crds verbs', () => {
  it('reads bind addresses the way controller-runtime flags write them', () => {
    expect(parseBindAddress(':8080', '--metrics-port')).toEqual({ host: '0.0.0.0', port: 8080 });
    expect(parseBindAddress('127.0.0.1:9', '--metrics-port')).toEqual({ host: '127.0.0.1', port: 9 });
    expect(parseBindAddress('8081', '--health-port')).toEqual({ host: '0.0.0.0', port: 8081 });
    expect(parseBindAddress('0', '--metrics-port')).toBeUndefined();
    expect(() => parseBindAddress('70000', '--metrics-port')).toThrow(/--metrics-port "70000"/);
    expect(() => parseBindAddress('http', '--health-port')).toThrow(/\[host\]:port/);
  });

  it('`retrokube crds` prints every CRD as YAML, and as JSON with -o json', () => {
    const yaml = execFileSync(NODE, [MAIN, 'crds'], { encoding: 'utf8' });
    const docs = parseAllDocuments(yaml).map((d) => d.toJSON());
    expect(docs.map((d) => d.metadata.name)).toContain('oberonairs.retrokube.io');
    const json = JSON.parse(execFileSync(NODE, [MAIN, 'crds', '-o', 'json'], { encoding: 'utf8' }));
    expect(json).toEqual(docs);
  });

  it('bad flags exit non-zero with a one-line reason', () => {
    const r = spawnSync(NODE, [MAIN, 'operator', '--log-level', 'loud'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe(
      'retrokube: --log-level "loud" is not one of fatal, error, warn, info, debug, trace',
    );
    const j = spawnSync(NODE, [MAIN, 'crds', '-o', 'xml'], { encoding: 'utf8' });
    expect(j.status).toBe(1);
    expect(j.stderr).toContain('--output "xml" is not yaml or json');
  });
});
