// The Insights view's two charts, drawn by uPlot on a canvas that follows its box's width (a
// phone's 390 px included). The canvas is hidden from screen readers: each chart's numbers are
// also a list in words, which they read instead.
import 'uplot/dist/uPlot.min.css';

import { useEffect, useMemo, useRef } from 'react';
import uPlot from 'uplot';

import { words } from './insightFormat.js';

/** The chart's width: its box's, at least 240 px. */
function widthOf(box) {
  return Math.max(240, Math.floor(box.current?.clientWidth ?? 320));
}

/** A uPlot chart of `data` ([xs, ...ys]) with `options` (less the size), redrawn when they change. */
function Plot({ label, data, options, testid }) {
  const box = useRef(null);
  useEffect(() => {
    if (!box.current) return undefined;
    const plot = new uPlot({ ...options, width: widthOf(box), height: 220 }, data, box.current);
    const observer = new ResizeObserver(() => plot.setSize({ width: widthOf(box), height: 220 }));
    observer.observe(box.current);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, [data, options]);
  return <div className="chart" ref={box} aria-hidden="true" data-testid={testid} data-label={label} />;
}

const BIN_NAMES = ['1 hour', '4 hours', '1 day', '3 days', '7 days', '14 days', '30 days', '90 days'];

function binName(bin, n) {
  if (bin.upTo == null) return `${BIN_NAMES[n - 1] ?? ''} or longer`;
  return n === 0 ? `under ${BIN_NAMES[0]}` : `${BIN_NAMES[n - 1]} to ${BIN_NAMES[n]}`;
}

export function CycleHistogram({ cycle }) {
  const bins = cycle.bins;
  const data = useMemo(() => [bins.map((_, n) => n), bins.map((b) => b.count)], [bins]);
  const options = useMemo(() => ({
    legend: { show: false },
    scales: { x: { time: false, range: [-0.5, bins.length - 0.5] } },
    axes: [
      { values: (_, ticks) => ticks.map((t) => (Number.isInteger(t) ? ['<1h', '4h', '1d', '3d', '7d', '14d', '30d', '90d', '>90d'][t] ?? '' : '')) },
      { label: 'Cases' },
    ],
    series: [
      {},
      { label: 'Completed cases', fill: '#1565c0aa', stroke: '#1565c0', paths: uPlot.paths.bars({ size: [0.8] }), points: { show: false } },
    ],
  }), [bins.length]);
  return (
    <figure className="insight-chart">
      <figcaption>
        Cycle time of {cycle.completed} completed {cycle.completed === 1 ? 'case' : 'cases'}: median {words(cycle.p50)},
        90th percentile {words(cycle.p90)}.
      </figcaption>
      <Plot label="cycle-time histogram" data={data} options={options} testid="cycle-chart" />
      <ul className="visually-hidden" data-testid="cycle-words">
        {bins.map((b, n) => (
          <li key={n}>
            {binName(b, n)}: {b.count} {b.count === 1 ? 'case' : 'cases'}
          </li>
        ))}
      </ul>
    </figure>
  );
}

export function ThroughputChart({ buckets, interval }) {
  const data = useMemo(
    () => [buckets.map((b) => Date.parse(b.start) / 1000), buckets.map((b) => b.started), buckets.map((b) => b.completed)],
    [buckets],
  );
  const options = useMemo(
    () => ({
      series: [
        {},
        { label: 'Started', stroke: '#2e7d32', width: 2 },
        { label: 'Completed', stroke: '#6a1b9a', width: 2, dash: [6, 4] },
      ],
      axes: [{}, { label: 'Cases' }],
    }),
    [],
  );
  const unit = { DAY: 'day', WEEK: 'week', MONTH: 'month' }[interval];
  return (
    <figure className="insight-chart">
      <figcaption>Cases started and completed per {unit}.</figcaption>
      <Plot label="throughput" data={data} options={options} testid="throughput-chart" />
      <ul className="visually-hidden" data-testid="throughput-words">
        {buckets.map((b) => (
          <li key={b.start}>
            {unit} from {b.start.slice(0, 10)}: {b.started} started, {b.completed} completed
          </li>
        ))}
      </ul>
    </figure>
  );
}
