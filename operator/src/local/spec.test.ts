import { describe, expect, it } from 'vitest';
import {
  nodeCommands,
  parseDeployments,
  parseLocalFile,
  planeCommands,
  SAMPLE_YAML,
  SpecError,
  totalReplicas,
} from './spec.ts';

const kube = (spec: string, extra = ''): string =>
  `apiVersion: retrokube.io/v1alpha1\nkind: OberonKube\nmetadata:\n  name: lab\nspec:\n${spec}\n${extra}`;

describe('local OberonKube FILE', () => {
  it('the sample is a plane and 3 nodes running web 4 Ticker and api 2 Ticker2', () => {
    const k = parseLocalFile(SAMPLE_YAML);
    expect(k.nodeNames).toEqual(['node-a', 'node-b', 'node-c']);
    expect(k.deployments).toEqual([
      { name: 'web', replicas: 4, module: 'Ticker' },
      { name: 'api', replicas: 2, module: 'Ticker2' },
    ]);
    expect(totalReplicas(k)).toBe(6);
    expect(k.key).toBeNull();
  });

  it('boot commands: the plane serves and ensures (never applies), a node joins', () => {
    const k = parseLocalFile(SAMPLE_YAML);
    expect(planeCommands(k, '00c0ffee')).toBe(
      'Kube.Start;KubeNet.Serve kube 00c0ffee;Kube.Ensure web 4 Ticker;Kube.Ensure api 2 Ticker2',
    );
    expect(planeCommands(k, '00c0ffee', false)).toBe('Kube.Start;KubeNet.Serve kube 00c0ffee');
    expect(nodeCommands(k, 'node-b', '00c0ffee')).toBe('KubeNet.Join node-b kube 00c0ffee');
  });

  it('the key comes from the Secret named by keySecretRef (stringData or base64 data)', () => {
    const secret = (body: string) => `---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: k\n${body}\n`;
    const text = kube(
      '  nodes: 2\n  keySecretRef: {name: k}',
      secret('stringData:\n  key: 0123456789ABCDEF'),
    );
    expect(parseLocalFile(text).key).toBe('0123456789abcdef');
    const b64 = Buffer.from('00c0ffee').toString('base64');
    const text2 = kube('  nodes: 2\n  keySecretRef: {name: k, key: hex}', secret(`data:\n  hex: ${b64}`));
    expect(parseLocalFile(text2).key).toBe('00c0ffee');
  });

  it('the loss comes from the OberonKube, else from an OberonAir in the FILE', () => {
    const air =
      '---\napiVersion: retrokube.io/v1alpha1\nkind: OberonAir\nmetadata: {name: a}\nspec: {loss: 0.2}\n';
    expect(parseLocalFile(kube('  nodes: 1', air)).loss).toBe(0.2);
    expect(parseLocalFile(kube('  nodes: 1\n  loss: 0.1', air)).loss).toBe(0.1);
  });

  const refused: [string, string, RegExp][] = [
    [
      'an unknown kind',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n',
      /kind "ConfigMap" is not known/,
    ],
    ['nodes: 0', kube('  nodes: 0'), /spec\.nodes must be a whole number 1\.\.20/],
    ['nodes: 21', kube('  nodes: 21'), /spec\.nodes/],
    [
      'a bad deployments string',
      kube('  deployments: "web four Ticker"'),
      /spec\.deployments "web four Ticker" has a bad replica count/,
    ],
    [
      'a deployment without a module',
      kube('  deployments: "web 4"'),
      /spec\.deployments "web 4" is not "name replicas Module"/,
    ],
    ['a cluster name too long', kube('  cluster: muchtoolong'), /spec\.cluster/],
    ['an unknown spec field', kube('  nodez: 2'), /spec\.nodez is not an OberonKube field/],
    [
      'spec.air (up runs its own air; accepting and ignoring it was issue 17 item 14)',
      kube('  nodes: 1\n  air: lab-air'),
      /spec\.air is not used by "retrokube up": it runs its own air .* --air HOST:PORT/,
    ],
    [
      'a missing Secret',
      kube('  keySecretRef: {name: nope}'),
      /spec\.keySecretRef\.name names Secret "nope"/,
    ],
    [
      'a wrong apiVersion',
      kube('  nodes: 1').replace('v1alpha1', 'v9'),
      /apiVersion must be retrokube\.io\/v1alpha1/,
    ],
    ['a loss above 1', kube('  loss: 2'), /spec\.loss must be a probability/],
    ['no OberonKube', '', /exactly one OberonKube, found 0/],
    ['a bad memory quantity', kube('  memory: lots'), /spec\.memory must be a quantity/],
  ];
  for (const [what, text, msg] of refused) {
    it(`refuses ${what}, naming the field`, () => {
      expect(() => parseLocalFile(text, 'c.yaml')).toThrow(SpecError);
      expect(() => parseLocalFile(text, 'c.yaml')).toThrow(msg);
    });
  }

  it('refuses a key in the Secret that is not hex', () => {
    const text = kube(
      '  keySecretRef: {name: k}',
      '---\napiVersion: v1\nkind: Secret\nmetadata: {name: k}\nstringData: {key: nothex}\n',
    );
    expect(() => parseLocalFile(text)).toThrow(/stringData\.key must be 0–16 hex digits/);
  });

  it('deployments: repeated names and too-long modules are refused', () => {
    expect(() => parseDeployments('web 1 Ticker; web 2 Ticker')).toThrow(/repeats the deployment "web"/);
    expect(() => parseDeployments('web 1 ModuleNameFarTooLong')).toThrow(/bad module/);
    expect(parseDeployments(' ; web 0 Ticker ;')).toEqual([{ name: 'web', replicas: 0, module: 'Ticker' }]);
  });
});
