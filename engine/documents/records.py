"""Documents as records: attaching, removing and verifying, with their evidence in the history.

Attaching needs ``workflowItem.update`` on the item (and an open item), or executing an action
whose spec says ``attach_documents: true`` (``attach_with_action``: whoever may execute it may
attach with it). Each attachment and removal writes a ``document_added`` / ``document_removed``
entry to the item's history, in the same transaction as the row: the entry carries the file
name, size and SHA-256, so the history's hash chain vouches for what was attached, and
``verify_document`` can show the stored bytes still match.

The bytes are stored before these verbs run (``storage.DocumentStore.write``); when the
transaction rolls back they stay behind without a row and ``collect.collect_orphans`` removes
them later. Removing a document keeps its row and bytes (the history names its hash); only
admins may still download it.
"""

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError, ErrorCode, not_found
from engine.history.activity import record
from engine.people import permissions
from engine.people.actors import Actor
from engine.people.visibility import item_visible
from engine.spec.workflows import spec_of
from engine.tree.item_status import OPEN_CASE_STATUSES
from engine.tree.resources import lock
from models import Case, Document, Workflow, WorkflowItem, kind_of, new_id

from .storage import DocumentStore, StoredFile

MAX_FILE_NAME = 200  # characters of a stored file name (the extension kept)
MAX_DOCUMENTS_PER_ITEM = 200  # WorkflowItem.documents is one list: bounded
MAX_DOCUMENTS_PER_ACTION = 10  # files one executeAction may attach
FALLBACK_NAME = "document"
_UNSAFE = re.compile(r'[\\/:*?"<>|]')


def sanitize_file_name(name: str | None) -> str:
    """A name safe to show and to offer as a download: the last path part only, no control or
    format characters, no characters Windows refuses, no leading dots (hidden files), at most
    ``MAX_FILE_NAME`` characters with the extension kept; ``document`` when nothing is left."""
    text = unicodedata.normalize("NFC", name or "")
    text = re.split(r"[\\/]", text)[-1]
    text = "".join(" " if unicodedata.category(c)[0] in ("C", "Z") else c for c in text)
    text = _UNSAFE.sub("_", text)
    text = " ".join(text.split()).lstrip(".").strip()
    if len(text) > MAX_FILE_NAME:
        stem, dot, ext = text.rpartition(".")
        ext = ext[:20] if dot and stem else ""
        text = (text if not ext else stem)[: MAX_FILE_NAME - len(ext) - (1 if ext else 0)].rstrip() + (
            f".{ext}" if ext else ""
        )
    return text or FALLBACK_NAME


def _evidence(document: Document) -> dict[str, Any]:
    return {
        "documentId": document.id,
        "fileName": document.file_name,
        "size": document.size,
        "sha256": document.sha256,
        "contentType": document.content_type,
    }


async def _open_item(session: AsyncSession, *, actor: Actor, item_id: str, lock_row: bool) -> WorkflowItem:
    """The item, if the actor may change it (workflowItem.update) and it is open. Hidden ≡
    missing: NOT_FOUND for an item the actor cannot see."""
    if kind_of(item_id) != "WorkflowItem":
        raise not_found("workflow item", item_id, "workflowItemId")
    if lock_row:
        item = await lock(session, WorkflowItem, item_id, what="workflow item", field="workflowItemId")
    else:
        item = await session.get(WorkflowItem, item_id)
        if item is None:
            raise not_found("workflow item", item_id, "workflowItemId")
    await permissions.require(
        session,
        actor=actor,
        resource_id=item.id,
        intent="workflowItem.update",
        what="workflow item",
        field="workflowItemId",
    )
    status = await session.scalar(select(Case.status).where(Case.object_id == item.id))
    if status not in OPEN_CASE_STATUSES:
        raise DomainError(ErrorCode.RESOURCE_CLOSED, "The workflow item is closed; no document can change.")
    return item


async def check_may_add(session: AsyncSession, *, actor: Actor, item_id: str) -> None:
    """Refuse before any byte is stored: an upload nobody may attach is not written at all."""
    await _open_item(session, actor=actor, item_id=item_id, lock_row=False)


async def _room_for(session: AsyncSession, item_id: str, adding: int) -> None:
    count = await session.scalar(select(func.count()).select_from(Document).where(Document.workflow_item_id == item_id))
    if (count or 0) + adding > MAX_DOCUMENTS_PER_ITEM:
        raise DomainError(
            ErrorCode.TOO_MANY_DOCUMENTS,
            f"A workflow item holds at most {MAX_DOCUMENTS_PER_ITEM} documents (removed ones included).",
            ["file"],
        )


async def _attach(
    session: AsyncSession,
    *,
    actor: Actor,
    item: WorkflowItem,
    stored: StoredFile,
    file_name: str,
    case_id: str | None = None,
    action: str | None = None,
) -> Document:
    document = Document(
        id=new_id("doc"),
        workflow_item_id=item.id,
        file_name=sanitize_file_name(file_name),
        sha256=stored.sha256,
        storage_key=stored.key,
        size=stored.size,
        content_type=stored.content_type,
        added_at=SYSTEM_CLOCK.now(),
        added_by=actor.user_id,
    )
    session.add(document)
    await record(
        session,
        kind="document_added",
        actor_id=actor.user_id,
        about=item,
        case_id=case_id,
        action=action,
        data=_evidence(document),
        at=document.added_at,
    )
    return document


async def add_document(
    session: AsyncSession, *, actor: Actor, item_id: str, stored: StoredFile, file_name: str | None
) -> Document:
    """Attach stored bytes to an item the actor may update."""
    item = await _open_item(session, actor=actor, item_id=item_id, lock_row=True)
    await _room_for(session, item.id, 1)
    return await _attach(session, actor=actor, item=item, stored=stored, file_name=file_name or FALLBACK_NAME)


async def attach_with_action(
    session: AsyncSession,
    *,
    actor: Actor,
    case: Case,
    action: str,
    files: list[tuple[StoredFile, str | None]],
) -> list[Document]:
    """Attach files with an action just executed on ``case``, in its transaction (a refusal
    here rolls the action back too). Allowed when the action declares ``attach_documents``, or
    when the actor may update the item anyway; the item may have just closed (these are the
    closing action's own documents)."""
    if not files:
        return []
    if len(files) > MAX_DOCUMENTS_PER_ACTION:
        raise DomainError(
            ErrorCode.TOO_MANY_DOCUMENTS,
            f"An action attaches at most {MAX_DOCUMENTS_PER_ACTION} documents.",
            ["documents"],
        )
    workflow = await session.get(Workflow, case.workflow_id)
    assert workflow is not None  # a foreign key
    spec_action = spec_of(workflow).actions[action]
    if not spec_action.attach_documents and not await permissions.has_intent(
        session, actor=actor, resource_id=case.object_id, intent="workflowItem.update"
    ):
        raise DomainError(
            ErrorCode.NOT_ALLOWED,
            f"{spec_action.pretty_name} does not take documents, and you may not update this workflow item.",
            ["documents"],
        )
    item = await session.get(WorkflowItem, case.object_id)
    assert item is not None  # the action just ran on it
    await _room_for(session, item.id, len(files))
    return [
        await _attach(
            session,
            actor=actor,
            item=item,
            stored=stored,
            file_name=name or FALLBACK_NAME,
            case_id=case.id,
            action=action,
        )
        for stored, name in files
    ]


async def visible_document(session: AsyncSession, *, actor: Actor, id: str, field: str = "id") -> Document:
    """The document if the actor may view its item; NOT_FOUND otherwise, as for an unknown id.
    One statement: the visibility rule is part of the query."""
    if kind_of(id) != "Document":
        raise not_found("document", id, field)
    document = await session.scalar(
        select(Document)
        .join(WorkflowItem, WorkflowItem.id == Document.workflow_item_id)
        .where(Document.id == id, item_visible(actor))
    )
    if document is None:
        raise not_found("document", id, field)
    return document


def may_download(actor: Actor, document: Document) -> bool:
    """A viewer of the item may download a document until it is removed; admins always."""
    return document.removed_at is None or actor.is_admin


async def remove_document(session: AsyncSession, *, actor: Actor, id: str) -> Document:
    document = await visible_document(session, actor=actor, id=id)
    item = await _open_item(session, actor=actor, item_id=document.workflow_item_id, lock_row=True)
    await session.refresh(document, with_for_update=True)
    if document.removed_at is not None:
        raise DomainError(ErrorCode.INVALID_INPUT, "The document was already removed.", ["id"])
    document.removed_at = SYSTEM_CLOCK.now()
    document.removed_by = actor.user_id
    await record(
        session,
        kind="document_removed",
        actor_id=actor.user_id,
        about=item,
        data=_evidence(document),
        at=document.removed_at,
    )
    return document


@dataclass(frozen=True)
class DocumentCheck:
    """What re-hashing the stored bytes found."""

    document: Document
    ok: bool
    missing: bool
    expected_sha256: str
    actual_sha256: str | None
    size: int | None


async def verify_document(session: AsyncSession, store: DocumentStore, *, actor: Actor, id: str) -> DocumentCheck:
    """Re-hash a document's stored bytes: any viewer of its item may ask (removed ones too,
    since the history still names them)."""
    document = await visible_document(session, actor=actor, id=id)
    digest, size = hashlib.sha256(), 0
    try:
        async for chunk in store.read(document.storage_key or ""):
            digest.update(chunk)
            size += len(chunk)
    except FileNotFoundError:
        return DocumentCheck(document, False, True, document.sha256, None, None)
    actual = digest.hexdigest()
    return DocumentCheck(document, actual == document.sha256, False, document.sha256, actual, size)


__all__ = [
    "MAX_DOCUMENTS_PER_ACTION",
    "MAX_DOCUMENTS_PER_ITEM",
    "DocumentCheck",
    "add_document",
    "attach_with_action",
    "check_may_add",
    "may_download",
    "remove_document",
    "sanitize_file_name",
    "verify_document",
    "visible_document",
]
