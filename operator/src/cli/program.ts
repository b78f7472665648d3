// The command tree of `retrokube`, built without parsing argv (main.ts parses; tests walk the tree).
// A command line loads only the verb it names (programFor): the whole tree is for tests and docs.
import { Command } from 'commander';
import { VERSION } from '../version.ts';
import { groupsOf, listVerbs, VERB_GROUPS, type VerbGroup } from './verbs.ts';

/** The root with `version` and the JSON-output hook; `verbs` adds the rest. */
function root(verbs: (program: Command) => void): Command {
  const program = new Command('retrokube')
    .description('Kube on Oberon and Sheeternetes, run as dependable software')
    .version(VERSION, '-V, --version', 'print the version')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();

  program
    .command('version')
    .description('print the version (and the Node.js it runs on)')
    .action(() => {
      process.stdout.write(`retrokube ${VERSION} (node ${process.versions.node})\n`);
    });

  verbs(program);

  // With -o json / --json, stdout carries one JSON document for a program to parse: log lines go to
  // stderr (a cold `disk build-kube --json` logged "built the Kube disk" into its own answer).
  // The logger loads with the first verb that logs, not for `--help`.
  program.hook('preAction', async (_program, verb) => {
    const o = verb.opts() as { json?: unknown; output?: unknown };
    if (o.json === true || o.output === 'json') (await import('../util/log.ts')).sendLogsTo('stderr');
  });
  return program;
}

/** The whole tree, every verb's module loaded (or only `groups`'). */
export async function buildProgram(groups: readonly VerbGroup[] = VERB_GROUPS): Promise<Command> {
  const registers = await Promise.all(groups.map((g) => g.load()));
  return root((program) => {
    for (const r of registers.flat()) r(program);
  });
}

/** The top-level verb a command line names: its first word (`help VERB` names VERB). */
export function verbOf(args: readonly string[]): string | undefined {
  const words = args.filter((a) => !a.startsWith('-'));
  return words[0] === 'help' ? words[1] : words[0];
}

/**
 * The tree a command line needs: the named verb's group only; with no known verb (`--help`, `-V`,
 * a typo) the verbs listed by name and description, none loaded.
 */
export async function programFor(args: readonly string[]): Promise<Command> {
  const groups = groupsOf(verbOf(args));
  return groups.length > 0 ? buildProgram(groups) : root(listVerbs);
}
