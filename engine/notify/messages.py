"""The message an ``email`` job stands for, composed when it is sent from what its reader may
see then (docs/api.md, "Email and digests"): an immediate message (the notifications of one
transaction) or a digest (a window's notifications and, with the ASSIGNED level, the reader's
open tasks: seed 003's S003-28).

Every line is a sentence of engine/notify/sentences.py, in the reader's time zone, the same
words the dashboard shows; this module picks what is listed, makes the links (only with
``CASEWAY_PUBLIC_URL``: ``mail.item_link``) and hands both to the templates
(engine/notify/templates/, ``rendering``): a text part and an HTML part, with the one-click
unsubscribe link and headers of every message (``mail.headers``).

Hidden ≡ missing: a notification is listed only if its entry is readable by its reader now
(``entry_readable``, as the in-app list), an item is linked only if its reader may see it now, and
an open task only if its item is (``open_tasks``). A message left with nothing is not sent.
"""

from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from engine.clock import SYSTEM_CLOCK
from engine.notify import mail, open_tasks, rendering
from engine.notify.digests import MAX_COUNTED, MAX_LISTED
from engine.people import identity
from engine.people.actors import Actor
from engine.people.visibility import entry_readable, item_visible
from models import Activity, Notification, TaskAssignment, User, WorkflowItem

# What each level is, to its reader: the footer says why they get the message.
LEVEL_WORDS = {
    "ASSIGNED": "your tasks",
    "ROLE": "cases you play a role in",
    "CASE": "items you follow",
    "WORKFLOW": "subprojects and workflows you follow",
}
MAX_COMMENT = 300  # characters of an entry's comment a message quotes

_ACTOR = aliased(User, name="entry_actor")


@dataclass(frozen=True, slots=True)
class News:
    level: str
    entry: Activity
    item_name: str | None
    actor_name: str | None
    item_seen: bool  # the reader may see the entry's item now (so it may be linked)


async def compose(session: AsyncSession, input: dict[str, Any], *, key: str) -> EmailMessage | None:
    """The message a job's input stands for, from what its reader may read now; None when there
    is nothing left to send (no address, a disabled user, everything hidden since)."""
    user = await session.get(User, input.get("user", ""))
    if user is None or user.disabled or not user.email or mail.config() is None:
        return None
    actor = await identity.actor_for(session, user_id=user.id, login=user.login, is_admin=user.is_admin)
    now = SYSTEM_CLOCK.now()
    digest = "notifications" not in input
    news, more_news = await _news(session, user, actor, input)
    tasks = None
    if digest and "ASSIGNED" in input["levels"]:
        tasks = await open_tasks.open_tasks(session, actor=actor, now=now, limit=open_tasks.MAX_LISTED)
    if not news and not (tasks and tasks.total):
        return None
    levels = sorted({n.level for n in news}) if not digest else list(input["levels"])
    zone = ZoneInfo(user.time_zone)
    yours = await _readers_tasks(session, actor, {n.entry.case_id for n in news if n.level == "ASSIGNED"})
    lines = [_news_line(n, user, zone, yours) for n in news]
    if digest:
        subject = _digest_subject(input["frequency"], len(news) + more_news, tasks)
    else:
        subject = lines[0]["line"] + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else "")
    unsubscribe = mail.unsubscribe_url(user.id, levels)
    context = {
        "subject": subject,
        "reader": user.display_name,
        "news_heading": _news_heading(input.get("frequency"), len(news) + more_news),
        "news": lines,
        "more_news": more_news,
        "tasks": _tasks_context(tasks, zone) if tasks and tasks.total else None,
        "tasks_link": mail.tasks_link(),
        "levels": _listed([LEVEL_WORDS[level] for level in levels]),
        "levels_count": len(levels),
        "unsubscribe": unsubscribe,
    }
    text, html = rendering.render("message", context)
    message = EmailMessage()
    mail.headers(message, to=user.email, subject=subject, key=key, unsubscribe=unsubscribe)
    rendering.fill(message, text, html)
    return message


async def _news(session: AsyncSession, user: User, actor: Actor, input: dict[str, Any]) -> tuple[list[News], int]:
    """The notifications the message lists, oldest first, and how many more its window holds."""
    # the rule of every notification read: its entry readable by its recipient now (entry_readable
    # over the joined entry, as notification_readable says it for a bare notification)
    mine = [Notification.recipient_id == user.id, entry_readable(actor)]
    if "notifications" in input:
        mine.append(Notification.id.in_(list(input["notifications"])[:MAX_LISTED]))
    else:
        start, end = datetime.fromisoformat(input["from"]), datetime.fromisoformat(input["to"])
        mine += [
            Notification.level.in_(input["levels"]),
            Notification.created_at >= start,
            Notification.created_at < end,
        ]
    seen = item_visible(actor, Activity.workflow_item_id)
    query = (
        select(Notification.level, Activity, WorkflowItem.display_name, _ACTOR.display_name, seen)
        .join(Activity, Activity.id == Notification.activity_id)
        .outerjoin(WorkflowItem, WorkflowItem.id == Activity.workflow_item_id)
        .outerjoin(_ACTOR, _ACTOR.id == Activity.actor_id)
        .where(*mine)
        .order_by(Notification.created_at, Notification.id)
        .limit(MAX_LISTED)
    )
    news = [
        News(level, entry, item, who, bool(shown)) for level, entry, item, who, shown in await session.execute(query)
    ]
    more = 0
    if len(news) == MAX_LISTED and "notifications" not in input:
        counted = (
            (select(Notification.id).join(Activity, Activity.id == Notification.activity_id).where(*mine))
            .limit(MAX_COUNTED + MAX_LISTED)
            .subquery()
        )
        more = (await session.scalar(select(func.count()).select_from(counted)) or 0) - MAX_LISTED
    return news, more


async def _readers_tasks(session: AsyncSession, actor: Actor, case_ids: set[str | None]) -> dict[str, str]:
    """The reader's open task in each of these cases (the first by id): where a notification
    that they were assigned links to. One statement, over at most a message's cases."""
    cases = sorted(c for c in case_ids if c)
    if not cases:
        return {}
    task = TaskAssignment.__table__.c
    rows = await session.execute(
        select(task.case_id, func.min(task.enabled_action_id))
        .where(task.case_id.in_(cases), task.party_id.in_(sorted(actor.party_ids)))
        .group_by(task.case_id)
    )
    return dict(rows.all())  # type: ignore[arg-type]


def _news_line(news: News, user: User, zone: ZoneInfo, yours: dict[str, str]) -> dict[str, Any]:
    entry = news.entry
    link = None
    if news.item_seen and entry.workflow_item_id:
        enabled = entry.data.get("enabledActionId") if isinstance(entry.data, dict) else None
        if news.level == "ASSIGNED" and entry.case_id:
            enabled = enabled or yours.get(entry.case_id)
        link = mail.item_link(entry.workflow_item_id, enabled if isinstance(enabled, str) else None)
    comment = entry.comment[:MAX_COMMENT] if entry.comment else None
    return {
        "line": _sentence(news, user, zone),
        "at": entry.at.astimezone(zone).strftime("%d %b %Y, %H:%M"),
        "comment": comment,
        "link": link,
        "level": news.level,
    }


def _tasks_context(tasks: open_tasks.OpenTasks, zone: ZoneInfo) -> dict[str, Any]:
    rows = [
        {
            "line": _task_sentence(task),
            "enabled": task.enabled_at.astimezone(zone).strftime("%d %b %Y"),
            "due": task.due_date.strftime("%d %b %Y") if task.due_date else None,
            "overdue": task.overdue,
            "link": mail.item_link(task.item_id, task.enabled_action_id),
        }
        for task in tasks.tasks
    ]
    late = f", {tasks.overdue} overdue" if tasks.overdue else ""
    heading = f"Your open tasks: {tasks.total}{late}"
    return {"heading": heading, "rows": rows, "more": tasks.more, "total": tasks.total, "overdue": tasks.overdue}


def _digest_subject(frequency: str, news: int, tasks: open_tasks.OpenTasks | None) -> str:
    parts = []
    if tasks and tasks.total:
        late = f" ({tasks.overdue} overdue)" if tasks.overdue else ""
        parts.append(f"{_count(tasks.total, 'open task')}{late}")
    if news:
        parts.append(_count(news, "update"))
    return f"{frequency.capitalize()} digest: {', '.join(parts)}"


def _news_heading(frequency: str | None, count: int) -> str:
    if frequency is None:
        return "What happened"
    return f"{_count(count, 'update')} since your last {frequency.lower()} digest"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# --- Until engine/notify/sentences.py (branch msg-sentences) is merged ---------------------


def _sentence(news: News, user: User, zone: ZoneInfo) -> str:
    entry = news.entry
    who = news.actor_name or "Caseway"
    item = news.item_name or "an item"
    return f"{who} {entry.kind.replace('_', ' ')}{f' ({entry.action})' if entry.action else ''}: {item}"


def _task_sentence(task: open_tasks.OpenTask) -> str:
    line = f"{task.action_name} is yours: {task.item_name}"
    return f"{line} (for {task.for_user})" if task.for_user else line


__all__ = ["LEVEL_WORDS", "compose"]
