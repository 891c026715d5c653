"""Documents through the API: an uploaded file is streamed into the store (hashed as it is
read), then recorded in its own transaction (engine/documents/records.py).

Starlette's multipart parser has already spooled each file to a temporary file (in memory up to
1 MB, on disk beyond), so a file is never held whole in memory; the request body as a whole is
bounded by BodyLimit (CASEWAY_MAX_BODY_BYTES + CASEWAY_MAX_DOCUMENT_BYTES). Each file is copied
into the store in chunks and refused (TOO_LARGE) as soon as it passes the document limit,
before any row is written; the partial copy is deleted.
"""

from collections.abc import AsyncIterator
from typing import Any

from engine.documents import records
from engine.documents.storage import CHUNK, StoredFile, TooLarge
from engine.errors import DomainError, ErrorCode
from resolvers.context import Context
from resolvers.errors import UserErrorRow, user_errors
from resolvers.mutations import run


def _refused(code: ErrorCode, message: str, field: str) -> list[UserErrorRow]:
    return user_errors(DomainError(code, message, [field]))


async def _chunks(upload: Any) -> AsyncIterator[bytes]:
    while chunk := await upload.read(CHUNK):
        yield chunk


async def store_uploads(ctx: Context, uploads: list[Any], field: str) -> tuple[list[StoredFile], list[UserErrorRow]]:
    """Stream each upload into the store. A value that is not a file (a plain string in the
    variables), or a file past the limit, is refused; files already stored for this request are
    left to collection (no row names them)."""
    documents = ctx.documents
    stored: list[StoredFile] = []
    for upload in uploads:
        if not callable(getattr(upload, "read", None)):
            return [], _refused(ErrorCode.INVALID_INPUT, "Send the file as a multipart upload.", field)
        try:
            stored.append(
                await documents.store.write(
                    _chunks(upload), max_bytes=documents.max_bytes, file_name=getattr(upload, "filename", None)
                )
            )
        except TooLarge:
            return [], _refused(
                ErrorCode.TOO_LARGE,
                f"The file is larger than the limit of {documents.max_bytes} bytes; nothing was stored.",
                field,
            )
    return stored, []


def upload_name(upload: Any) -> str | None:
    return getattr(upload, "filename", None)


async def stored_for_action(
    ctx: Context, uploads: list[Any] | None
) -> tuple[list[tuple[StoredFile, str | None]], list[UserErrorRow]]:
    """executeAction's documents, stored before its transaction; attached in it, or, when the
    action is refused, left to collection."""
    if not uploads:
        return [], []
    if len(uploads) > records.MAX_DOCUMENTS_PER_ACTION:
        message = f"An action attaches at most {records.MAX_DOCUMENTS_PER_ACTION} documents."
        return [], _refused(ErrorCode.TOO_MANY_DOCUMENTS, message, "documents")
    stored, errors = await store_uploads(ctx, uploads, "documents")
    return [(s, upload_name(u)) for s, u in zip(stored, uploads, strict=False)], errors


async def add_document(ctx: Context, *, item_id: str, upload: Any, file_name: str | None) -> tuple[Any, list[Any]]:
    actor = ctx.viewer
    try:  # refused before a byte is stored: no file for someone who may not attach one
        async with ctx.db.read_session() as session:
            await records.check_may_add(session, actor=actor, item_id=item_id)
    except DomainError as error:
        return None, user_errors(error)
    stored, errors = await store_uploads(ctx, [upload], "file")
    if errors:
        return None, errors
    name = file_name if file_name is not None else upload_name(upload)
    return await run(
        ctx, lambda s, a: records.add_document(s, actor=a, item_id=item_id, stored=stored[0], file_name=name)
    )


async def remove_document(ctx: Context, *, id: str) -> tuple[Any, list[Any]]:
    return await run(ctx, lambda s, a: records.remove_document(s, actor=a, id=id))


async def verify_document(ctx: Context, *, id: str) -> tuple[records.DocumentCheck | None, list[Any]]:
    actor = ctx.viewer
    try:
        async with ctx.db.read_session() as session:
            check = await records.verify_document(session, ctx.documents.store, actor=actor, id=id)
    except DomainError as error:
        return None, user_errors(error)
    return check, []


def url_of(ctx: Context, document: Any) -> str | None:
    """A signed download link for the viewer; null when they may not download it (removed)."""
    actor = ctx.viewer
    if document.storage_key is None or not records.may_download(actor, document):
        return document.link if document.storage_key is None else None
    return ctx.documents.link(document.id, actor.user_id)
