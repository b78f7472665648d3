// A KindDefinition → CustomResourceDefinition (apiextensions.k8s.io/v1).
import { GROUP, type KindDefinition, toOpenApi, VERSION } from './schema.ts';

export function toCrd(def: KindDefinition): Record<string, unknown> {
  const root: Record<string, unknown> = {
    type: 'object',
    description: def.description,
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string', description: 'APIVersion of this representation of the object.' },
      kind: { type: 'string', description: 'Kind of the object.' },
      metadata: { type: 'object' },
      // An empty default lets `spec: {}` be omitted, unless the spec has fields one must give.
      spec: { ...toOpenApi(def.spec), ...(def.spec.required?.length ? {} : { default: {} }) },
      status: toOpenApi(def.status),
    },
  };
  if (def.validations?.length) root['x-kubernetes-validations'] = def.validations;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${def.plural}.${GROUP}`,
      labels: { 'app.kubernetes.io/name': 'retrokube', 'app.kubernetes.io/part-of': 'retrokube' },
    },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: def.categories,
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.printerColumns,
          schema: { openAPIV3Schema: root },
        },
      ],
    },
  };
}
