// The unread-notifications badge: counted by the server, raised live by `notifications`;
// opening the list marks them read. Each notification reads as the server phrased it for the
// viewer (Notification.sentence: "Start review is yours: Office chairs (due 15 Dec)").
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import { MARK_READ, NOTIFICATIONS } from '../api/documents.js';
import { onNotification, onStatus } from '../api/live.js';
import { ago, when } from '../format.js';
import { Failed } from '../ui.jsx';

// The server counts unread notifications up to this bound (engine.notify.notifications.UNREAD_COUNT_CAP).
const UNREAD_CAP = 1000;

export function NotificationBadge() {
  const [unread, setUnread] = useState(0);
  const [list, setList] = useState([]);
  const [open, setOpen] = useState(false);
  const [error, setError] = useState(null);

  const shown = unread >= UNREAD_CAP ? `${UNREAD_CAP}+` : String(unread);

  async function load() {
    try {
      const { notifications } = await gql(NOTIFICATIONS);
      setUnread(notifications.unreadCount);
      setList(notifications.edges.map((e) => e.node));
      setError(null);
    } catch (failure) {
      setError(failure);
    }
  }

  useEffect(() => {
    load();
    const offNote = onNotification((note) => {
      setUnread((n) => n + 1);
      setList((current) => [note, ...current].slice(0, 20));
    });
    const offStatus = onStatus((status) => status === 'live' && load()); // counted afresh after a reconnect
    return () => {
      offNote();
      offStatus();
    };
  }, []);

  async function toggle() {
    setOpen(!open);
    if (!open && unread > 0) {
      try {
        const { markNotificationsRead: result } = await gql(MARK_READ);
        if (result.unreadCount != null) setUnread(result.unreadCount);
      } catch (failure) {
        setError(failure);
      }
    }
  }

  return (
    <div
      className="notifications"
      onKeyDown={(e) => {
        if (e.key === 'Escape' && open) {
          setOpen(false);
          e.currentTarget.querySelector('button')?.focus();
        }
      }}
    >
      <button type="button" onClick={toggle} aria-label={`Notifications: ${shown} unread`} aria-expanded={open}>
        Notifications <span className="badge" data-testid="unread">{shown}</span>
      </button>
      {open && (
        <div className="popover" role="region" aria-label="Notifications">
          <Failed error={error} />
          {list.length === 0 && <p className="state empty">No notifications.</p>}
          <ul>
            {list.map((note) => (
              <li key={note.id} className={note.readAt ? 'read' : 'unread'} data-testid="notification">
                <span className="sentence">{note.sentence}</span>
                {note.activity?.workflowItem && (
                  <a href={`#/item/${note.activity.workflowItem.id}`} onClick={() => setOpen(false)}>
                    Open {note.activity.workflowItem.displayName}
                  </a>
                )}
                <small>
                  {note.reason} ·{' '}
                  <time dateTime={note.createdAt} title={when(note.createdAt)}>
                    {ago(note.createdAt)}
                  </time>
                </small>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
