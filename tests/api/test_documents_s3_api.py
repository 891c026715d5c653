"""A server configured with CASEWAY_DOCUMENTS_STORE=s3 keeps documents in the bucket: an upload
over the multipart spec lands under its hash (and the prefix), the download is byte-identical,
an identical upload is stored once, verifyDocument re-hashes the object, and a tampered object
is reported. Settings that name an incomplete S3 store are refused in one sentence. Against
moto's S3 server mode; skipped only where moto is not installed."""

import hashlib

import httpx
import pytest
from pydantic import ValidationError

from server import cli
from server.app import create_app
from server.cli_errors import CliError
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.builders import build_tree
from tests.fixtures.documents import ADD_DOCUMENT, ITEM_DOCUMENTS, REMOVE_DOCUMENT, VERIFY_DOCUMENT
from tests.fixtures.uploads import multipart

CONTRACT = b"%PDF-1.7\n" + bytes(range(256)) * 90 + b"Contract 44: scaffolding rental\n"


@pytest.fixture
async def s3_server(db, s3_endpoint):
    """The app as `caseway serve` builds it from the settings alone (no store handed in)."""
    bucket = s3_endpoint.new_bucket()
    settings = Settings(
        database_url=db.url,
        documents_store="s3",
        s3_bucket=bucket,
        s3_endpoint_url=s3_endpoint.url,
        s3_prefix="caseway/",
        max_document_bytes=64 * 1024,
    )
    app = create_app(settings, db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        yield http, GraphQLClient(http), s3_endpoint.client(), bucket


async def add(http, token, item_id, name, body):
    variables = {"input": {"workflowItemId": item_id, "file": None}}
    response = await multipart(http, ADD_DOCUMENT, variables, {"input.file": (name, body)}, token=token)
    assert response.status_code == 200, response.text
    return response.json()["data"]["addDocument"]


async def test_upload_and_download_through_a_server_with_the_s3_store(s3_server, make_user):
    http, gql, s3, bucket = s3_server
    _, owner = await make_user("owner")
    _, _, items = await build_tree(gql, owner, items=2)
    sha256 = hashlib.sha256(CONTRACT).hexdigest()

    added = await add(http, owner, items[0], "contract 44.pdf", CONTRACT)
    assert added["userErrors"] == []
    document = added["document"]
    assert (document["sha256"], document["size"], document["contentType"]) == (
        sha256,
        len(CONTRACT),
        "application/pdf",
    )
    names = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert names == [f"caseway/{sha256[:2]}/{sha256}"]
    assert s3.get_object(Bucket=bucket, Key=names[0])["Body"].read() == CONTRACT

    response = await http.get(document["url"])  # the signed link, as a browser follows it
    assert response.status_code == 200
    assert response.content == CONTRACT
    assert response.headers["etag"].strip('"') == sha256

    # The same bytes on another item: a second document, one object.
    again = await add(http, owner, items[1], "copy.pdf", CONTRACT)
    assert again["userErrors"] == [] and again["document"]["id"] != document["id"]
    assert len(s3.list_objects_v2(Bucket=bucket)["Contents"]) == 1
    listed = (await gql(ITEM_DOCUMENTS, {"id": items[1]}, token=owner))["node"]["documents"]
    assert [(d["fileName"], d["sha256"]) for d in listed] == [("copy.pdf", sha256)]

    verified = (await gql(VERIFY_DOCUMENT, {"id": document["id"]}, token=owner))["verifyDocument"]
    assert verified["verification"] == {
        "ok": True,
        "missing": False,
        "expectedSha256": sha256,
        "actualSha256": sha256,
        "actualSize": len(CONTRACT),
    }
    s3.put_object(Bucket=bucket, Key=names[0], Body=CONTRACT.replace(b"44", b"45"))  # tampered in the bucket
    tampered = (await gql(VERIFY_DOCUMENT, {"id": document["id"]}, token=owner))["verifyDocument"]["verification"]
    assert tampered["ok"] is False and tampered["actualSha256"] != sha256

    removed = (await gql(REMOVE_DOCUMENT, {"id": document["id"]}, token=owner))["removeDocument"]
    assert removed["userErrors"] == [] and removed["document"]["removed"] is True
    gone = await http.get(f"/documents/{document['id']}", headers={"Authorization": f"Bearer {owner}"})
    assert gone.status_code == 404
    assert len(s3.list_objects_v2(Bucket=bucket)["Contents"]) == 1  # the bytes stay, for the history


async def test_an_upload_over_the_limit_leaves_the_bucket_empty(s3_server, make_user):
    http, gql, s3, bucket = s3_server
    _, owner = await make_user("owner")
    _, _, items = await build_tree(gql, owner, items=1)
    refused = await add(http, owner, items[0], "scan.tiff", b"\x00" * (64 * 1024 + 1))
    assert [e["code"] for e in refused["userErrors"]] == ["TOO_LARGE"]
    assert s3.list_objects_v2(Bucket=bucket).get("Contents", []) == []


def test_an_s3_store_without_a_bucket_is_refused_in_one_sentence(monkeypatch):
    with pytest.raises(ValidationError, match="CASEWAY_S3_BUCKET"):
        Settings(documents_store="s3")
    monkeypatch.setenv("CASEWAY_DOCUMENTS_STORE", "s3")
    with pytest.raises(CliError) as refusal:
        cli._settings()
    assert str(refusal.value) == "CASEWAY_DOCUMENTS_STORE=s3 needs CASEWAY_S3_BUCKET, the bucket's name."


def test_an_s3_store_without_boto3_is_refused_in_one_sentence(monkeypatch):
    import engine.documents.s3 as s3_module

    monkeypatch.setattr(s3_module, "boto3", None)  # as where the s3 extra is not installed
    with pytest.raises(ValidationError, match=r"pip install 'caseway\[s3\]'"):
        Settings(documents_store="s3", s3_bucket="invoices")
    assert Settings(documents_store="local").documents_store == "local"  # the default store needs nothing
