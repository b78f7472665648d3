// The dashboard form of an app, as a JSON-schema form renderer builds it from openAPISchema:
// each field's widget, order, whether it is required, its default and bounds. Written as text and
// kept under marketplace/forms/, so a schema change that changes the form shows up in review.
type Json = Record<string, unknown>;

function choices(s: Json): string[] | undefined {
  if (Array.isArray(s.enum)) return s.enum.map(String);
  const alts = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (alts?.every((x) => 'const' in x)) return alts.map((x) => String(x.const));
  return undefined;
}

function widget(s: Json): string {
  const c = choices(s);
  if (c) return `select ${c.join('|')}`;
  if (s.type === 'boolean') return 'checkbox';
  if (s.type === 'integer' || s.type === 'number') {
    const b =
      s.minimum !== undefined || s.maximum !== undefined ? ` [${s.minimum ?? ''}..${s.maximum ?? ''}]` : '';
    return `${s.type}${b}`;
  }
  if (s.type === 'object' && s.properties) return 'group';
  if (s.type === 'object') return `key/value list (max ${s.maxProperties ?? '∞'})`;
  const bounds = [
    s.pattern ? `/${String(s.pattern)}/` : '',
    s.maxLength !== undefined ? `≤${s.maxLength}` : '',
  ].filter(Boolean);
  return `text${bounds.length ? ` ${bounds.join(' ')}` : ''}`;
}

function lines(schema: Json, path: string, depth: number, out: string[]): void {
  const props = (schema.properties as Json | undefined) ?? {};
  const required = new Set((schema.required as string[] | undefined) ?? []);
  for (const [k, v] of Object.entries(props)) {
    const s = v as Json;
    const name = `${'  '.repeat(depth)}${path}${k}`;
    const parts = [widget(s)];
    if (required.has(k)) parts.push('required');
    if (s.default !== undefined) parts.push(`default ${JSON.stringify(s.default)}`);
    out.push(`${name.padEnd(28)} ${parts.join(', ')} — ${String(s.description ?? '(no description)')}`);
    if (s.type === 'object' && s.properties) lines(s, '', depth + 1, out);
  }
}

export function renderForm(appKind: string, schema: Json): string {
  const out = [
    `${appKind} form (from openAPISchema, in keysOrder)`,
    `${'metadata.name'.padEnd(28)} text, required — the app's name`,
  ];
  lines(schema, 'spec.', 0, out);
  return `${out.join('\n')}\n`;
}
