"""Documents as clients see them: the type, addDocument, removeDocument and verifyDocument."""

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.file_uploads import Upload

from resolvers import documents
from resolvers.loaders import one
from schema.base import AppInfo, Node, UserError, by_id_prefix
from schema.execution import context_only

if TYPE_CHECKING:
    from schema.identity import User


@strawberry.type(
    description="A file attached to a workflow item: its name, size, type and SHA-256, and a link to download it."
)
class Document(Node):
    file_name: str
    sha256: str = strawberry.field(description="SHA-256 of the bytes, hex; also the download's ETag.")
    size: int = strawberry.field(description="Bytes.")
    content_type: str = strawberry.field(description="Sniffed from the bytes when recognized, else from the name.")
    added_at: datetime
    removed_at: datetime | None

    is_type_of = by_id_prefix("Document")

    @strawberry.field(
        description="A download link on this server (GET; signed for you, valid a few minutes); null when you may "
        "not download it (removed, unless you are an admin)."
    )
    @context_only
    def url(self, info: AppInfo) -> str | None:
        return documents.url_of(info.context, self)

    @strawberry.field(description="The same as url.")
    @context_only
    def link(self, info: AppInfo) -> str | None:
        return documents.url_of(info.context, self)

    @strawberry.field(description="Removed by removeDocument: listed, and in the history, but no longer served.")
    def removed(self) -> bool:
        return self.removed_at is not None

    @strawberry.field
    @context_only
    def added_by(self, info: AppInfo) -> Annotated["User", strawberry.lazy("schema.identity")] | None:
        return one(info.context.loaders.party_by_id, self.added_by)  # type: ignore[attr-defined]


@strawberry.input
class AddDocumentInput:
    workflow_item_id: strawberry.ID
    file: Upload = strawberry.field(description='The file, sent as a multipart request (docs/api.md "Documents").')
    file_name: str | None = strawberry.field(default=None, description="Default: the uploaded file's name.")


@strawberry.type
class AddDocumentPayload:
    document: Document | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class RemoveDocumentInput:
    id: strawberry.ID


@strawberry.type
class RemoveDocumentPayload:
    document: Document | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.type(description="What re-hashing a document's stored bytes found.")
class DocumentVerification:
    ok: bool = strawberry.field(description="The stored bytes hash to the recorded SHA-256.")
    missing: bool = strawberry.field(description="No stored bytes were found.")
    expected_sha256: str = strawberry.field(description="The SHA-256 recorded when it was added.")
    actual_sha256: str | None = strawberry.field(description="The SHA-256 of the stored bytes; null when missing.")
    actual_size: int | None = strawberry.field(description="Bytes stored; null when missing.")


@strawberry.type
class VerifyDocumentPayload:
    document: Document | None = None
    verification: DocumentVerification | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def add_document(info: AppInfo, input: AddDocumentInput) -> AddDocumentPayload:
    document, errors = await documents.add_document(
        info.context, item_id=str(input.workflow_item_id), upload=input.file, file_name=input.file_name
    )
    return AddDocumentPayload(document=document, user_errors=errors)  # type: ignore[arg-type]


async def remove_document(info: AppInfo, input: RemoveDocumentInput) -> RemoveDocumentPayload:
    document, errors = await documents.remove_document(info.context, id=str(input.id))
    return RemoveDocumentPayload(document=document, user_errors=errors)  # type: ignore[arg-type]


async def verify_document(info: AppInfo, id: strawberry.ID) -> VerifyDocumentPayload:
    check, errors = await documents.verify_document(info.context, id=str(id))
    if check is None:
        return VerifyDocumentPayload(user_errors=errors)  # type: ignore[arg-type]
    verification = DocumentVerification(
        ok=check.ok,
        missing=check.missing,
        expected_sha256=check.expected_sha256,
        actual_sha256=check.actual_sha256,
        actual_size=check.size,
    )
    return VerifyDocumentPayload(document=check.document, verification=verification)  # type: ignore[arg-type]


verify_document_field = strawberry.field(
    resolver=verify_document,
    description="Re-hash a document's stored bytes and compare them with the SHA-256 recorded (and in the "
    "history) when it was added. Anyone who may view its workflow item may ask.",
)
