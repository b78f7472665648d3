// The catalog icon of an app: an SVG of ours — a 1-bit Oberon-style screen (black frame, white
// viewer) with the app's initials, so every app is told apart at a glance and nothing is borrowed.
export function logoSvg(app: string): string {
  const initials = app
    .split('-')
    .map((w) => w[0]?.toUpperCase() ?? '')
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">
  <title>${app}</title>
  <rect x="2" y="6" width="60" height="44" rx="3" fill="#000"/>
  <rect x="6" y="10" width="52" height="36" fill="#fff"/>
  <rect x="6" y="10" width="52" height="6" fill="#000"/>
  <text x="32" y="38" font-family="monospace" font-size="16" text-anchor="middle" fill="#000">${initials}</text>
  <rect x="26" y="50" width="12" height="6" fill="#000"/>
  <rect x="16" y="56" width="32" height="3" fill="#000"/>
</svg>
`;
}
