// The side feed: every activity entry the viewer may see, newest first, as it happens, in the
// server's sentences (Activity.sentence: phrased for the viewer). On a narrow screen it folds away behind its heading (a disclosure button).
import { useEffect, useState } from 'react';

import { onActivity } from '../api/live.js';
import { ago, when } from '../format.js';
import { Empty } from '../ui.jsx';

const KEEP = 50;

export function Feed({ open, onToggle }) {
  const [entries, setEntries] = useState([]);
  const [, setNow] = useState(0);
  useEffect(() => onActivity((entry) => setEntries((current) => [entry, ...current].slice(0, KEEP))), []);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 30_000); // "2 minutes ago" moves on
    return () => clearInterval(timer);
  }, []);
  return (
    <aside className={`feed${open ? ' open' : ''}`} aria-label="Live feed">
      <h2>
        <button type="button" className="feed-toggle" aria-expanded={open} aria-controls="feed-list" onClick={onToggle}>
          <span aria-hidden="true">{open ? '▾ ' : '▸ '}</span>
          Live feed {entries.length > 0 && <span className="count">{entries.length}</span>}
        </button>
      </h2>
      <div id="feed-list" className="feed-body" hidden={!open}>
        {entries.length === 0 && <Empty>Nothing has happened since you opened the page.</Empty>}
        <ol data-testid="feed">
          {entries.map((entry) => (
            <li key={entry.seq} data-testid="feed-entry">
              <span className="sentence">{entry.sentence}</span>
              {entry.comment && <q>{entry.comment}</q>}
              {entry.workflowItem && <a href={`#/item/${entry.workflowItem.id}`}>Open {entry.workflowItem.displayName}</a>}
              <time dateTime={entry.at} title={when(entry.at)}>
                {ago(entry.at)}
              </time>
            </li>
          ))}
        </ol>
      </div>
    </aside>
  );
}
