#!/usr/bin/env node
// The one command of the project: every role (operator, air relay, machine, sheets node, ...) is a verb.
import { Command, CommanderError } from 'commander';
import { sendLogsTo } from '../util/log.ts';
import { VERSION } from '../version.ts';
import { registerVerbs } from './verbs.ts';

const program = new Command('retrokube')
  .description('Kube on Oberon and Sheeternetes, run as dependable software')
  .version(VERSION, '-V, --version-flag')
  .showHelpAfterError('(add --help for usage)')
  .exitOverride();

program
  .command('version')
  .description('print the version')
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

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode;
  } else {
    // A failed verb exits non-zero with a one-line reason; the stack is for RETROKUBE_DEBUG=1.
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`retrokube: ${message}\n`);
    if (process.env.RETROKUBE_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = 1;
  }
}
