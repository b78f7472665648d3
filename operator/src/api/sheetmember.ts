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
    url: Type.String({
      minLength: 8,
      maxLength: 2048,
      pattern: '^https?://',
      description: 'The member apiserver (the reference contract: GET ?token=&kind=, signed POSTs).',
    }),
    tokenSecretRef: SecretKeyRef,
    signingKeySecretRef: Type.Optional(SecretKeyRef),
  },
  { description: 'One federated Sheeternetes cluster reached over its apiserver URL.' },
);

export type SheetMemberT = Static<typeof SheetMember>;
