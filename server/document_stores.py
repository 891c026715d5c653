"""Which document store a server uses, from its settings: a directory (the default) or an
S3-compatible bucket (``CASEWAY_DOCUMENTS_STORE=s3``, the optional ``s3`` extra).

Kept apart from ``server/documents.py`` (links and downloads) so that choosing a store is one
function; ``Settings`` has already refused an S3 store without a bucket or without boto3.
"""

from typing import Any

from engine.documents.storage import DocumentStore, LocalDocumentStore, default_documents_dir


def store_for(settings: Any) -> DocumentStore:
    if settings.documents_store == "s3":
        from engine.documents.s3 import S3Store

        return S3Store(
            bucket=settings.s3_bucket, endpoint_url=settings.s3_endpoint_url or None, prefix=settings.s3_prefix
        )
    return LocalDocumentStore(settings.documents_dir or default_documents_dir(settings.database_url))


__all__ = ["store_for"]
