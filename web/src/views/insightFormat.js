// Durations and the states table as the Insights view shows them: short for the eye, in words
// for screen readers, raw seconds in the CSV (the API's numbers, unrounded).

const UNITS = [
  [86400, 'd', 'day'],
  [3600, 'h', 'hour'],
  [60, 'min', 'minute'],
  [1, 's', 'second'],
];

/** The two largest units of a duration: [[count, unit], …] (seconds rounded). */
function parts(seconds) {
  let rest = Math.round(seconds);
  const found = [];
  for (const [size, short, long] of UNITS) {
    const n = Math.floor(rest / size);
    if (n > 0 || (size === 1 && found.length === 0)) found.push([n, short, long]);
    rest -= n * size;
    if (found.length === 2) break;
  }
  return found;
}

/** "3 h 20 min"; an empty figure is a dash. */
export function short(seconds) {
  if (seconds == null) return '—';
  return parts(seconds)
    .map(([n, unit]) => `${n} ${unit}`)
    .join(' ');
}

/** "3 hours 20 minutes"; an empty figure is "no figure". */
export function words(seconds) {
  if (seconds == null) return 'no figure';
  return parts(seconds)
    .map(([n, , long]) => `${n} ${long}${n === 1 ? '' : 's'}`)
    .join(' ');
}

export function stateLabel(row) {
  return row.scope ? `${row.state.prettyName} (in ${row.scope.shortName})` : row.state.prettyName;
}

export const CSV_COLUMNS = [
  'scope', 'state', 'entered', 'in_state_now', 'oldest_since', 'finished_visits', 'p50_seconds', 'p90_seconds',
  'mean_seconds', 'max_seconds',
];

function cell(value) {
  if (value == null) return '';
  const text = String(value);
  return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The table of states as CSV: one row per state, the API's figures as they are. */
export function statesCsv(states) {
  const rows = states.map((s) => [
    s.scope?.shortName ?? '',
    s.state.shortName,
    s.entered,
    s.inStateNow,
    s.oldestSince ?? '',
    s.timeInState?.count ?? 0,
    s.timeInState?.p50,
    s.timeInState?.p90,
    s.timeInState?.mean,
    s.timeInState?.max,
  ]);
  return [CSV_COLUMNS, ...rows].map((row) => row.map(cell).join(',')).join('\n') + '\n';
}

/** Shading levels for the diagram: 0 (no finished visit) and 1-4 by median time in state,
 * in quarters of the longest median. */
export function shadeLevels(states) {
  const medians = states.filter((s) => !s.scope && s.timeInState).map((s) => s.timeInState.p50);
  const top = Math.max(0, ...medians);
  const levels = {};
  for (const s of states) {
    if (s.scope) continue;
    const m = s.timeInState?.p50;
    levels[s.state.shortName] = m == null ? 0 : top === 0 ? 1 : Math.min(4, 1 + Math.floor((4 * m) / top - 1e-9));
  }
  return { levels, top };
}

export const SHADES = ['#f4f4f4', '#fff3c4', '#ffd54f', '#ff9800', '#d84315'];
export const SHADE_TEXT = ['#1d2330', '#1d2330', '#1d2330', '#1d2330', '#ffffff'];
