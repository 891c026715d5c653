"""Documents over HTTP: the store a server uses, signed download links, and ``GET /documents/{id}``.

A download checks the viewer's right to view the document's item on every request, whoever
asks: a bearer token (Authorization header) or a signed link. A signed link (``Document.url``)
names the document, the user it was made for and when it expires, with an HMAC of the three
under a key derived from ``CASEWAY_SECRET_KEY``. Without one, from a random key that `caseway
serve` makes for its workers (``SERVE_LINK_KEY``), so a link one worker made downloads from
another; a process started otherwise makes its own, and its links work only there. It lets a browser download without a
header, for ``LINK_SECONDS``; the user is re-checked (not disabled, still allowed to view).

Answers: 401 without valid credentials (the same for every id); 404, one body, for an unknown
document, one the viewer may not see, and a removed one (admins still get removed ones); else
the bytes as an attachment with the recorded type, ``nosniff`` and the SHA-256 as ETag; a type
a browser would run as a page (HTML, SVG, XML) also gets a sandboxing Content-Security-Policy, in
case it is opened in place despite the attachment (an uploaded page's scripts never run with the
server's origin).
"""

import asyncio
import hashlib
import hmac
import logging
import os
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from sqlalchemy import select
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from engine.clock import SYSTEM_CLOCK, Clock
from engine.documents import records
from engine.documents.collect import DEFAULT_GRACE, Collection, collect_orphans
from engine.documents.storage import DocumentStore
from engine.errors import DomainError
from engine.people import identity
from engine.people.actors import Actor
from engine.people.oidc_identities import SignInRefused
from models import Database, User, utcnow
from server import document_stores
from server.request_limits import error_response

SERVE_LINK_KEY = "CASEWAY_SERVE_LINK_KEY"
"""Not a setting: the environment variable through which `caseway serve` hands its workers one
random link key when no ``CASEWAY_SECRET_KEY`` is set."""

log = logging.getLogger("caseway.documents")

# Types a browser renders as an active document; their downloads run nothing, load nothing.
ACTIVE_TYPES = frozenset({"text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml"})
SANDBOX = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"

LINK_SECONDS = 300  # how long a signed download link works


def store_for(settings: Any) -> DocumentStore:
    """The store the settings name: a directory (CASEWAY_DOCUMENTS_DIR) or an S3 bucket."""
    return document_stores.store_for(settings)


class DocumentService:
    """What the API needs of documents: the store, the size limit, and signed links."""

    def __init__(self, settings: Any, *, store: DocumentStore | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.store = store or store_for(settings)
        self.max_bytes: int = settings.max_document_bytes
        self.clock = clock
        secret = (settings.secret_key or os.environ.get(SERVE_LINK_KEY) or secrets.token_hex(32)).encode()
        self._key = hmac.new(secret, b"caseway document links", hashlib.sha256).digest()

    def _signature(self, document_id: str, user_id: str, expires: int) -> str:
        message = f"{document_id}\n{user_id}\n{expires}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def link(self, document_id: str, user_id: str) -> str:
        """A download link for ``user_id``, relative to the server, valid for LINK_SECONDS."""
        expires = int(self.clock.now().timestamp()) + LINK_SECONDS
        signature = self._signature(document_id, user_id, expires)
        return f"/documents/{document_id}?user={quote(user_id)}&exp={expires}&sig={signature}"

    def signed_user(self, document_id: str, params: Any) -> str | None:
        """The user a link was signed for, if its signature holds and it has not expired."""
        user_id, expires, signature = params.get("user", ""), params.get("exp", ""), params.get("sig", "")
        if not (user_id and expires.isdigit() and len(expires) < 12 and signature):
            return None
        expected = self._signature(document_id, user_id, int(expires))
        if not hmac.compare_digest(signature.encode(), expected.encode()):  # bytes: any text compares
            return None
        return user_id if int(expires) > self.clock.now().timestamp() else None


def content_disposition(file_name: str) -> str:
    """attachment, with an ASCII fallback name and the exact one in RFC 5987's filename*."""
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\;%' else "_" for c in file_name) or "document"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(file_name, safe='')}"


NOT_FOUND_MESSAGE = "No such document."


def download_endpoint(db: Database, documents: DocumentService, credentials: Any) -> Any:
    """GET /documents/{id}: the bytes, for a bearer token (server/credentials.py resolves it, as
    for /graphql) or a signed link."""

    async def download(request: Request) -> Response:
        document_id = request.path_params["id"]
        actor = await _actor(request, db, documents, credentials, document_id)
        if isinstance(actor, SignInRefused):  # the identity provider's keys could not be read
            return error_response(503, actor.message, "UNAVAILABLE")
        if actor is None:
            response = error_response(401, "Sign in (a bearer token) or use a fresh link.", "UNAUTHENTICATED")
            response.headers["www-authenticate"] = "Bearer"
            return response
        try:
            async with db.read_session() as session:
                document = await records.visible_document(session, actor=actor, id=document_id)
        except DomainError:
            return error_response(404, NOT_FOUND_MESSAGE)
        if not records.may_download(actor, document):
            return error_response(404, NOT_FOUND_MESSAGE)
        etag = f'"{document.sha256}"'
        headers = {
            "etag": etag,
            "content-disposition": content_disposition(document.file_name),
            "x-content-type-options": "nosniff",
            "cache-control": "private, no-cache",
        }
        if document.content_type.split(";")[0].strip().lower() in ACTIVE_TYPES:
            headers["content-security-policy"] = SANDBOX
        if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
            return Response(status_code=304, headers=headers)
        if not await documents.store.exists(document.storage_key or ""):
            log.error("document %s: stored bytes %s are missing", document.id, document.storage_key)
            return error_response(404, NOT_FOUND_MESSAGE)
        # No Content-Length: the recorded size would be wrong for bytes changed on disk
        # (verifyDocument tells), and a response that breaks its own length is cut off mid-way.
        return StreamingResponse(
            documents.store.read(document.storage_key or ""), media_type=document.content_type, headers=headers
        )

    return download


async def _actor(request: Request, db: Database, documents: DocumentService, credentials: Any, document_id: str) -> Any:
    header = request.headers.get("authorization", "")
    if header:
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        checked = await credentials.resolve(token.strip())
        if isinstance(checked, SignInRefused) and checked.unavailable:
            return checked
        actor = checked if isinstance(checked, Actor) else None  # a TokenProblem or a refused provider token
        expired = actor is not None and actor.expires_at is not None and actor.expires_at <= utcnow()
        return None if expired else actor
    user_id = documents.signed_user(document_id, request.query_params)
    if user_id is None:
        return None
    async with db.read_session() as session:
        user = await session.scalar(select(User).where(User.id == user_id, User.disabled.is_(False)))
        if user is None:
            return None
        return await identity.actor_for(session, user_id=user.id, login=user.login, is_admin=user.is_admin)


COLLECT_INTERVAL = 3600.0  # seconds between a server's collections of unreferenced files


async def collect(db: Database, store: DocumentStore, *, grace: timedelta = DEFAULT_GRACE) -> Collection:
    """One pass of orphan collection (engine/documents/collect.py) on a read session."""
    async with db.read_session() as session:
        return await collect_orphans(session, store, now=utcnow(), grace=grace)


async def collect_forever(db: Database, store: DocumentStore, *, interval: float = COLLECT_INTERVAL) -> None:
    """A server's background collection: a failed pass is logged and retried at the next one."""
    while True:
        await asyncio.sleep(interval)
        try:
            done = await collect(db, store)
        except Exception:
            log.exception("collecting unreferenced document files failed")
            continue
        if done.deleted:
            log.info("collected %d unreferenced document files", len(done.deleted))
