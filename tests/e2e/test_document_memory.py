"""Uploading and downloading a 100 MB document through a real server process keeps its memory
flat: the body is spooled to disk by the multipart parser and copied into the store in chunks,
and a download streams from the store. Measured as the growth of the process's peak RSS
(/proc/<pid>/status VmHWM, reset through /proc/<pid>/clear_refs before each transfer)."""

import hashlib
import json
import os
from pathlib import Path

import httpx
import pytest

from tests.fixtures.builders import build_tree
from tests.fixtures.documents import ADD_DOCUMENT
from tests.fixtures.live import LiveServer

SIZE = 100 * 1024 * 1024
LIMIT = 20 * 1024 * 1024  # bytes of growth allowed (issue 26)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # peak RSS := current RSS


def big_file(path: Path) -> str:
    block = os.urandom(1024 * 1024)
    digest = hashlib.sha256()
    with path.open("wb") as out:
        for index in range(SIZE // len(block)):
            chunk = block[:-8] + index.to_bytes(8, "big")  # no two blocks alike
            out.write(chunk)
            digest.update(chunk)
    return digest.hexdigest()


@pytest.fixture
def server(database, tmp_path):
    started = LiveServer(database.url, documents_dir=str(tmp_path / "store"), max_document_bytes=str(SIZE + 1024))
    yield started
    started.stop()


async def test_a_100_mb_upload_and_download_keep_the_server_rss_flat(server, db, make_user, tmp_path, capsys):
    _, owner = await make_user("owner")
    _, _, items = await build_tree(server.gql, owner, items=1)
    source = tmp_path / "big.bin"
    expected = big_file(source)
    pid = server.process.pid
    headers = {"Authorization": f"Bearer {owner}"}

    async with httpx.AsyncClient(base_url=server.http, timeout=300) as client:

        async def upload(name: str, body) -> dict:  # type: ignore[no-untyped-def]
            operations = json.dumps(
                {"query": ADD_DOCUMENT, "variables": {"input": {"workflowItemId": items[0], "file": None}}}
            )
            response = await client.post(
                "/graphql",
                data={"operations": operations, "map": json.dumps({"0": ["variables.input.file"]})},
                files={"0": (name, body, "application/octet-stream")},
                headers=headers,
            )
            assert response.status_code == 200, response.text[:500]
            return response.json()["data"]["addDocument"]

        await upload("warm.txt", b"warm up the code paths")
        reset_peak(pid)
        before = memory_kb(pid, "VmRSS")
        with source.open("rb") as body:
            added = await upload("big.bin", body)
        upload_growth = memory_kb(pid, "VmHWM") - before
        assert added["userErrors"] == [] and added["document"]["sha256"] == expected
        assert added["document"]["size"] == SIZE

        reset_peak(pid)
        before = memory_kb(pid, "VmRSS")
        digest, received = hashlib.sha256(), 0
        async with client.stream("GET", f"/documents/{added['document']['id']}", headers=headers) as response:
            assert response.status_code == 200
            async for chunk in response.aiter_bytes():
                digest.update(chunk)
                received += len(chunk)
        download_growth = memory_kb(pid, "VmHWM") - before
    assert (received, digest.hexdigest()) == (SIZE, expected)
    with capsys.disabled():
        print(f"\n100 MB: peak RSS +{upload_growth / 1024:.1f} MB upload, +{download_growth / 1024:.1f} MB download")
    assert upload_growth * 1024 < LIMIT, f"upload grew the server's RSS by {upload_growth} kB"
    assert download_growth * 1024 < LIMIT, f"download grew the server's RSS by {download_growth} kB"
