import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deploymentFromRow, type Row } from '../sheets/scheduler/model.ts';
import { specHashOfText } from '../sheets/scheduler/orders.ts';
import {
  activeMember,
  applyRefusal,
  applyRequest,
  httpCheckUrls,
  observeSheet,
  SHEET_TARGET_LIMITS,
  sheetVersion,
  specOwnership,
  switchActive,
} from './sheet-target.ts';

const web = (image: string, replicas: number): Row => ({
  name: 'web',
  image,
  replicas,
  cpu_req: 100,
  mem_req: 64,
  command: '',
  env: '',
  secret_files: '',
  ports: '8080',
});
const hashFor = (row: Row, ports: string) => specHashOfText(deploymentFromRow(row)!, ports);
const pod = (row: Row, i: number, phase: string, hashOf: Row = row): Row => {
  const ports = `3000${i}:8080/tcp`;
  return {
    name: `web-${i}`,
    deployment: 'web',
    node: 'node-0',
    phase,
    ports,
    endpoints: `10.0.0.1:3000${i}->8080/tcp`,
    spec_hash: hashFor(hashOf, ports),
  };
};

describe('observeSheet', () => {
  const v2 = web('sicf:ticker-wasm:v2', 2);
  const v1 = web('sicf:ticker-wasm:v1', 2);

  it('converged only when exactly replicas pods run the current spec', () => {
    const rows = { deployments: [v2], pods: [pod(v2, 1, 'Running'), pod(v2, 2, 'Running')] };
    expect(observeSheet(rows, 'web', 2)).toEqual({
      current: { image: 'sicf:ticker-wasm:v2', replicas: 2 },
      converged: true,
      healthy: true,
    });
    // one pod still runs the old spec (the row already says v2)
    const old = { deployments: [v2], pods: [pod(v2, 1, 'Running'), pod(v2, 2, 'Running', v1)] };
    expect(observeSheet(old, 'web', 2).converged).toBe(false);
    // the new copy has not started yet
    const pending = { deployments: [v2], pods: [pod(v2, 1, 'Running'), pod(v2, 2, 'Pending')] };
    expect(observeSheet(pending, 'web', 2)).toMatchObject({ converged: false, healthy: false });
    // a pod short of replicas
    expect(observeSheet({ deployments: [v2], pods: [pod(v2, 1, 'Running')] }, 'web', 1).converged).toBe(
      false,
    );
    // zero replicas and no pods: converged
    const zero = web('sicf:ticker-wasm:v2', 0);
    expect(observeSheet({ deployments: [zero], pods: [] }, 'web', 0).converged).toBe(true);
  });

  it('counts every running pod of the cluster for the check', () => {
    const other: Row = { name: 'db-1', deployment: 'db', phase: 'Running', spec_hash: 'x' };
    const rows = { deployments: [v2], pods: [pod(v2, 1, 'Pending'), other] };
    expect(observeSheet(rows, 'web', 1).healthy).toBe(true);
    expect(observeSheet(rows, 'web', 2).healthy).toBe(false);
  });

  it('a missing deployment has no current version; a reference sheet cannot be judged', () => {
    expect(observeSheet({ deployments: [], pods: [] }, 'web', 0)).toEqual({
      converged: false,
      healthy: true,
    });
    const ref = { deployments: [v1], pods: [{ name: 'web-1', deployment: 'web', phase: 'Running' }] };
    expect(observeSheet(ref, 'web', 0).problem).toMatch(/no spec_hash column/);
    expect(observeSheet({ deployments: [v1], pods: [] }, 'web', 0, 'owned').problem).toBe('owned');
  });
});

describe('applyRequest', () => {
  it('sends only the fields of the version', () => {
    expect(applyRequest('web', { replicas: 3 })).toEqual({
      action: 'apply',
      deployments: [{ name: 'web', replicas: 3 }],
    });
    expect(applyRequest('web', { image: 'sicf:a:v1', replicas: 0 }).deployments[0]).toEqual({
      name: 'web',
      image: 'sicf:a:v1',
      replicas: 0,
    });
  });

  it('a rollback restores exactly the previous version, whatever the change was', () => {
    // The apiserver's apply as the contract says: upsert by name, only the keys sent are written.
    const applyTo = (rows: Row[], body: ReturnType<typeof applyRequest>): Row[] =>
      rows.map((r) => (r.name === body.deployments[0].name ? { ...r, ...body.deployments[0] } : r));
    const version = fc.record(
      {
        image: fc.constantFrom('sicf:a:v1', 'sicf:b:v2', 'nginx:1'),
        replicas: fc.integer({ min: 0, max: 9 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(
        fc.constantFrom('sicf:a:v1', 'x:1'),
        fc.integer({ min: 0, max: 9 }),
        version,
        (img, n, change) => {
          const before = [web(img, n), { name: 'db', image: 'pg', replicas: 1 }];
          const previous = sheetVersion({ deployments: before, pods: [] }, 'web')!;
          const want = { ...previous, ...change };
          const changed = applyTo(before, applyRequest('web', want));
          expect(sheetVersion({ deployments: changed, pods: [] }, 'web')).toEqual(want);
          const back = applyTo(changed, applyRequest('web', previous));
          expect(back).toEqual(before.map((r) => (r.name === 'web' ? { ...r, image: img, replicas: n } : r)));
          expect(sheetVersion({ deployments: back, pods: [] }, 'web')).toEqual(previous);
        },
      ),
    );
  });

  it('reads the apiserver answer', () => {
    expect(applyRefusal({ applied: ['updated'] })).toBeUndefined();
    expect(applyRefusal({ applied: ['created'] })).toBeUndefined();
    expect(applyRefusal({ applied: ['invalid: bad ports'] })).toMatch(/did not apply.*bad ports/);
  });
});

describe('specOwnership', () => {
  it('names the fields the SheetCluster spec would put back', () => {
    expect(
      specOwnership('east', [{ name: 'web', replicas: 2 }], { deployment: 'web', image: 'x' }),
    ).toBeUndefined();
    expect(specOwnership('east', undefined, { deployment: 'web', image: 'x' })).toBeUndefined();
    expect(
      specOwnership('east', [{ name: 'web', replicas: 2, image: 'a' }], {
        deployment: 'web',
        image: 'x',
        replicas: 3,
      }),
    ).toMatch(
      /SheetCluster east sets web.image and web.replicas in its spec.deployments.*remove those fields/,
    );
  });
});

describe('httpCheckUrls', () => {
  it('probes each running pod at its endpoint for the port', () => {
    const v = web('i', 2);
    const pods = [
      pod(v, 1, 'Running'),
      { ...pod(v, 2, 'Running'), endpoints: '10.0.0.2:31000->9090/tcp,10.0.0.2:31001->8080/tcp' },
      pod(v, 3, 'Pending'),
      { ...pod(v, 4, 'Running'), endpoints: '' },
    ];
    expect(httpCheckUrls(pods, 'web', { path: 'healthz', port: 8080 })).toEqual({
      urls: ['http://10.0.0.1:30001/healthz', 'http://10.0.0.2:31001/healthz'],
      missing: ['web-4'],
    });
    expect(httpCheckUrls(pods, 'web', { path: '/' }).urls[1]).toBe('http://10.0.0.2:31000/');
    const many = Array.from({ length: 20 }, (_, i) => pod(v, i, 'Running'));
    expect(httpCheckUrls(many, 'web', { path: '/' }).urls).toHaveLength(SHEET_TARGET_LIMITS.httpChecks);
  });
});

describe("#28.14 the HTTP check goes only to the address the apiserver recorded for the pod's node", () => {
  it('an endpoints cell naming another host (edited in the sheet) is not fetched, and the check fails', () => {
    const v = web('i', 2);
    const nodes = [{ name: 'node-0', ip: '10.0.0.1' }];
    const edited = { ...pod(v, 2, 'Running'), endpoints: '169.254.169.254:80->8080/tcp' };
    expect(httpCheckUrls([pod(v, 1, 'Running'), edited], 'web', { path: '/' }, nodes)).toEqual({
      urls: ['http://10.0.0.1:30001/'],
      missing: ["web-2 (endpoint 169.254.169.254 is not its node's address 10.0.0.1)"],
    });
    // a node with no recorded address: nothing is fetched for its pods
    expect(httpCheckUrls([pod(v, 1, 'Running')], 'web', { path: '/' }, []).urls).toEqual([]);
  });
});

describe('blue/green over a federation', () => {
  const members = [
    { member: 'east', group: 'blue' },
    { member: 'west', group: 'green' },
    { member: 'north', group: 'green' },
  ];
  it('switching makes the first member of the group active, once', () => {
    expect(switchActive(undefined, 'web', members, 'green')).toEqual([{ service: 'web', member: 'west' }]);
    const db = { service: 'db', member: 'east' };
    expect(switchActive([db, { service: 'web', member: 'east' }], 'web', members, 'green')).toEqual([
      db,
      { service: 'web', member: 'west' },
    ]);
    expect(switchActive([{ service: 'web', member: 'west' }], 'web', members, 'green')).toBeUndefined();
    expect(switchActive([], 'web', members, 'red')).toBeUndefined();
  });
  it('the active member is the pinned holder, else the home', () => {
    expect(activeMember(undefined, 'web', ['east', 'west'])).toBe('east');
    expect(activeMember([{ service: 'web', member: 'west' }], 'web', ['east', 'west'])).toBe('west');
    expect(activeMember([{ service: 'web', member: 'gone' }], 'web', ['east', 'west'])).toBe('east');
  });
});
