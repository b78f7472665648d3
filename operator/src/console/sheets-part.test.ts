import { describe, expect, it } from 'vitest';
import { BadRequest, NotFound } from '../util/json-body.ts';
import { niceMax, shortCell, unitOf } from './cells.ts';
import { checkNames } from './sheets-command.ts';
import { answered, checkSheetsAction, eventsSince, parseSheetsCommand } from './sheets-part.ts';

describe("the sheet console's skctl box", () => {
  it('turns each verb into the contract body skctl posts', () => {
    expect(parseSheetsCommand(' scale web 3 ')).toEqual({ action: 'scale', name: 'web', replicas: 3 });
    expect(parseSheetsCommand('skctl cordon node-a')).toEqual({ action: 'cordon', name: 'node-a' });
    expect(parseSheetsCommand('drain node-b')).toEqual({ action: 'drain', name: 'node-b' });
    expect(parseSheetsCommand('delete web')).toEqual({ action: 'delete', kind: 'deployment', name: 'web' });
    expect(parseSheetsCommand('delete route api')).toEqual({ action: 'delete', kind: 'route', name: 'api' });
    expect(parseSheetsCommand('migrate web-1 node-b')).toEqual({
      action: 'migrate',
      name: 'web-1',
      node: 'node-b',
    });
    expect(parseSheetsCommand('label node-a disk=ssd')).toEqual({
      action: 'label',
      name: 'node-a',
      spec: 'disk=ssd',
    });
    expect(parseSheetsCommand('apply {"deployments":[{"name":"web","image":"nginx","replicas":2}]}')).toEqual(
      {
        action: 'apply',
        deployments: [{ name: 'web', image: 'nginx', replicas: 2 }],
        gateways: [],
        routes: [],
      },
    );
  });

  it('refuses what is not one verb, saying what would be', () => {
    const cases: [unknown, RegExp][] = [
      ['', /one line/],
      ['scale web', /whole number/],
      ['scale web -1', /whole number/],
      ['scale web 3 4', /whole number/],
      ['cordon', /usage: cordon NODE/],
      ['cordon ../x', /not a name/],
      ['rm -rf /', /not a verb here/],
      ['apply {', /JSON object/],
      ['apply []', /usage: apply/],
      ['apply {"secrets":[{"name":"k"}]}', /Secrets never travel through a page/],
      ['delete secret k', /Secrets are deleted with skctl/],
      ['scale web 3\ncordon node-a', /one line/],
      [42, /must be a line/],
    ];
    for (const [text, why] of cases) {
      expect(() => parseSheetsCommand(text), String(text)).toThrow(BadRequest);
      expect(() => parseSheetsCommand(text), String(text)).toThrow(why);
    }
  });
});

describe("the sheet console's actions", () => {
  it('checks what a page asks', () => {
    expect(checkSheetsAction({ op: 'scale', deployment: 'web', replicas: '2' })).toEqual({
      op: 'scale',
      deployment: 'web',
      replicas: 2,
    });
    expect(checkSheetsAction({ op: 'agent', node: 'node-a', on: false })).toEqual({
      op: 'agent',
      node: 'node-a',
      on: false,
    });
    expect(() => checkSheetsAction({ op: 'scale', deployment: 'web', replicas: 1.5 })).toThrow(
      /whole number/,
    );
    expect(() => checkSheetsAction({ op: 'agent', node: 'node-a', on: 'yes' })).toThrow(/true or false/);
    expect(() => checkSheetsAction({ op: 'reboot' })).toThrow(/"op" must be/);
  });

  it("reads the apiserver's answer, and makes 'not found' an error a person sees", () => {
    expect(answered({ result: 'scaled' })).toBe('scaled');
    expect(answered({ applied: ['web: created'], gateways: [], routes: ['api: updated'] })).toBe(
      'web: created, api: updated',
    );
    expect(() => answered({ result: 'not found' })).toThrow(NotFound); // the console answers 404
  });

  it('names a deployment, node, pod or route the tables do not hold before anything is sent (#29.9)', () => {
    const tabs = {
      deployments: [{ name: 'ticker' }, { name: 'web' }],
      nodes: [{ name: 'node-a' }],
      pods: [{ name: 'web-1' }],
    };
    const check = (line: string) => () => checkNames(parseSheetsCommand(line), tabs);
    expect(check('scale nosuch 2')).toThrow(NotFound);
    expect(check('scale nosuch 2')).toThrow('not found: no deployment "nosuch" (deployments: ticker, web)');
    expect(check('cordon node-z')).toThrow('no node "node-z" (nodes: node-a)');
    expect(check('migrate web-1 node-z')).toThrow('no node "node-z"');
    expect(check('delete ghost')).toThrow('no deployment "ghost"');
    for (const ok of ['scale web 3', 'drain node-a', 'migrate web-1 node-a', 'delete route api', 'apply {}'])
      expect(check(ok), ok).not.toThrow();
    // tabs the page has not read yet are not judged
    expect(() => checkNames(parseSheetsCommand('cordon node-z'), {})).not.toThrow();
  });
});

describe("the console's cells and plot axes", () => {
  it('shortens digests and long text, keeping the whole value for the tooltip', () => {
    const d = `sha256:${'ab12'.repeat(16)}`;
    expect(shortCell(d)).toEqual({ text: 'sha256:ab12ab12ab12…', title: d });
    expect(shortCell('x'.repeat(100)).text).toHaveLength(40);
    expect(shortCell(null)).toEqual({ text: '' });
  });

  it('groups metrics by unit and gives each axis a round top', () => {
    expect(
      ['pods_running', 'nodes_ready', 'cpu_allocated_millicores', 'mem_capacity_mib'].map(unitOf),
    ).toEqual(['pods', 'nodes', 'millicores', 'MiB']);
    expect([0, 3, 7, 12, 4000, 4001].map(niceMax)).toEqual([1, 5, 10, 20, 5000, 5000]);
  });
});

describe("the sheet console's events", () => {
  it("keeps this run's events, those of its first second too (the sheet stamps whole seconds), and drops an earlier run's", () => {
    const since = Date.parse('2026-12-04T20:14:14.600Z');
    const ev = (ts: string, message: string) => ({ ts, message });
    const all = [
      ev('2026-12-04T20:14:13Z', 'an earlier run'),
      ev('2026-12-04T20:14:14Z', 'scheduled to node-b, 300 ms after the start'),
      ev('2026-12-04T20:14:15Z', 'node-a registered'),
      ev('not a time', 'undated'),
    ];
    expect(eventsSince(all, since).map((e) => e.message)).toEqual([
      'scheduled to node-b, 300 ms after the start',
      'node-a registered',
      'undated',
    ]);
  });
});
