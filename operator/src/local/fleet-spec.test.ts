// A fleet FILE: several OberonKubes with labels and the Rollouts over them, checked before anything runs.
import { describe, expect, it } from 'vitest';
import { isFleetText, parseFleetFile } from './fleet-spec.ts';

const kube = (name: string, labels = 'fleet: demo') => `apiVersion: retrokube.io/v1alpha1
kind: OberonKube
metadata: {name: ${name}, labels: {${labels}}}
spec: {nodes: 1, deployments: "web 2 Ticker"}
---
`;
const rollout = (spec: string, name = 'r') => `apiVersion: retrokube.io/v1alpha1
kind: Rollout
metadata: {name: ${name}}
spec:
  selector: {matchLabels: {fleet: demo}}
  change: {deployment: web, image: Ticker2}
${spec}
---
`;

describe('fleet FILE', () => {
  it('is a fleet with two OberonKubes or any Rollout, and not with one OberonKube alone', () => {
    expect(isFleetText(kube('a'))).toBe(false);
    expect(isFleetText(kube('a') + kube('b'))).toBe(true);
    expect(isFleetText(kube('a') + rollout('  strategy: {type: rolling}'))).toBe(true);
  });

  it('reads every cluster with its labels and every rollout with the schema defaults', () => {
    const f = parseFleetFile(
      kube('a', 'fleet: demo, tier: db') + kube('b') + rollout('  strategy: {type: rolling}'),
      'f.yaml',
    );
    expect(f.kubes.map((k) => [k.name, k.labels, k.nodeNames])).toEqual([
      ['a', { fleet: 'demo', tier: 'db' }, ['node-a']],
      ['b', { fleet: 'demo' }, ['node-a']],
    ]);
    expect(f.rollouts[0].name).toBe('r');
    expect(f.rollouts[0].spec.strategy).toMatchObject({
      type: 'rolling',
      maxParallel: 1,
      onFailure: 'abort',
    });
  });

  it('reads SheetClusters with their labels; a rollout picks them with selector.kind', () => {
    const sheet = (name: string) => `apiVersion: retrokube.io/v1alpha1
kind: SheetCluster
metadata: {name: ${name}, labels: {fleet: sheets}}
spec: {nodes: 1}
---
`;
    const text = `${sheet('sa')}${sheet('sb')}${rollout('  strategy: {type: rolling}').replace('matchLabels: {fleet: demo}', 'kind: SheetCluster, matchLabels: {fleet: sheets}')}`;
    expect(isFleetText(sheet('sa'))).toBe(false);
    expect(isFleetText(sheet('sa') + sheet('sb'))).toBe(true);
    const f = parseFleetFile(text, 'f.yaml');
    expect(f.kubes).toEqual([]);
    expect(f.sheets.map((x) => [x.sheets.cluster.metadata.name, x.labels])).toEqual([
      ['sa', { fleet: 'sheets' }],
      ['sb', { fleet: 'sheets' }],
    ]);
    expect(f.rollouts[0].spec.selector.kind).toBe('SheetCluster');
    // An OberonKube selector does not match SheetClusters, and the API server's rules hold here too.
    expect(() => parseFleetFile(text.replace('kind: SheetCluster, ', ''), 'f.yaml')).toThrow(
      /matches no OberonKube in the FILE/,
    );
    expect(() =>
      parseFleetFile(
        text.replace('{type: rolling}', '{type: blueGreen, blueGreen: {groupLabel: c, activeGroup: x}}'),
        'f.yaml',
      ),
    ).toThrow(/blue\/green over Sheeternetes switches a federation's active member/);
    expect(() =>
      parseFleetFile(text.replace('kind: SheetCluster, ', 'kind: SheetFederation, '), 'f.yaml'),
    ).toThrow(/SheetFederation targets need the operator/);
    expect(() => parseFleetFile(sheet('sa') + kube('sa'), 'f.yaml')).toThrow(/two clusters are named sa/);
  });

  it('refuses what the API server would refuse, naming the field', () => {
    const two = kube('a') + kube('b');
    const cases: [string, RegExp][] = [
      [two + rollout('  strategy: {type: sideways}'), /Rollout r spec\.strategy\.type/],
      [two + rollout('  strategy: {type: canary}'), /spec\.strategy\.canary: strategy canary needs/],
      [
        two + rollout('  strategy: {type: canary, canary: {count: 1, percent: 50}}'),
        /give exactly one of count and percent/,
      ],
      [two + rollout('  strategy: {type: retry}'), /strategy retry needs retry\.attempts/],
      [two + rollout('  strategy: {type: rolling, maxParallel: 0}'), /spec\.strategy\.maxParallel/],
      [
        two +
          rollout('  strategy: {type: rolling}').replace(
            '{deployment: web, image: Ticker2}',
            '{deployment: web}',
          ),
        /name an image or replicas to change/,
      ],
      [
        two + rollout('  strategy: {type: rolling}').replace('fleet: demo}}', 'fleet: nowhere}}'),
        /matchLabels fleet=nowhere matches no OberonKube in the FILE/,
      ],
      [kube('a') + kube('a'), /two clusters are named a/],
      [
        two + rollout('  strategy: {type: rolling}') + rollout('  strategy: {type: rolling}'),
        /two Rollouts are named r/,
      ],
      [kube('a', 'fleet: 3') + kube('b'), /metadata\.labels\.fleet must be a string/],
    ];
    for (const [text, why] of cases) expect(() => parseFleetFile(text, 'f.yaml'), String(why)).toThrow(why);
  });
});
