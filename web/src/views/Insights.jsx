// A subproject's Insights: where its cases wait (the workflow diagram shaded by median time in
// state, with its legend in words), how long they take (a cycle-time histogram), how many start
// and complete (throughput), and the table of states with a CSV of it — all from the
// `insights` query (docs/api.md, "Insights"), over the cases the viewer may see.
import { useEffect, useMemo, useState } from 'react';

import { gql } from '../api/client.js';
import { INSIGHTS, INSIGHTS_SUBPROJECT } from '../api/insights.js';
import { when } from '../format.js';
import { useLoad } from '../hooks.js';
import { Empty, Failed, FieldErrors, Loading } from '../ui.jsx';
import { Diagram } from './Diagram.jsx';
import { CycleHistogram, ThroughputChart } from './InsightCharts.jsx';
import { SHADE_TEXT, SHADES, shadeLevels, short, stateLabel, statesCsv, words } from './insightFormat.js';

const WINDOWS = [
  [30, 'Last 30 days'],
  [90, 'Last 90 days'],
  [365, 'Last 365 days'],
];
const INTERVALS = [
  ['DAY', 'Day'],
  ['WEEK', 'Week'],
  ['MONTH', 'Month'],
];
const LEVEL_WORDS = [
  'No case has left it yet',
  'Short: up to a quarter of the longest median',
  'Up to half of the longest median',
  'Up to three quarters of the longest median',
  'Longest: up to the longest median',
];

function load(id, days, interval) {
  return async () => {
    const { node } = await gql(INSIGHTS_SUBPROJECT, { id });
    if (!node?.workflow) return null;
    const from = days === 30 ? undefined : new Date(Date.now() - days * 86400_000).toISOString();
    const input = { workflow: node.workflow.shortName, subprojectId: id, ...(from ? { from } : {}) };
    const { insights } = await gql(INSIGHTS, { input, interval });
    return { subproject: node, insights, input };
  };
}

/** Mermaid lines shading the diagram's states (those it draws: the top level of the version shown). */
function shading(states, source) {
  const drawn = new Set(source.match(/[A-Za-z_][\w]*/g));
  const levels = Object.fromEntries(Object.entries(shadeLevels(states).levels).filter(([state]) => drawn.has(state)));
  const defs = SHADES.map((fill, n) => `    classDef wait${n} fill:${fill},color:${SHADE_TEXT[n]},stroke:#555`);
  const uses = Object.entries(levels).map(([state, n]) => `    class ${state} wait${n}`);
  return { extra: [...defs, ...uses].join('\n'), levels };
}

function Legend({ states, levels }) {
  const { top } = shadeLevels(states);
  return (
    <div className="legend" data-testid="legend">
      <p>Each state is shaded by how long cases stayed in it (the median of finished visits); the longest median is {words(top)}.</p>
      <ul>
        {LEVEL_WORDS.map((text, n) => (
          <li key={n}>
            <span className="swatch" style={{ background: SHADES[n] }} aria-hidden="true" /> {text}:{' '}
            {Object.entries(levels)
              .filter(([, level]) => level === n)
              .map(([state]) => states.find((s) => s.state.shortName === state && !s.scope)?.state.prettyName)
              .join(', ') || 'none'}
          </li>
        ))}
      </ul>
    </div>
  );
}

function StatesTable({ states }) {
  return (
    <>
    <p>Time in state counts finished visits, less the time their case was suspended.</p>
    <div className="scroll-x" role="region" aria-label="Table of states" tabIndex={0}>
      <table className="insight-table" data-testid="states-table">
        <caption className="visually-hidden">Time in state: finished visits, less time suspended</caption>
        <thead>
          <tr>
            <th scope="col">State</th>
            <th scope="col">Entered</th>
            <th scope="col">In it now</th>
            <th scope="col">Oldest since</th>
            <th scope="col">Median</th>
            <th scope="col">90th pct.</th>
            <th scope="col">Mean</th>
            <th scope="col">Max</th>
          </tr>
        </thead>
        <tbody>
          {states.map((s) => {
            const t = s.timeInState;
            return (
              <tr key={`${s.scope?.shortName ?? ''}/${s.state.shortName}`} data-state={s.state.shortName}>
                <th scope="row">{stateLabel(s)}</th>
                <td>{s.entered}</td>
                <td>{s.inStateNow}</td>
                <td>{s.oldestSince ? when(s.oldestSince) : '—'}</td>
                {[t?.p50, t?.p90, t?.mean, t?.max].map((v, n) => (
                  <td key={n} aria-label={words(v)}>
                    {short(v)}
                  </td>
                ))}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
    </>
  );
}

function CsvLink({ states, name }) {
  const href = useMemo(() => URL.createObjectURL(new Blob([statesCsv(states)], { type: 'text/csv' })), [states]);
  useEffect(() => () => URL.revokeObjectURL(href), [href]);
  return (
    <a className="button" href={href} download={`${name} states.csv`} data-testid="csv">
      Download the table (CSV)
    </a>
  );
}

export function Insights({ id }) {
  const [days, setDays] = useState(30);
  const [interval, setStep] = useState('WEEK');
  const [{ loading, error, data }, reload] = useLoad(load(id, days, interval), [id, days, interval]);
  if (loading && !data) return <Loading what="insights" />;
  if (error && !data) return <Failed error={error} retry={reload} />;
  if (!data) return <Empty>No such subproject, or not yours to see.</Empty>;
  const { subproject, insights } = data;
  const states = insights.states;
  const { extra, levels } = shading(states, subproject.workflow.diagram);
  const cycle = insights.cycleTime;
  return (
    <section className="insights" data-testid="insights" data-from={insights.from} data-to={insights.to}>
      <p className="crumbs">
        <a href="#/">Projects</a> / <span>{subproject.project.displayName}</span> /{' '}
        <a href={`#/subproject/${subproject.id}`}>{subproject.displayName}</a>
      </p>
      <h1>Insights: {subproject.displayName}</h1>
      <form className="filters" aria-label="Which cases" onSubmit={(e) => e.preventDefault()}>
        <label>
          Cases started
          <select value={days} onChange={(e) => setDays(Number(e.target.value))}>
            {WINDOWS.map(([n, text]) => (
              <option key={n} value={n}>
                {text}
              </option>
            ))}
          </select>
        </label>
        <label>
          Throughput per
          <select value={interval} onChange={(e) => setStep(e.target.value)}>
            {INTERVALS.map(([value, text]) => (
              <option key={value} value={value}>
                {text}
              </option>
            ))}
          </select>
        </label>
      </form>
      <FieldErrors errors={insights.userErrors} field={null} />
      <Failed error={error} retry={reload} />
      <p>
        {subproject.workflow.prettyName}: cases started from {when(insights.from)} to {when(insights.to)} that you may see.{' '}
        {cycle.completed} completed, {insights.openAge.open} open (median age {words(insights.openAge.p50)}),{' '}
        {insights.overdue.open} overdue, {insights.overdue.late} completed late.
      </p>
      <h2>Where cases wait</h2>
      <Diagram source={subproject.workflow.diagram} extra={extra} />
      <Legend states={states} levels={levels} />
      <div className="insight-charts">
        <CycleHistogram cycle={cycle} />
        <ThroughputChart buckets={insights.throughput} interval={interval} />
      </div>
      <h2>States</h2>
      <StatesTable states={states} />
      <CsvLink states={states} name={subproject.displayName} />
      {insights.rework.length > 0 && (
        <>
          <h2>Rework</h2>
          <ul data-testid="rework">
            {insights.rework.map((r) => (
              <li key={`${r.scope?.shortName ?? ''}/${r.state.shortName}`}>
                {r.state.shortName}: {r.returned} {r.returned === 1 ? 'return' : 'returns'} in {r.cases}{' '}
                {r.cases === 1 ? 'case' : 'cases'}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
