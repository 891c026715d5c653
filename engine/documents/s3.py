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
import hashlib
import os
import re
import tempfile
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

CHUNK_BYTES = 1 << 20  # what one read of a download asks S3 for, and one thread hop reads
PART_BYTES = 8 << 20  # boto3's managed transfer: multipart above this, in parts of this size
_SHA256 = re.compile(r"[0-9a-f]{64}")

try:
    import boto3
    from boto3.s3.transfer import TransferConfig
    from botocore.exceptions import ClientError
except ImportError:  # the s3 extra is not installed; S3Store says so when it is asked for
    boto3 = None


def available() -> bool:
    return boto3 is not None


class S3Store:
    """Content-addressed objects ``{prefix}{sha256[:2]}/{sha256}`` in ``bucket``.

    Region and credentials come from the standard AWS sources (``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, ``~/.aws``, an instance role), as for any
    boto3 program; ``endpoint_url`` points at a store other than AWS.
    """

    def __init__(
        self,
        *,
        bucket: str,
        endpoint_url: str | None = None,
        prefix: str = "",
        spool_dir: str | os.PathLike[str] | None = None,
        client: Any = None,
    ) -> None:
        if boto3 is None:
            raise RuntimeError("The S3 document store needs boto3: pip install 'caseway[s3]'")
        if not bucket:
            raise ValueError("The S3 document store needs a bucket (CASEWAY_S3_BUCKET)")
        self.bucket = bucket
        self.prefix = prefix
        self.spool_dir = spool_dir
        # A boto3 client is thread-safe (a resource is not): one serves every worker thread.
        self.client = client or boto3.client("s3", endpoint_url=endpoint_url or None)
        self.transfer = TransferConfig(multipart_threshold=PART_BYTES, multipart_chunksize=PART_BYTES)

    def key(self, sha256: str) -> str:
        if not _SHA256.fullmatch(sha256):
            raise ValueError(f"not a SHA-256: {sha256!r}")
        return f"{self.prefix}{sha256[:2]}/{sha256}"

    async def write(self, chunks: AsyncIterable[bytes], *, max_bytes: int) -> tuple[str, int]:
        """Stores the bytes of ``chunks``; returns their SHA-256 (hex) and size. More than
        ``max_bytes`` raises TooLarge and stores nothing."""
        digest = hashlib.sha256()
        size = 0
        with tempfile.TemporaryFile(dir=self.spool_dir) as spool:
            async for chunk in chunks:
                size += len(chunk)
                if size > max_bytes:
                    raise TooLarge(max_bytes)
                digest.update(chunk)
                spool.write(chunk)
            sha256 = digest.hexdigest()
            if not await self.exists(sha256):
                spool.seek(0)
                await asyncio.to_thread(
                    self.client.upload_fileobj, spool, self.bucket, self.key(sha256), Config=self.transfer
                )
        return sha256, size

    async def exists(self, sha256: str) -> bool:
        try:
            await asyncio.to_thread(self.client.head_object, Bucket=self.bucket, Key=self.key(sha256))
        except ClientError as error:
            if _missing(error):
                return False
            raise
        return True

    async def read(self, sha256: str) -> AsyncIterator[bytes]:
        """The stored bytes, ``CHUNK_BYTES`` at a time; FileNotFoundError when there are none."""
        try:
            answer = await asyncio.to_thread(self.client.get_object, Bucket=self.bucket, Key=self.key(sha256))
        except ClientError as error:
            if _missing(error):
                raise FileNotFoundError(sha256) from None
            raise
        body = answer["Body"]
        try:
            while chunk := await asyncio.to_thread(body.read, CHUNK_BYTES):
                yield chunk
        finally:
            body.close()

    async def delete(self, sha256: str) -> None:
        """Removes the object; deleting what is not there is not an error (as S3 has it)."""
        await asyncio.to_thread(self.client.delete_object, Bucket=self.bucket, Key=self.key(sha256))


def _missing(error: Any) -> bool:
    return error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound")


class TooLarge(Exception):
    """Placeholder until engine/documents/storage.py lands: its own refusal replaces this."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"larger than {max_bytes} bytes")
        self.max_bytes = max_bytes
