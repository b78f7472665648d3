// The command tree of `retrokube`, built without parsing argv (main.ts parses; tests walk the tree).
import { Command } from 'commander';
import { sendLogsTo } from '../util/log.ts';
import { VERSION } from '../version.ts';
import { registerVerbs } from './verbs.ts';

export function buildProgram(): Command {
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

  registerVerbs(program);

  // With -o json / --json, stdout carries one JSON document for a program to parse: log lines go to
  // stderr (a cold `disk build-kube --json` logged "built the Kube disk" into its own answer).
  program.hook('preAction', (_program, verb) => {
    const o = verb.opts() as { json?: unknown; output?: unknown };
    if (o.json === true || o.output === 'json') sendLogsTo('stderr');
  });
  return program;
}
