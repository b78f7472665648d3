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

/**
 * The whole tree, every verb's module loaded (or only `groups'`; with a command line's `words`,
 * only the modules of the subverb it names).
 */
export async function buildProgram(
  groups: readonly VerbGroup[] = VERB_GROUPS,
  words?: readonly string[],
): Promise<Command> {
  const registers = await Promise.all(groups.map((g) => g.load(words)));
  return root((program) => {
    for (const r of registers.flat()) r(program);
  });
}

/** The words of a command line from its verb on, options left out (`help VERB ...` names VERB). */
export function wordsOf(args: readonly string[]): string[] {
  const words = args.filter((a) => !a.startsWith('-'));
  return words[0] === 'help' ? words.slice(1) : words;
}

/**
 * The tree a command line needs: the named verb's group only, and of a group of several modules
 * the one its subverb needs; with no known verb (`--help`, `-V`, a typo) the verbs listed by name
 * and description, none loaded.
 */
export async function programFor(args: readonly string[]): Promise<Command> {
  const words = wordsOf(args);
  const groups = groupsOf(words[0]);
  return groups.length > 0 ? buildProgram(groups, words) : root(listVerbs);
}
