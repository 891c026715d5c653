"""The phrase of each kind of log entry (``PHRASES``: one function per kind of
``engine.history.entry_kinds.ENTRY_KINDS``), built from an entry's facts for one reader.

A phrase names who did what to which thing with the workflow's own words (an action's
``pretty_past_tense``, a state's, role's and resolution's pretty names), money in its currency's
minor units and dates in the reader's zone. The system's own entries read as what happened
("Office chairs is overdue since 26 Nov"). As a notification, an entry that asks something of
its reader is addressed to them ("Start review is yours: Office chairs (due 15 Dec)"); in a
history or a feed every entry reads as what happened."""

from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from engine.notify import wording
from engine.notify.sentence_facts import Waiting
from engine.notify.words import Said, Words


def _action_executed(w: Words) -> Said:
    action = w.entry.action
    spec = w.facts.spec
    asked = w.asked()
    if asked:
        return w.yours(asked)
    init = action is None or (spec is not None and action in spec.actions and spec.actions[action].trigger == "init")
    if init:
        workflow = f" {spec.pretty_name}" if spec is not None else ""
        state = w.data.get("to") or (spec.initial_state() if spec is not None else None)
        where = f" in {w.state(state)}" if state else ""
        return Said(f"{w.thing} started its{workflow} workflow{where}", action=action)
    past = w.past(action)
    text = f"{w.thing}: {past}" if w.system else f"{w.who()} {_verb_object(past, w.thing)}"
    extras = []
    resolution = wording.resolution_words(spec.actions.get(action) if spec else None, w.data.get("resolution"))
    if resolution:
        extras.append(resolution)
    before, after = w.data.get("from"), w.data.get("to")
    if after and after != before:
        extras.append(f"now {w.state(after)}")
    return Said(text + (f" ({'; '.join(extras)})" if extras else ""), action=action)


_PARTICLES = frozenset("in out up off back over down away through".split())


def _verb_object(past: str, thing: str) -> str:
    """ "approved Office chairs" and "handed in Office chairs" (a verb, or one with its
    particle, takes its object), but "started review on Office chairs", "commented on …"."""
    verb = wording.lower_first(past.strip())
    words = verb.split()
    takes_object = len(words) == 1 or (len(words) == 2 and words[1].lower() in _PARTICLES)
    if not takes_object or verb.lower() in ("commented", "replied", "voted", "objected"):
        return f"{verb} on {thing}"
    return f"{verb} {thing}"


def _role_assigned(w: Words) -> Said:
    role, players = w.data.get("role"), w.data.get("partyIds") or []
    asked = w.asked() if w.mine(players) else []
    if asked:
        return w.yours(asked)
    if not players:
        return Said(f"Nobody plays {w.role(role)} on {w.thing} yet")
    return Said(f"{w.parties(players)} became {w.role(role)} on {w.thing}")


def _role_reassigned(w: Words) -> Said:
    """ "Bob Builder became Reviewer on Office chairs (by Carol Controller)", "… in place of …",
    "… is no longer Reviewer …"; to a new player asked to act, "Approve is yours: …"."""
    role = w.role(w.data.get("role"))
    before, after = w.data.get("before") or [], w.data.get("after") or []
    added = [p for p in after if p not in before]
    removed = [p for p in before if p not in after]
    asked = w.asked() if w.mine(added) else []
    if asked:
        return w.yours(asked)
    if added:
        instead = f" in place of {w.parties(removed)}" if removed else ""
        return Said(f"{w.parties(added)} became {role} on {w.thing}{instead}{w.by()}")
    if not removed:
        return Said(f"{w.who()} changed who plays {role} on {w.thing}")
    verb = "are" if len(removed) > 1 else "is"
    return Said(f"{w.parties(removed)} {verb} no longer {role} on {w.thing}{w.by()}")


def _created(w: Words) -> Said:
    text = f"{w.who()} created {w.thing}"
    if w.entry.kind == "workflow_item_created":
        amount = wording.money(w.data.get("amount"), w.data.get("currency"))
        if amount:
            text += f" for {amount}"
    return Said(text)


def _updated(w: Words) -> Said:
    """ "Alice Analyst edited Office chairs: amount 1,450.50 EUR", or the fields changed when
    there are several ("…: amount and due date")."""
    changed = [key for key in w.data if key != "fields"]
    if len(changed) == 1:
        key = changed[0]
        value = _value(w, key, w.data[key])
        if value is not None:
            return Said(f"{w.who()} edited {w.thing}: {wording.field_words(key)} {value}")
    listed = wording.joined([wording.field_words(key) for key in changed], empty="")
    return Said(f"{w.who()} edited {w.thing}" + (f": {listed}" if listed else ""))


def _value(w: Words, key: str, value: Any) -> str | None:
    """A changed field's new value in words, for those that read well in one (None: too long)."""
    if value is None or value == "":
        return "removed" if key in ("dueDate", "billingDate", "amount", "assigneeId", "validatorId") else None
    if key == "amount":
        currency = w.data.get("currency") or (w.facts.item.currency if w.facts.item else None)
        return wording.money(value, currency or w.facts.subproject_currency)
    if key in ("dueDate", "billingDate"):
        return w.day(value)
    if key in ("assigneeId", "validatorId"):
        return w.party(value)
    if key == "amountType":
        return wording.amount_type_words(value)
    if key == "status":
        return wording.status_words(value)
    if key in ("displayName", "currency"):
        return f'"{value}"' if key == "displayName" else str(value)
    return None


def _assigned(w: Words) -> Said:
    assignee = w.data.get("assigneeId", w.data.get("assignee_id"))
    if w.addressing and assignee and assignee == w.reader.user_id:
        return Said(f"{w.thing} is assigned to you{w.by()}", addressed=True)
    return Said(f"{w.who()} assigned {w.thing} to {w.party(assignee)}")


def _closed(w: Words) -> Said:
    return Said(f"{w.who()} closed {w.thing}")


def _reordered(w: Words) -> Said:
    return Said(f"{w.who()} reordered the items of {w.thing}")


def _workflow_changed(w: Words) -> Said:
    spec = w.facts.subproject_spec
    workflow = (
        spec.pretty_name if spec is not None else wording.pretty({}, w.data.get("workflow"), default="its workflow")
    )
    return Said(f"{w.who()} moved {w.thing} to {_version(w.data.get('toVersion'))} of {workflow}")


def _version(number: object) -> str:
    return "another version" if number is None else f"version {number}"


def _granted(w: Words) -> Said:
    party, what = w.data.get("partyId"), wording.intent_words(w.data.get("intent"))
    return Said(f"{w.who()} let {w.party(party)} {what} {w.thing}")


def _revoked(w: Words) -> Said:
    party, what = w.data.get("partyId"), wording.intent_words(w.data.get("intent"))
    return Said(f"{w.who()} no longer lets {w.party(party)} {what} {w.thing}")


def _document_added(w: Words) -> Said:
    return Said(f"{w.who()} attached {_file(w)} to {w.thing}", action=w.entry.action)


def _document_removed(w: Words) -> Said:
    return Said(f"{w.who()} removed {_file(w)} from {w.thing}")


def _file(w: Words) -> str:
    name = w.data.get("fileName")
    return f'"{name}"' if name else "a document"


def _case_completed(w: Words) -> Said:
    state = w.data.get("state")
    return Said(f"{w.thing} is done" + (f": {w.state(state)}" if state else ""))


def _case_reopened(w: Words) -> Said:
    state = w.data.get("state")
    return Said(f"{w.thing} is open again" + (f": {w.state(state)}" if state else ""))


def _case_suspended(w: Words) -> Said:
    until = w.on(w.data.get("until"))
    return Said(f"{w.who()} put {w.thing} on hold" + (f" until {until}" if until else ""))


def _case_resumed(w: Words) -> Said:
    asked = w.asked()
    if asked:
        names = wording.joined(dict.fromkeys(a.name for a in asked))
        verb = "are" if len({a.name for a in asked}) > 1 else "is"
        behalf = w.for_whom(a.parties for a in asked)
        return Said(f"{w.thing} is resumed: {names} {verb} yours{w.due()}{behalf}", asked[0].action, True)
    if w.system:
        return Said(f"{w.thing} is resumed after its hold")
    return Said(f"{w.who()} resumed {w.thing}")


def _case_canceled(w: Words) -> Said:
    return Said(f"{w.who()} canceled {w.thing}")


def _case_migrated(w: Words) -> Said:
    before, after = w.data.get("fromVersion"), w.data.get("toVersion")
    workflow = w.facts.spec.pretty_name if w.facts.spec is not None else "its workflow"
    since = f" from {_version(before)}" if before is not None else ""
    return Said(f"{w.who()} moved {w.thing}{since} to {_version(after)} of {workflow}")


def _timer_failed(w: Words) -> Said:
    retry = w.at(w.data.get("retryAt"))
    again = f"; tried again {'at ' if retry and ' ' not in retry else 'on '}{retry}" if retry else ""
    if w.data.get("resumption"):
        return Said(f"{w.thing} could not be resumed from its hold{again}")
    name = wording.upper_first(w.action_name(w.entry.action))
    return Said(f"{name} on {w.thing} could not run on time{again}", action=w.entry.action)


def _reminded(w: Words) -> Said:
    since = w.on(w.data.get("enabledAt"))
    number, of = w.data.get("reminder"), w.data.get("of")
    count = f" (reminder {number} of {of})" if number and of else ""
    asked = w.asked()
    if asked:
        said = w.yours(asked, lead="Reminder: ")
        return Said(f"{said.text}, waiting since {since}" if since else said.text, said.action, True)
    name = wording.upper_first(w.action_name(w.entry.action))
    return Said(f"{name} on {w.thing} is still waiting" + (f" since {since}" if since else "") + count)


def _escalated(w: Words) -> Said:
    name, role = wording.upper_first(w.action_name(w.entry.action)), w.role(w.data.get("toRole"))
    since = w.on(w.data.get("enabledAt"))
    waited = f"{name} on {w.thing} has waited" + (f" since {since}" if since else " too long")
    players = w.facts.roles.get(w.data.get("toRole") or "", ())
    if w.addressing and w.mine(players):
        return Said(f"{waited}: you are asked to step in as {role}{w.for_whom([players])}", w.entry.action, True)
    return Said(f"{waited}; {role} is asked to step in", action=w.entry.action)


def _due(w: Words) -> Said:
    due = _date(w.data.get("dueDate"))
    asked = w.asked()
    if due is None:
        return Said(f"{w.thing} fell due")
    if due == w.reader.today:
        text = f"{w.thing} is due today"
    elif due > w.reader.today:
        text = f"{w.thing} is due {w.day(due)}"
    else:
        text = f"{w.thing} was due {w.day(due)}"
    if asked:
        return Said(f"{text}: {_yours(w, asked)}", asked[0].action, True)
    return Said(text)


def _overdue(w: Words) -> Said:
    due = _date(w.data.get("dueDate"))
    since = f" since {w.day(due + timedelta(days=1))}" if due else ""
    text = f"{w.thing} is overdue{since}"
    asked = w.asked()
    if asked:
        return Said(f"{text}: {_yours(w, asked)}", asked[0].action, True)
    return Said(text)


def _yours(w: Words, asked: list[Waiting]) -> str:
    """ "Approve is yours" (", for Alice Analyst" to a deputy)."""
    return f"{wording.joined(dict.fromkeys(a.name for a in asked))} is yours{w.for_whom(a.parties for a in asked)}"


def _date(value: Any) -> date | None:
    try:
        return date.fromisoformat(str(value)[:10]) if value else None
    except ValueError:
        return None


def _job(w: Words) -> str:
    job = w.data.get("job") if isinstance(w.data.get("job"), dict) else {}
    kind = str(job.get("kind") or "background").replace("_", " ")
    return f"the {kind} job of {w.thing}"


def _attempts(w: Words) -> int:
    job = w.data.get("job") if isinstance(w.data.get("job"), dict) else {}
    return int(job.get("attempts") or 0)


def _job_completed(w: Words) -> Said:
    attempts = _attempts(w)
    after = f" after {attempts} attempts" if attempts > 1 else ""
    return Said(wording.upper_first(f"{_job(w)} completed{after}"))


def _job_failed(w: Words) -> Said:
    error = w.data.get("error") if isinstance(w.data.get("error"), dict) else {}
    reason = f": {error['message']}" if error.get("message") else ""
    return Said(wording.upper_first(f"{_job(w)} failed{reason}"))


def _job_stalled(w: Words) -> Said:
    retry = w.at(w.data.get("retryAt"))
    again = f"; tried again {'at ' if ' ' not in retry else 'on '}{retry}" if retry else ""
    return Said(wording.upper_first(f"{_job(w)} did not get through (attempt {_attempts(w)}){again}"))


def _job_retried(w: Words) -> Said:
    return Said(f"{w.who()} put {_job(w)} back to run again")


def _job_resumed(w: Words) -> Said:
    return Said(f"{w.who()} resumed {_job(w)}")


PHRASES: dict[str, Callable[[Words], Said]] = {
    "project_created": _created,
    "project_updated": _updated,
    "project_assigned": _assigned,
    "project_closed": _closed,
    "subproject_created": _created,
    "subproject_updated": _updated,
    "subproject_assigned": _assigned,
    "subproject_closed": _closed,
    "workflow_items_reordered": _reordered,
    "subproject_workflow_changed": _workflow_changed,
    "workflow_item_created": _created,
    "workflow_item_updated": _updated,
    "workflow_item_assigned": _assigned,
    "action_executed": _action_executed,
    "role_assigned": _role_assigned,
    "role_reassigned": _role_reassigned,
    "case_completed": _case_completed,
    "case_reopened": _case_reopened,
    "case_suspended": _case_suspended,
    "case_resumed": _case_resumed,
    "case_canceled": _case_canceled,
    "case_migrated": _case_migrated,
    "timer_failed": _timer_failed,
    "action_reminded": _reminded,
    "action_escalated": _escalated,
    "workflow_item_due": _due,
    "workflow_item_overdue": _overdue,
    "document_added": _document_added,
    "document_removed": _document_removed,
    "permission_granted": _granted,
    "permission_revoked": _revoked,
    "job_completed": _job_completed,
    "job_failed": _job_failed,
    "job_stalled": _job_stalled,
    "job_retried": _job_retried,
    "job_resumed": _job_resumed,
}


def unknown(w: Words) -> Said:
    """An entry of a kind this server has no phrase for (written by a newer one): what the log
    says, in words."""
    what = w.entry.kind.replace("_", " ")
    return Said(f"{w.thing}: {what}" if w.system else f"{w.who()}: {what} on {w.thing}")


__all__ = ["PHRASES", "unknown"]
