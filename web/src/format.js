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

/** A size in bytes as people read it: 1 KB is 1024 bytes, one decimal below 10 units. */
export function bytes(n) {
  if (n == null) return '—';
  const units = ['bytes', 'KB', 'MB', 'GB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${n} ${n === 1 ? 'byte' : 'bytes'}`;
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}
