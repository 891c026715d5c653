// The side feed: every activity entry the viewer may see, newest first, as it happens.
import { useEffect, useState } from 'react';

import { onActivity } from '../api/live.js';
import { describe, when } from '../format.js';
import { Empty } from '../ui.jsx';

const KEEP = 50;

export function Feed() {
  const [entries, setEntries] = useState([]);
  useEffect(() => onActivity((entry) => setEntries((current) => [entry, ...current].slice(0, KEEP))), []);
  return (
    <aside className="feed" aria-label="Live feed">
      <h2>Live feed</h2>
      {entries.length === 0 && <Empty>Nothing has happened since you opened the page.</Empty>}
      <ol data-testid="feed">
        {entries.map((entry) => (
          <li key={entry.seq} data-testid="feed-entry">
            <time>{when(entry.at)}</time>
            <span>{describe(entry)}</span>
            {entry.workflowItem && <a href={`#/item/${entry.workflowItem.id}`}>{entry.workflowItem.displayName}</a>}
            {entry.comment && <q>{entry.comment}</q>}
          </li>
        ))}
      </ol>
    </aside>
  );
}
