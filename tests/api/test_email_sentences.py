"""Every email line is the entry's sentence (issue 50's acceptance: "every log entry kind and
notification level has a test of its sentence in email", generated over the kinds, so a new kind
without a sentence fails here).

The kinds come from the code (``ENTRY_KINDS``, the list ``activity.record`` holds writers to), the
levels too (``notifications.LEVELS``). For each kind an entry is written about the resource it
is about, a notification of each level tells the reader, and the messages the SMTP server
receives are read: the subject is the sentence ``sentences.phrase_entries`` makes for that reader
and level, the text part says it, the HTML part says it escaped, with why it reached them."""

from datetime import timedelta

import pytest
from markupsafe import escape
from sqlalchemy import select

import engine
from engine.clock import SYSTEM_CLOCK, SettableClock
from engine.history import activity
from engine.history.entry_kinds import ENTRY_KINDS
from engine.notify import delivery, mail, notifications, phrases, sentences
from engine.notify.digests import SETTLE
from models import Activity, Notification, Project, new_id
from server.job_runner import JobRunner
from tests.fixtures.engine import new_subproject
from tests.fixtures.smtp import PUBLIC_URL, SECRET, Mailbox, html_of, text_of

_PROJECT_KINDS = {kind for kind in ENTRY_KINDS if kind.startswith("project_")}
_SUBPROJECT_KINDS = {kind for kind in ENTRY_KINDS if kind.startswith("subproject_")} | {"workflow_items_reordered"}


def test_every_kind_has_a_phrase():
    assert sorted(set(ENTRY_KINDS) - set(phrases.PHRASES)) == []


@pytest.mark.parametrize("kind", sorted(ENTRY_KINDS))
async def test_an_email_of_each_kind_and_level_carries_its_sentence(kind, db, make_actor, mailbox: Mailbox):
    mail.configure(
        mail.make_config(
            smtp_url=mailbox.url, sender="c@test", public_url=PUBLIC_URL, secret_key=SECRET, links_url=PUBLIC_URL
        ),
        db,
    )
    boss = await make_actor("boss", admin=True)
    reader = await make_actor("rita", admin=True)  # may read every entry, grants' included
    levels = notifications.LEVELS
    async with db.transaction() as s:
        chosen = [delivery.LevelDelivery(level, ("EMAIL",), "IMMEDIATE") for level in levels]
        await delivery.set_delivery(
            s, actor=reader, email="rita@example.org", time_zone="Asia/Tokyo", levels=chosen, now=SYSTEM_CLOCK.now()
        )
        sub = await new_subproject(s, boss, workflow="simple")
        item, case = await engine.create_workflow_item(
            s, actor=boss, subproject_id=sub.id, display_name="<i>Chairs</i>"
        )
    for level in levels:
        async with db.transaction() as s:
            if kind in _PROJECT_KINDS:
                project = await s.get(Project, sub.project_id)
                entry = await activity.record(s, kind=kind, actor_id=boss.user_id, about=project)
            elif kind in _SUBPROJECT_KINDS:
                entry = await activity.record(s, kind=kind, actor_id=boss.user_id, about=sub)
            else:
                entry = await activity.record(s, kind=kind, actor_id=boss.user_id, about=item, case_id=case.id)
            row = Notification(
                id=new_id("ntf"), recipient_id=reader.user_id, activity_id=entry.id, level=level, created_at=entry.at
            )
            s.add(row)
            delivery.notified(s, [row])
    runner = JobRunner(db, None, clock=SettableClock(SYSTEM_CLOCK.now() + SETTLE + timedelta(seconds=1)))
    assert await runner.drain() == len(levels)
    await runner.stop()

    async with db.read_session() as s:
        entries = (await s.scalars(select(Activity).where(Activity.kind == kind).order_by(Activity.seq))).all()
        entries = entries[-len(levels) :]
        rita = sentences.Reader.of(reader.user_id, parties=reader.party_ids, time_zone="Asia/Tokyo")
        said = await sentences.phrase_entries(s, entries, reader=rita, levels=list(levels), viewer=reader)
    # One message per level (its unsubscribe link names it), each saying its entry's sentence.
    received = {
        level: m
        for m in mailbox.to("rita@example.org")
        for level in levels
        if f"levels={level}&" in m["List-Unsubscribe"]
    }
    assert sorted(received) == sorted(levels)
    for level, sentence in zip(levels, said, strict=True):
        assert sentence.text and sentence.reason, (kind, level)
        message = received[level]
        # (a long subject may be folded right after "Subject:", which leaves the parser a space)
        assert message["Subject"].strip() == sentence.text, (kind, level)
        text, html = text_of(message), html_of(message)
        assert sentence.text in text and sentence.reason in text
        assert str(escape(sentence.text)) in html and str(escape(sentence.reason)) in html
        if sentence.path:  # about the item: linked, to the action asked of the reader when there is one
            assert f"{PUBLIC_URL}{sentence.path}" in text and f'href="{PUBLIC_URL}{sentence.path}"' in html
        else:
            assert "#/item/" not in text
    mail.configure(None)
