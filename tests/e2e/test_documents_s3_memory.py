"""A 100 MB document written to the S3 store and read back keeps this process's memory flat:
hashed into a temporary file, sent one 5 MiB part at a time, read 1 MiB at a time. moto's S3
server runs in a child process here (in this one its stored bytes would count). Measured as the
growth of the peak RSS (/proc/self/status VmHWM, reset through /proc/self/clear_refs)."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.server import free_port
from tests.fixtures.s3 import S3_ENV

SIZE = 100 * 1024 * 1024
LIMIT = 20 * 1024 * 1024  # bytes of growth allowed (issue 26)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def memory_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field}")


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # peak RSS := current RSS


@pytest.fixture
def moto_process(monkeypatch) -> Iterator[str]:
    """moto's S3 server in a child process; its URL. Waits until it listens."""
    pytest.importorskip("moto.server", reason="moto is not installed (make install)")
    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
    port = free_port()
    moto = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline and moto.poll() is None, "moto's server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        moto.terminate()
        moto.wait(20)


async def test_a_100_mb_document_goes_to_s3_and_back_in_little_memory(moto_process):
    from engine.documents.s3 import S3Store

    store = S3Store(bucket="caseway-memory", endpoint_url=moto_process)
    store.client.create_bucket(
        Bucket="caseway-memory", CreateBucketConfiguration={"LocationConstraint": S3_ENV["AWS_DEFAULT_REGION"]}
    )
    block = os.urandom(256 * 1024)

    async def body():
        for index in range(SIZE // len(block)):
            yield block[:-8] + index.to_bytes(8, "big")  # no two blocks alike

    async def warm():
        yield b"warm"

    await store.write(warm(), max_bytes=10)  # boto3's transfer machinery loaded before measuring
    before = memory_kb("VmRSS")
    reset_peak()
    stored = await store.write(body(), max_bytes=SIZE)
    written = memory_kb("VmHWM") - before
    before = memory_kb("VmRSS")
    reset_peak()
    read = 0
    async for chunk in store.read(stored.key):
        read += len(chunk)
    readback = memory_kb("VmHWM") - before
    assert (stored.size, read) == (SIZE, SIZE)
    print(f"peak RSS growth: write {written / 1024:.1f} MB, read {readback / 1024:.1f} MB")
    assert written * 1024 < LIMIT, f"writing grew the peak RSS by {written} kB"
    assert readback * 1024 < LIMIT, f"reading grew the peak RSS by {readback} kB"
