"""Documents in an S3-compatible bucket (AWS S3, MinIO, Ceph, …): the store for deployments whose
server processes run on several machines, where a local directory would be one machine's alone.

The optional ``s3`` extra brings boto3 (``pip install 'caseway[s3]'``). boto3 is synchronous, so
every call to it runs in a worker thread and the event loop never waits on the network. An upload
is hashed while it is written to a temporary file — never held whole in memory — and then sent
with boto3's managed transfer (a multipart upload above ``PART_BYTES``) under its content address,
unless an object is there already under that address: identical files are stored once. The
temporary file is the price of content addressing on S3, which can neither rename an object nor
learn its key after the upload began.
"""

import asyncio
import re
import tempfile
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from .storage import Hasher, StoredFile, StoredKey

CHUNK_BYTES = 1 << 20  # what one read of a download asks S3 for, and one thread hop reads
# boto3's managed transfer: multipart above this, in parts of this size (S3's smallest), one part
# in flight at a time. boto3 holds each part it sends in memory (and copies of it), so an upload
# costs a few parts of memory whatever the file's size: a 100 MB upload to moto's server grew the
# process's peak RSS by 17 MB this way, by 25 MB with two parts in flight and by 60 MB with
# boto3's defaults (8 MiB parts, ten in flight and ten read ahead).
PART_BYTES = 5 << 20
PARTS_IN_FLIGHT = 1
COPY_LIMIT = 5 << 30  # the largest object S3 copies in one request
_SHA256 = re.compile(r"[0-9a-f]{64}")

try:
    import boto3
    from boto3.s3.transfer import TransferConfig
    from botocore.exceptions import ClientError
except ImportError:  # the s3 extra is not installed; Settings refuses CASEWAY_DOCUMENTS_STORE=s3
    boto3 = None


def available() -> bool:
    return boto3 is not None


class S3Store:
    """Content-addressed objects ``{prefix}{sha256[:2]}/{sha256}`` in ``bucket``; the store's key
    (``StoredFile.key``) is the SHA-256 alone, so moving to another prefix or bucket changes no
    document row.

    Region and credentials come from the standard AWS sources (``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, ``~/.aws``, an instance role), as for any
    boto3 program; ``endpoint_url`` points at an S3-compatible service other than AWS.
    """

    def __init__(
        self,
        *,
        bucket: str,
        endpoint_url: str | None = None,
        prefix: str = "",
        client: Any = None,
    ) -> None:
        if boto3 is None:
            raise RuntimeError("The S3 document store needs boto3: pip install 'caseway[s3]'")
        if not bucket:
            raise ValueError("The S3 document store needs a bucket (CASEWAY_S3_BUCKET)")
        self.bucket = bucket
        self.prefix = prefix
        # A boto3 client is thread-safe (a resource is not): one serves every worker thread.
        self.client = client or boto3.client("s3", endpoint_url=endpoint_url or None)
        self.transfer = TransferConfig(
            multipart_threshold=PART_BYTES, multipart_chunksize=PART_BYTES, max_concurrency=PARTS_IN_FLIGHT
        )
        # s3transfer's own bound on parts read ahead into memory (10 by default; boto3's
        # TransferConfig does not take it as an argument).
        self.transfer.max_in_memory_upload_chunks = PARTS_IN_FLIGHT

    def object_name(self, key: str) -> str:
        if not _SHA256.fullmatch(key):
            raise FileNotFoundError(key)  # never an object outside the store's own names
        return f"{self.prefix}{key[:2]}/{key}"

    async def write(self, chunks: AsyncIterable[bytes], *, max_bytes: int, file_name: str | None = None) -> StoredFile:
        hasher = Hasher(max_bytes)
        # Unlinked at once by the OS: nothing is left behind, even by a killed process.
        with await asyncio.to_thread(tempfile.TemporaryFile) as spool:
            async for chunk in chunks:
                if not chunk:
                    continue
                hasher.update(chunk)  # TooLarge here: nothing was sent
                await asyncio.to_thread(spool.write, chunk)
            stored = hasher.result(hasher.digest.hexdigest(), file_name)
            name = self.object_name(stored.key)
            if stored.size > COPY_LIMIT or not await self._touch(name):
                await asyncio.to_thread(spool.seek, 0)
                await asyncio.to_thread(self.client.upload_fileobj, spool, self.bucket, name, Config=self.transfer)
        return stored

    async def _touch(self, name: str) -> bool:
        """Whether the object is stored already; if so it is copied onto itself, so that its time
        is this write's and collection's grace period covers this upload's transaction too."""
        try:
            await asyncio.to_thread(
                self.client.copy_object,
                Bucket=self.bucket,
                Key=name,
                CopySource={"Bucket": self.bucket, "Key": name},
                MetadataDirective="REPLACE",
            )
        except ClientError as error:
            if _missing(error):
                return False
            raise
        return True

    async def exists(self, key: str) -> bool:
        try:
            name = self.object_name(key)
            await asyncio.to_thread(self.client.head_object, Bucket=self.bucket, Key=name)
        except FileNotFoundError:
            return False
        except ClientError as error:
            if _missing(error):
                return False
            raise
        return True

    async def read(self, key: str) -> AsyncIterator[bytes]:
        name = self.object_name(key)
        try:
            answer = await asyncio.to_thread(self.client.get_object, Bucket=self.bucket, Key=name)
        except ClientError as error:
            if _missing(error):
                raise FileNotFoundError(key) from None
            raise
        body = answer["Body"]
        try:
            while chunk := await asyncio.to_thread(body.read, CHUNK_BYTES):
                yield chunk
        finally:
            body.close()

    async def delete(self, key: str) -> None:
        """Removes the object; deleting what is not there is not an error (as S3 has it)."""
        try:
            name = self.object_name(key)
        except FileNotFoundError:
            return
        await asyncio.to_thread(self.client.delete_object, Bucket=self.bucket, Key=name)

    async def keys(self) -> AsyncIterator[StoredKey]:
        """Every stored object under the prefix, a page of at most 1,000 at a time. Objects that
        are not this store's (other names under the prefix) are left out, so collection never
        deletes them. There are no temporary objects: an upload spools to a local file."""
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix)
        iterator = iter(pages)
        while (page := await asyncio.to_thread(next, iterator, None)) is not None:
            for entry in page.get("Contents", []):
                key = entry["Key"][len(self.prefix) :].rpartition("/")[2]
                if _SHA256.fullmatch(key) and entry["Key"] == f"{self.prefix}{key[:2]}/{key}":
                    yield StoredKey(key, entry["LastModified"])


def _missing(error: Any) -> bool:
    return error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound")


__all__ = ["S3Store", "available"]
