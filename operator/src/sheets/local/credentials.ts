// The token and signing key of a local cluster that runs commands (`sheets up --allow-process`,
// `up --allow-process`): never the reference's well-known token, which every user of the host knows.
// Generated once, kept in two files only the owner reads (0600), read back on the next start so
// skctl and the console keep working with `--token-file`/`--key-file`.
import { randomBytes } from 'node:crypto';
import { privateSecret } from '../../util/private-file.ts';
import { DEFAULT_TOKEN } from '../default-token.ts';

export const LIMITS = {
  bytes: 24, // 192 bits each, hex: as the operator generates for a SheetCluster
} as const;

export interface LocalCredentials {
  token: string;
  key: string;
  tokenFile: string;
  keyFile: string;
}

const fresh = (): string => randomBytes(LIMITS.bytes).toString('hex');
const notWellKnown = (v: string): boolean => v !== DEFAULT_TOKEN;

/** The cluster's credentials in `<base>.token` and `<base>.key`: read if there (and private), else generated. */
export function localCredentials(base: string): LocalCredentials {
  const tokenFile = `${base}.token`;
  const keyFile = `${base}.key`;
  return {
    token: privateSecret(tokenFile, fresh, notWellKnown),
    key: privateSecret(keyFile, fresh, notWellKnown),
    tokenFile,
    keyFile,
  };
}

/** The refusal a command runtime gives the well-known token. */
export const WELL_KNOWN_WITH_COMMANDS =
  'the well-known default token cannot be used while a command runtime (process) is on: every user of this host knows it and could run commands through this cluster. Set TOKEN or --token-file to a secret (sheets up/up --allow-process generate one)';
