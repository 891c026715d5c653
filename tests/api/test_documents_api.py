"""Documents on workflow items over HTTP: multipart uploads (httpx), listing, downloads with
their headers, signed links, removal, verification and the history's evidence."""

import hashlib

import pytest

from tests.fixtures.builders import build_tree
from tests.fixtures.documents import HISTORY, ITEM_DOCUMENTS, REMOVE_DOCUMENT, VERIFY_DOCUMENT

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 40  # ~10 KB, binary
CSV = b"supplier,amount\nAcme,1200.50\n"


@pytest.fixture
async def item(docs, make_user):
    owner_id, owner = await make_user("owner")
    _, _, items = await build_tree(docs.gql, owner, items=1)
    return owner, items[0]


async def test_upload_list_and_download_byte_identical(docs, item):
    owner, item_id = item
    added = await docs.add(owner, item_id, "Invoice März.pdf", PDF)
    assert added["userErrors"] == []
    document = added["document"]
    assert document["fileName"] == "Invoice März.pdf"
    assert (document["sha256"], document["size"]) == (hashlib.sha256(PDF).hexdigest(), len(PDF))
    assert document["contentType"] == "application/pdf"
    assert document["addedBy"] == {"login": "owner"}
    assert document["removed"] is False and document["removedAt"] is None
    assert document["url"] == document["link"] and document["url"].startswith(f"/documents/{document['id']}?")

    listed = (await docs.gql(ITEM_DOCUMENTS, {"id": item_id}, token=owner))["node"]["documents"]
    assert [d["id"] for d in listed] == [document["id"]]

    response = await docs.download(f"/documents/{document['id']}", token=owner)
    assert response.status_code == 200
    assert response.content == PDF
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["etag"] == f'"{document["sha256"]}"'
    assert response.headers["content-disposition"] == (
        "attachment; filename=\"Invoice M_rz.pdf\"; filename*=UTF-8''Invoice%20M%C3%A4rz.pdf"
    )
    assert response.headers["x-content-type-options"] == "nosniff"
    again = await docs.download(f"/documents/{document['id']}", token=owner, **{"If-None-Match": response.headers["etag"]})
    assert (again.status_code, again.content) == (304, b"")
