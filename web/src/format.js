// How values read on the page.
export function partyName(party) {
  if (!party) return '—';
  return party.displayName || party.login || party.name;
}

export function money(item) {
  if (item.amount == null) return null;
  return `${Number(item.amount).toLocaleString(undefined, { maximumFractionDigits: 2 })} ${item.currency || ''}`.trim();
}

export function when(iso) {
  if (!iso) return '';
  return new Date(iso).toLocaleString();
}

export function describe(entry) {
  const who = entry.actor ? entry.actor.displayName : 'The system';
  const what = entry.action ? `${entry.kind.replace(/_/g, ' ')}: ${entry.action}` : entry.kind.replace(/_/g, ' ');
  return `${who} — ${what}`;
}
