// How values read on the page: names and times ("3 minutes ago"; money and states: words.js). Activity entries and
// notifications are phrased by the server (their `sentence`, engine/notify/sentences.py), in the
// viewer's time zone and addressed to them: the page shows those as they come.

export function partyName(party) {
  if (!party) return '—';
  return party.displayName || party.login || party.name;
}

export function when(iso) {
  if (!iso) return '';
  return new Date(iso).toLocaleString();
}

const UNITS = [
  ['year', 365 * 86400],
  ['month', 30 * 86400],
  ['week', 7 * 86400],
  ['day', 86400],
  ['hour', 3600],
  ['minute', 60],
];
const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/** "just now", "5 minutes ago", "in 2 days": the exact time is the <time> element's title. */
export function ago(iso, now = Date.now()) {
  if (!iso) return '';
  const seconds = (new Date(iso).getTime() - now) / 1000;
  if (Math.abs(seconds) < 45) return 'just now';
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === 'minute') return relative.format(Math.round(seconds / size), unit);
  }
  return '';
}

/** Today as YYYY-MM-DD in the viewer's time zone: a due date before it is overdue. */
export function today() {
  const d = new Date();
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

export function overdue(dueDate) {
  return Boolean(dueDate) && dueDate < today();
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
