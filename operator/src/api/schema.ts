// Building blocks shared by every kind's schema, and the conversion of a TypeBox schema into a
// structural OpenAPI v3 schema the API server accepts (no symbols, no empty `properties` next to
// `additionalProperties`, no empty `required`).
import { type TObject, type TSchema, Type } from '@sinclair/typebox';

export { API_VERSION, GROUP, VERSION } from './group.ts';

/** A Kubernetes resource quantity ('10m', '64Mi', 2), exactly as core/v1 ResourceRequirements. */
export const Quantity = Type.Unsafe<string | number>({
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  pattern:
    '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
  'x-kubernetes-int-or-string': true,
});

const ResourceList = Type.Object(
  {},
  {
    additionalProperties: Quantity,
    maxProperties: 8,
    description: 'Resource name (cpu, memory, ...) to quantity.',
  },
);

/**
 * Container resources. CEL keeps limits at or above requests for cpu and memory, so a typo such
 * as `limits.memory: 32Mi, requests.memory: 64Mi` is refused at admission, not at pod creation.
 */
export function Resources(defaults: { requests: Record<string, string>; limits: Record<string, string> }) {
  const rule = (r: string) =>
    `!has(self.requests) || !has(self.limits) || !('${r}' in self.requests) || !('${r}' in self.limits) || ` +
    `quantity(string(self.limits['${r}'])).compareTo(quantity(string(self.requests['${r}']))) >= 0`;
  return Type.Object(
    { requests: Type.Optional(ResourceList), limits: Type.Optional(ResourceList) },
    {
      description: 'CPU and memory requests and limits of the container.',
      default: defaults,
      'x-kubernetes-validations': ['cpu', 'memory'].map((r) => ({
        rule: rule(r),
        message: `limits.${r} must be at least requests.${r}`,
        fieldPath: `.limits.${r}`,
      })),
    },
  );
}

/** metav1.Condition. */
export const Condition = Type.Object({
  type: Type.String({
    maxLength: 316,
    pattern:
      '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
  }),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  reason: Type.String({ minLength: 1, maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' }),
  message: Type.String({ maxLength: 32768 }),
});

export const Conditions = Type.Array(Condition, {
  maxItems: 16,
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
  description: 'Ready (summary), Progressing and Degraded, each with the generation it describes.',
});

/** Status fields every kind carries. */
export const CommonStatus = {
  observedGeneration: Type.Optional(
    Type.Integer({ minimum: 0, description: 'metadata.generation the status describes.' }),
  ),
  conditions: Type.Optional(Conditions),
};

/** Printer column of a CRD version. */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface Validation {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

/** Everything that describes one kind; one such object per file in operator/src/api/. */
export interface KindDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  categories: string[];
  description: string;
  spec: TObject;
  status: TObject;
  printerColumns: PrinterColumn[];
  /** CEL rules on the whole object (may read metadata.name). */
  validations?: Validation[];
  /** The file the kind is defined in, for the generated header. */
  source: string;
}

/** Plain JSON of a TypeBox schema, made structural for apiextensions.k8s.io/v1. */
export function toOpenApi(schema: TSchema): Record<string, unknown> {
  const clean = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(clean);
    if (!v || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    // A union of string literals becomes an enum of strings.
    if (
      Array.isArray(o.anyOf) &&
      o.anyOf.length > 0 &&
      o.anyOf.every((x) => (x as { const?: unknown }).const !== undefined)
    ) {
      const { anyOf, ...rest } = o;
      return clean({
        ...rest,
        type: 'string',
        enum: (anyOf as Array<{ const: unknown }>).map((x) => x.const),
      });
    }
    const out: Record<string, unknown> = {};
    for (const [k, val] of Object.entries(o)) {
      if (k === 'properties' && val && typeof val === 'object' && Object.keys(val).length === 0) continue;
      if (k === 'required' && Array.isArray(val) && val.length === 0) continue;
      out[k] = clean(val);
    }
    return out;
  };
  return clean(JSON.parse(JSON.stringify(schema))) as Record<string, unknown>;
}
