// The token and signing key of a Sheeternetes server or agent verb: `--token-file`/`--key-file`
// (out of `ps`), the flags the reference tools take (warned), or the environment (TOKEN,
// SIGNING_KEY), through util/secret-option.ts.
import { resolveSecret } from '../util/secret-option.ts';
import { DEFAULT_TOKEN } from './default-token.ts';

export interface SecretFlags {
  token?: string;
  tokenFile?: string;
  key?: string;
  keyFile?: string;
}

/** The token (the reference's well-known default when none is given) and the signing key (none: unsigned). */
export function tokenAndKey(
  o: SecretFlags,
  warn: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): { token: string; key: string | undefined } {
  const token =
    resolveSecret({
      what: 'token',
      flag: '--token',
      env: 'TOKEN',
      fromFlag: o.token,
      file: o.tokenFile,
      envValue: env.TOKEN,
      warn,
    }) ?? DEFAULT_TOKEN;
  const key = resolveSecret({
    what: 'signing key',
    flag: '--key',
    env: 'SIGNING_KEY',
    fromFlag: o.key,
    file: o.keyFile,
    envValue: env.SIGNING_KEY,
    warn,
  });
  return { token, key };
}
