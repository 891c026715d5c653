"""The message an ``email`` job stands for, composed when it is sent from what its reader may
see then (docs/api.md, "Email and digests"): an immediate message (the notifications of one
transaction) or a digest (a window's notifications and, with the ASSIGNED level, the reader's
open tasks: seed 003's S003-28).

Every line is a sentence of engine/notify/sentences.py, in the reader's time zone, the same
words the dashboard shows (an open task's: ``task_sentence``); this module picks what is
listed, makes the sentences' paths links (only with ``CASEWAY_PUBLIC_URL``: ``mail.link``) and
hands both to the templates
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

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.clock import SYSTEM_CLOCK
from engine.notify import mail, open_tasks, rendering, sentences, wording
from engine.notify.digests import MAX_COUNTED, MAX_LISTED
from engine.people import deputies, identity
from engine.people.actors import Actor
from engine.people.visibility import entry_readable, item_visible
from models import Activity, Notification, User

# What each level is, to its reader: the footer says why they get the message.
LEVEL_WORDS = {
    "ASSIGNED": "your tasks",
    "ROLE": "cases you play a role in",
    "CASE": "items you follow",
    "WORKFLOW": "subprojects and workflows you follow",
}
MAX_COMMENT = 300  # characters of an entry's comment a message quotes


@dataclass(frozen=True, slots=True)
class News:
    level: str
    entry: Activity
    item_seen: bool  # the reader may see the entry's item now (so it may be linked)


async def compose(session: AsyncSession, input: dict[str, Any], *, key: str) -> EmailMessage | None:
    """The message a job's input stands for, from what its reader may read now; None when there
    is nothing left to send (no address, a disabled user, everything hidden since)."""
    user = await session.get(User, input.get("user", ""))
    if user is None or user.disabled or not user.email or mail.config() is None:
        return None
    actor = await identity.actor_for(session, user_id=user.id, login=user.login, is_admin=user.is_admin)
    absent = await deputies.standing_in(session, user_id=user.id)  # read once: for the news and the tasks
    lent = await sentences.lent_to(session, user_id=user.id, absent=absent)
    reader = sentences.Reader.of(
        user.id, parties=actor.party_ids, time_zone=user.time_zone, now=SYSTEM_CLOCK.now(), lent=lent
    )
    digest = "notifications" not in input
    news, more_news = await _news(session, user, actor, input)
    tasks = None
    if digest and "ASSIGNED" in input["levels"]:
        tasks = await open_tasks.open_tasks(
            session, actor=actor, today=reader.today, limit=open_tasks.MAX_LISTED, absent=absent
        )
    if not news and not (tasks and tasks.total):
        return None
    entries, levels_of = [n.entry for n in news], [n.level for n in news]
    # viewer: an item the reader may not see (an entry they read through viewHistory) goes unnamed
    said = await sentences.phrase_entries(session, entries, reader=reader, levels=levels_of, viewer=actor)
    lines = [_news_line(n, sentence, reader) for n, sentence in zip(news, said, strict=True)]
    if digest:
        subject = _digest_subject(input["frequency"], len(news) + more_news, tasks)
    else:
        subject = lines[0]["line"] + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else "")
    levels = list(input["levels"]) if digest else sorted({n.level for n in news})
    unsubscribe = mail.unsubscribe_url(user.id, levels)
    context = {
        "subject": subject,
        "reader": user.display_name,
        "news_heading": _news_heading(input.get("frequency"), len(news) + more_news),
        "news": lines,
        "more_news": more_news,
        "tasks": _tasks_context(tasks, reader) if tasks and tasks.total else None,
        "tasks_link": mail.link(mail.TASKS_PATH),
        "levels": wording.joined([LEVEL_WORDS[level] for level in levels]),
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
        select(Notification.level, Activity, seen)
        .join(Activity, Activity.id == Notification.activity_id)
        .where(*mine)
        .order_by(Notification.created_at, Notification.id)
        .limit(MAX_LISTED)
    )
    news = [News(level, entry, bool(shown)) for level, entry, shown in await session.execute(query)]
    more = 0
    if len(news) == MAX_LISTED and "notifications" not in input:
        counted = (
            (select(Notification.id).join(Activity, Activity.id == Notification.activity_id).where(*mine))
            .limit(MAX_COUNTED + MAX_LISTED)
            .subquery()
        )
        more = (await session.scalar(select(func.count()).select_from(counted)) or 0) - MAX_LISTED
    return news, more


def _news_line(news: News, said: sentences.Sentence, reader: sentences.Reader) -> dict[str, Any]:
    entry = news.entry
    return {
        "line": said.text,
        "at": wording.local_time(entry.at, tz=reader.tz, today=reader.today),
        "reason": said.reason,
        "comment": entry.comment[:MAX_COMMENT] if entry.comment else None,
        # only an item its reader may see now is linked: a link names the item's id
        "link": mail.link(said.path) if news.item_seen else None,
    }


def _tasks_context(tasks: open_tasks.OpenTasks, reader: sentences.Reader) -> dict[str, Any]:
    rows = []
    for task in tasks.tasks:
        item = sentences.ItemFacts(
            task.item_id, task.item_name, task.amount, task.amount_type, task.currency, task.due_date
        )
        waiting = sentences.Waiting(
            task.enabled_action_id, task.action, task.action_name, reader.parties, task.enabled_at
        )
        said = sentences.task_sentence(item=item, waiting=waiting, reader=reader, for_user=task.for_user)
        rows.append(
            {
                "line": said.text,
                "enabled": wording.local_day(task.enabled_at, tz=reader.tz, today=reader.today),
                "due": wording.day(task.due_date, today=reader.today),
                "overdue": task.overdue,
                "link": mail.link(said.path),
            }
        )
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


__all__ = ["LEVEL_WORDS", "compose"]
