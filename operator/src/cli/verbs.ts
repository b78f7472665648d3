// Every verb of `retrokube`, by the module that registers it, loaded only when it is used: a verb
// loads its own module (`await import`), not the other roles' (the Sheeternetes client does not load
// for `air relay`, nor the machine for `skctl`). `retrokube --help` loads none: the top-level names
// and descriptions below are what it lists. program.test.ts checks that this list says exactly what
// the modules register (same verbs, same order, same help text), so the two cannot drift apart.
// Each area of the project adds its verbs here, one entry each, so main.ts stays small.
import { type Command, Help } from 'commander';

type Register = (program: Command) => void;

export interface VerbGroup {
  /**
   * The top-level verbs the group's modules register, as `--help` lists them: the verb with its
   * options and arguments ("screen [options] <name>"), and its one-line description.
   */
  verbs: readonly (readonly [term: string, description: string])[];
  /** Top-level verbs of other groups this group adds subcommands to (`up.ts` adds `machine on|off`). */
  extends?: readonly string[];
  /**
   * The group's register functions, each imported on use. `words` are the command line's words
   * (options left out): a group of several modules loads only the one its subverb needs; without
   * them, every one (the whole tree, for tests and docs).
   */
  load: (words?: readonly string[]) => Promise<Register[]>;
}

/** One module of a group: the subverbs it registers (top-level ones too), its register imported on use. */
export interface VerbPart {
  words: readonly string[];
  load: () => Promise<Register>;
}

/**
 * `sheets` by module, in registration order. `skctl` and `sheets bridge` are what scripts call
 * most; with every part loaded they paid for what only `sheets wire` and `sheets wasmlet` load
 * with their modules (the workbook stores, pino, the wasm runtime): 4× a bare Node start (#32).
 */
export const SHEETS_PARTS: readonly VerbPart[] = [
  {
    words: ['serve', 'ctl', 'skctl'],
    load: async () => {
      const [ctl, state] = await Promise.all([import('../sheets/ctl/verbs.ts'), import('../local/state.ts')]);
      // skctl beside a running `up`: its apiserver, from the state folder (as `air listen` finds its air)
      return (program) =>
        ctl.registerSheetsControlPlaneVerbs(program, () => {
          const st = state.readUpState(state.stateDir());
          return st?.sheets?.url ?? st?.fleet?.clusters.find((c) => c.url)?.url;
        });
    },
  },
  { words: ['up'], load: async () => (await import('./sheets-up.ts')).registerSheetsUpVerb },
  {
    words: ['node', 'image', 'google-emulator'],
    load: async () => (await import('../sheets/node/cli.ts')).registerSheetsNodeVerbs,
  },
  {
    words: ['bridge'],
    load: async () => (await import('../sheets/bridge/cli.ts')).registerSheetsBridgeVerbs,
  },
  { words: ['wire'], load: async () => (await import('../sheets/wire/cli.ts')).registerSheetsWireVerbs },
  { words: ['wasmlet'], load: async () => (await import('../sheets/wasmlet/cli.ts')).registerWasmletVerb },
];

/**
 * The parts a command line needs: the one that registers its top-level verb (`skctl`) or, under
 * `group`, its subverb (`sheets bridge ...`); every part when it names none of them (`sheets
 * --help`, `sheets help bridge`, a typo: commander then lists them all, or says "did you mean").
 */
export function partsFor(
  parts: readonly VerbPart[],
  group: string,
  words: readonly string[] | undefined,
): readonly VerbPart[] {
  const word = words?.[0] === group ? words[1] : words?.[0];
  const part = word === undefined ? undefined : parts.find((p) => p.words.includes(word));
  return part ? [part] : parts;
}

export const VERB_GROUPS: readonly VerbGroup[] = [
  {
    verbs: [
      ['air', "the air: the UDP relay that carries Wirth's radio frames, and tools to listen and intrude"],
    ],
    load: async () => [(await import('./air.ts')).registerAirVerbs],
  },
  {
    verbs: [['disk', 'Oberon disk images: list, read, write and delete files, grow, fetch the base image']],
    load: async () => {
      const m = await import('./disk.ts');
      return [m.registerDiskVerbs, m.registerKubeDiskVerbs];
    },
  },
  {
    verbs: [
      [
        'lab [options]',
        'the browser lab: a plane and two nodes running in your browser (Web Workers), the air in the page, six self-checking labs',
      ],
    ],
    load: async () => [(await import('../console/lab.ts')).registerLabVerb],
  },
  {
    verbs: [
      [
        'launcher [options]',
        "keep the KubeVirt CR's RISC5 launcher patch in line with a table of launcher images, and report it (the chart's launcher component)",
      ],
    ],
    load: async () => [(await import('./launcher.ts')).registerLauncherVerbs],
  },
  {
    verbs: [['machine', 'RISC5 machines (Project Oberon) in TypeScript']],
    load: async () => [(await import('./machine.ts')).registerMachineVerbs],
  },
  {
    verbs: [
      [
        'operator [options]',
        'run the retrokube controllers against the current kubeconfig (in-cluster: its ServiceAccount)',
      ],
      ['crds [options]', 'print the CustomResourceDefinitions of retrokube.io (apply them with kubectl)'],
    ],
    load: async () => [(await import('./operator.ts')).registerOperatorVerbs],
  },
  {
    verbs: [
      [
        'rollout',
        'follow and steer a Rollout (rollouts.retrokube.io) in Kubernetes, or one a local "retrokube up" runs from a fleet FILE',
      ],
    ],
    load: async () => [(await import('./rollout.ts')).registerRolloutVerbs],
  },
  {
    verbs: [
      ['sheets', 'Sheeternetes: a container orchestrator whose control plane is a spreadsheet'],
      ['skctl [options]', 'alias of `retrokube sheets ctl`'],
    ],
    load: (words) => Promise.all(partsFor(SHEETS_PARTS, 'sheets', words).map((p) => p.load())),
  },
  {
    verbs: [
      [
        'up [options] [file]',
        'run an Oberon cluster on this machine (air, plane, nodes) and show it live as heard on the air',
      ],
      ['down [options]', 'stop the cluster started by "retrokube up" (disks stay in the state folder)'],
      [
        'status [options]',
        'where the running "retrokube up" listens: web console, apiserver, air, control, VNC of each machine',
      ],
      ['kube', 'the running Oberon cluster: steer it and see it as heard on the air'],
      ['screen [options] <name>', "a PNG of a machine's screen"],
    ],
    extends: ['machine'],
    load: async () => [(await import('./up.ts')).registerUpVerbs],
  },
];

const nameOf = (term: string): string => term.split(' ')[0] as string;

/** The names of the top-level verbs a group registers. */
export const verbNames = (g: VerbGroup): string[] => g.verbs.map(([term]) => nameOf(term));

/** The groups that register the top-level verb `name` or add to it, in registration order. */
export function groupsOf(name: string | undefined): VerbGroup[] {
  if (name === undefined) return [];
  return VERB_GROUPS.filter((g) => verbNames(g).includes(name) || g.extends?.includes(name));
}

/**
 * Lists every top-level verb on `program` without loading any: enough for `retrokube --help`, for
 * `retrokube help`, and for commander's "unknown command ... (Did you mean ...?)".
 */
export function listVerbs(program: Command): void {
  const terms = new Map<Command, string>();
  for (const g of VERB_GROUPS) {
    for (const [term, description] of g.verbs)
      terms.set(program.command(nameOf(term)).description(description), term);
  }
  program.configureHelp({
    subcommandTerm(this: Help, c: Command) {
      return terms.get(c) ?? Help.prototype.subcommandTerm.call(this, c); // `help [command]`
    },
  });
}
