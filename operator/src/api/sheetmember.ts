// A member of a Sheeternetes federation: an apiserver URL plus where its token and HMAC signing key
// live (Secrets in the resource's namespace; never the values themselves in a spec).
import { type Static, Type } from '@sinclair/typebox';

export const SecretKeyRef = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 253, description: 'Secret in the same namespace.' }),
    key: Type.String({ minLength: 1, maxLength: 253, description: 'Key inside the Secret.' }),
  },
  { description: 'A key of a Secret in the same namespace.' },
);

export const SheetMember = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description: 'How this member is called in status, Events and stretch plans.',
    }),
    url: Type.Optional(
      Type.String({
        minLength: 8,
        maxLength: 2048,
        pattern: '^https?://',
        description:
          'An external member apiserver (the reference contract: GET ?token=&kind=, signed POSTs).',
      }),
    ),
    sheetCluster: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        description:
          'A SheetCluster in this namespace: its status.url, and its token/signing Secrets unless the refs below say otherwise.',
      }),
    ),
    tokenSecretRef: Type.Optional(SecretKeyRef),
    signingKeySecretRef: Type.Optional(SecretKeyRef),
  },
  {
    description:
      'One federated Sheeternetes cluster: a SheetCluster by name, or an apiserver URL with a token Secret.',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.url) != has(self.sheetCluster)',
        message: 'give exactly one of url and sheetCluster',
      },
      { rule: '!has(self.url) || has(self.tokenSecretRef)', message: 'a url member needs tokenSecretRef' },
    ],
  },
);

export type SheetMemberT = Static<typeof SheetMember>;
