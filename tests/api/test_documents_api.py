"""Documents on workflow items over HTTP: multipart uploads (a real httpx client), listing,
downloads and their headers, signed links, removal, verification, and the history's evidence."""

import hashlib
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from engine.documents.collect import collect_orphans
from models import Document, utcnow
from tests.fixtures.builders import build_tree
from tests.fixtures.documents import (
    ADD_DOCUMENT,
    CREATE_ITEM,
    DEFINE,
    EXECUTE_WITH_DOCUMENTS,
    GRANT,
    ITEM_DOCUMENTS,
    NODE_ID,
    REMOVE_DOCUMENT,
    VERIFY_DOCUMENT,
    VERIFY_INTACT,
)
from tests.fixtures.uploads import TEST_LIMIT

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 40  # ~10 KB, binary
CSV = b"supplier,amount\nAcme,1200.50\n"
UNKNOWN = "doc_01JDZZZZZZZZZZZZZZZZZZZZZZ"

ITEM_HISTORY = """query($id: ID!) { node(id: $id) { ... on WorkflowItem {
  history(first: 50) { edges { node { kind action data actor { login } } } } } } }"""


@pytest.fixture
async def people(make_user):
    """owner (created the tree), viewer (workflowItem.view only), stranger (nothing), admin."""
    return {name: await make_user(name, admin=name == "admin") for name in ("owner", "viewer", "stranger", "admin")}


@pytest.fixture
async def item(docs, people):
    _, owner = people["owner"]
    project, _, items = await build_tree(docs.gql, owner, items=1)
    await docs.gql(GRANT, {"r": project["id"], "i": "project.view", "p": people["viewer"][0]}, token=owner)
    for intent in ("workflowItem.view", "workflowItem.viewHistory"):
        await docs.gql(GRANT, {"r": items[0], "i": intent, "p": people["viewer"][0]}, token=owner)
    return items[0]


async def rows(db) -> int:
    async with db.session() as s:
        return await s.scalar(select(func.count()).select_from(Document)) or 0


async def history(docs, token, item_id):
    edges = (await docs.gql(ITEM_HISTORY, {"id": item_id}, token=token))["node"]["history"]["edges"]
    return [e["node"] for e in edges]


async def test_upload_list_and_download_byte_identical(docs, people, item):
    owner = people["owner"][1]
    added = await docs.add(owner, item, "Invoice März.pdf", PDF)
    assert added["userErrors"] == []
    document = added["document"]
    assert document["fileName"] == "Invoice März.pdf"
    assert (document["sha256"], document["size"]) == (hashlib.sha256(PDF).hexdigest(), len(PDF))
    assert document["contentType"] == "application/pdf"
    assert document["addedBy"] == {"login": "owner"}
    assert document["removed"] is False and document["removedAt"] is None
    assert document["url"] == document["link"] and document["url"].startswith(f"/documents/{document['id']}?")

    csv = (await docs.add(owner, item, "budget.csv", CSV, fileName="Budget 2026.csv"))["document"]
    assert (csv["fileName"], csv["contentType"]) == ("Budget 2026.csv", "text/csv")
    listed = (await docs.gql(ITEM_DOCUMENTS, {"id": item}, token=people["viewer"][1]))["node"]["documents"]
    assert [d["fileName"] for d in listed] == ["Invoice März.pdf", "Budget 2026.csv"]

    response = await docs.download(f"/documents/{document['id']}", token=people["viewer"][1])
    assert response.status_code == 200
    assert response.content == PDF
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["etag"] == f'"{document["sha256"]}"'
    assert response.headers["content-disposition"] == (
        "attachment; filename=\"Invoice M_rz.pdf\"; filename*=UTF-8''Invoice%20M%C3%A4rz.pdf"
    )
    assert response.headers["x-content-type-options"] == "nosniff"
    etag = {"If-None-Match": response.headers["etag"]}
    again = await docs.download(f"/documents/{document['id']}", token=owner, **etag)
    assert (again.status_code, again.content) == (304, b"")


async def test_the_history_carries_the_hash_and_still_verifies(docs, people, item):
    owner, admin = people["owner"][1], people["admin"][1]
    document = (await docs.add(owner, item, "contract.pdf", PDF))["document"]
    added = [e for e in await history(docs, owner, item) if e["kind"] == "document_added"]
    assert added == [
        {
            "kind": "document_added",
            "action": None,
            "actor": {"login": "owner"},
            "data": {
                "documentId": document["id"],
                "fileName": "contract.pdf",
                "size": len(PDF),
                "sha256": hashlib.sha256(PDF).hexdigest(),
                "contentType": "application/pdf",
            },
        }
    ]
    await docs.gql(REMOVE_DOCUMENT, {"id": document["id"]}, token=owner)
    report = (await docs.gql(VERIFY_INTACT, {"id": item}, token=admin))["verifyHistory"]
    assert report["userErrors"] == [] and report["report"]["intact"] is True
    kinds = [e["kind"] for e in await history(docs, owner, item)]
    assert kinds[-2:] == ["document_added", "document_removed"]


async def test_who_may_upload_and_refusals_store_nothing(docs, db, people, item):
    viewer, stranger = people["viewer"][1], people["stranger"][1]
    refused = await docs.add(viewer, item, "x.txt", b"viewer's file")
    assert refused["document"] is None
    assert [e["code"] for e in refused["userErrors"]] == ["NOT_ALLOWED"]
    hidden = await docs.add(stranger, item, "x.txt", b"stranger's file")
    missing = await docs.add(stranger, "wfi_01JDZZZZZZZZZZZZZZZZZZZZZZ", "x.txt", b"stranger's file")
    assert [e["code"] for e in hidden["userErrors"]] == ["NOT_FOUND"]
    assert hidden["userErrors"][0]["message"].replace(item, "ID") == missing["userErrors"][0]["message"].replace(
        "wfi_01JDZZZZZZZZZZZZZZZZZZZZZZ", "ID"
    )
    assert await rows(db) == 0
    assert docs.stored_files() == []  # refused before a byte was stored


async def test_downloads_hidden_and_missing_are_the_same_404(docs, people, item):
    owner, stranger = people["owner"][1], people["stranger"][1]
    document = (await docs.add(owner, item, "plan.pdf", PDF))["document"]
    hidden = await docs.download(f"/documents/{document['id']}", token=stranger)
    missing = await docs.download(f"/documents/{UNKNOWN}", token=stranger)
    malformed = await docs.download("/documents/not-an-id", token=stranger)
    assert hidden.status_code == missing.status_code == malformed.status_code == 404
    assert hidden.content == missing.content == malformed.content
    assert set(hidden.headers) == set(missing.headers)
    # Someone who cannot view the item also gets no link from the API: the node is null.
    node = await docs.gql(NODE_ID, {"id": document["id"]}, token=stranger)
    assert node == {"node": None}
    # The same for someone who sees items of their own: a document is hidden with its item.
    _, _, own_items = await build_tree(docs.gql, stranger, items=1)
    own = (await docs.add(stranger, own_items[0], "mine.csv", CSV))["document"]
    nodes = {key: (await docs.gql(NODE_ID, {"id": key}, token=stranger))["node"] for key in (document["id"], own["id"])}
    assert nodes == {document["id"]: None, own["id"]: {"id": own["id"]}}
    anonymous = await docs.download(f"/documents/{document['id']}")
    assert anonymous.status_code == 401 and anonymous.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    bad_token = await docs.download(f"/documents/{document['id']}", token="nonsense")
    assert bad_token.status_code == 401


async def test_signed_link_works_without_a_header_then_expires(docs, people, item):
    owner, viewer = people["owner"][1], people["viewer"][1]
    document = (await docs.add(owner, item, "photo.pdf", PDF))["document"]
    listed = (await docs.gql(ITEM_DOCUMENTS, {"id": item}, token=viewer))["node"]["documents"]
    url = listed[0]["url"]
    assert "sig=" in url and "exp=" in url and url != document["url"]  # signed for the viewer, not the owner
    response = await docs.download(url)
    assert (response.status_code, response.content) == (200, PDF)

    tampered = url.replace("exp=", "exp=9")
    assert (await docs.download(tampered)).status_code == 401
    unsigned, signature = url.split("&sig=")
    for wrong in (
        f"{unsigned}&sig=ü",
        f"{unsigned}&sig=",
        unsigned,
        f"{unsigned.replace('exp=', 'exp=x')}&sig={signature}",
    ):
        assert (await docs.download(wrong)).status_code == 401, wrong
    other_document = url.replace(document["id"], UNKNOWN)
    assert (await docs.download(other_document)).status_code == 401  # the signature names the document

    docs.clock.advance(299)
    assert (await docs.download(url)).status_code == 200
    docs.clock.advance(2)
    expired = await docs.download(url)
    assert expired.status_code == 401


async def test_a_signed_link_rechecks_the_right_to_view(docs, db, people, item):
    owner, viewer = people["owner"][1], people["viewer"][1]
    await docs.add(owner, item, "memo.pdf", PDF)
    url = (await docs.gql(ITEM_DOCUMENTS, {"id": item}, token=viewer))["node"]["documents"][0]["url"]
    revoke = """mutation($r: ID!, $p: ID!) { revokePermission(input: {resourceId: $r, intent: "workflowItem.view",
      partyId: $p}) { userErrors { code } } }"""
    assert (await docs.gql(revoke, {"r": item, "p": people["viewer"][0]}, token=owner))["revokePermission"] == {
        "userErrors": []
    }
    assert (await docs.download(url)).status_code == 404


async def test_an_oversize_upload_is_refused_with_nothing_stored(docs, db, people, item):
    owner = people["owner"][1]
    just_over = await docs.add(owner, item, "big.bin", b"x" * (TEST_LIMIT + 1))
    assert just_over["document"] is None
    (error,) = just_over["userErrors"]
    assert error["code"] == "TOO_LARGE" and f"limit of {TEST_LIMIT} bytes" in error["message"]
    assert await rows(db) == 0 and docs.stored_files() == []

    # Beyond what a multipart body may carry at all: refused while it streams in (413).
    from tests.fixtures.documents import ADD_DOCUMENT

    variables = {"input": {"workflowItemId": item, "file": None}}
    huge = await docs.multipart(
        ADD_DOCUMENT, variables, {"input.file": ("huge.bin", b"y" * (TEST_LIMIT + 1_100_000))}, token=owner
    )
    assert huge.status_code == 413 and huge.json()["errors"][0]["extensions"]["code"] == "REQUEST_TOO_LARGE"
    assert await rows(db) == 0 and docs.stored_files() == []

    exact = await docs.add(owner, item, "exact.bin", b"z" * TEST_LIMIT)
    assert exact["userErrors"] == [] and exact["document"]["size"] == TEST_LIMIT


async def test_a_json_body_is_not_allowed_to_grow(docs, people):
    """Only multipart bodies get room for a file: a JSON body is held to CASEWAY_MAX_BODY_BYTES."""
    response = await docs.http.post(
        "/graphql",
        content=b'{"query": "{ __typename }", "x": "' + b"a" * 1_000_001 + b'"}',
        headers={"content-type": "application/json", "Authorization": f"Bearer {people['owner'][1]}"},
    )
    assert response.status_code == 413


async def test_a_file_given_as_a_plain_value_is_refused(docs, people, item):
    from tests.fixtures.documents import ADD_DOCUMENT

    body = await docs.gql.raw(
        ADD_DOCUMENT, {"input": {"workflowItemId": item, "file": "text"}}, token=people["owner"][1]
    )
    assert [e["code"] for e in body["data"]["addDocument"]["userErrors"]] == ["INVALID_INPUT"]


async def test_file_names_are_sanitized(docs, people, item):
    owner = people["owner"][1]
    document = (await docs.add(owner, item, "x.txt", CSV, fileName="../../etc/\x07pass\twd\u202e.csv"))["document"]
    assert document["fileName"] == "pass wd .csv"
    long = (await docs.add(owner, item, "y.txt", CSV, fileName="a" * 500 + ".pdf"))["document"]
    assert long["fileName"] == "a" * 196 + ".pdf"
    dots = (await docs.add(owner, item, "...", CSV))["document"]
    assert dots["fileName"] == "document"
    windows = (await docs.add(owner, item, "C:\\Users\\ada\\scan:1.pdf", PDF))["document"]
    assert windows["fileName"] == "scan_1.pdf"


async def test_identical_files_are_stored_once(docs, db, people, item):
    owner = people["owner"][1]
    _, _, others = await build_tree(docs.gql, owner, items=1)
    first = (await docs.add(owner, item, "a.pdf", PDF))["document"]
    second = (await docs.add(owner, others[0], "b.pdf", PDF))["document"]
    assert first["id"] != second["id"] and first["sha256"] == second["sha256"]
    assert await rows(db) == 2 and len(docs.stored_files()) == 1


async def test_remove_stops_the_link_for_all_but_admins(docs, people, item):
    owner, viewer, admin = people["owner"][1], people["viewer"][1], people["admin"][1]
    document = (await docs.add(owner, item, "draft.pdf", PDF))["document"]
    await docs.add(owner, item, "final.csv", CSV)
    assert (await docs.gql(REMOVE_DOCUMENT, {"id": document["id"]}, token=viewer))["removeDocument"]["userErrors"][0][
        "code"
    ] == "NOT_ALLOWED"
    removed = (await docs.gql(REMOVE_DOCUMENT, {"id": document["id"]}, token=owner))["removeDocument"]
    assert removed["userErrors"] == []
    assert removed["document"]["removed"] is True and removed["document"]["removedAt"] is not None
    assert removed["document"]["url"] is None and removed["document"]["link"] is None

    for token in (owner, viewer):
        assert (await docs.download(f"/documents/{document['id']}", token=token)).status_code == 404
    assert (await docs.download(document["url"])).status_code == 404  # the owner's earlier link too
    listed = (await docs.gql(ITEM_DOCUMENTS, {"id": item}, token=admin))["node"]["documents"]
    # In the order they were added, a removed document in its place.
    assert [(d["fileName"], d["removed"]) for d in listed] == [("draft.pdf", True), ("final.csv", False)]
    as_admin = listed[0]
    assert as_admin["url"] is not None
    assert (await docs.download(as_admin["url"])).content == PDF

    again = (await docs.gql(REMOVE_DOCUMENT, {"id": document["id"]}, token=owner))["removeDocument"]
    assert [e["code"] for e in again["userErrors"]] == ["INVALID_INPUT"]
    entries = [e for e in await history(docs, owner, item) if e["kind"] == "document_removed"]
    assert [(e["actor"]["login"], e["data"]["sha256"]) for e in entries] == [("owner", document["sha256"])]


async def test_verify_document_reports_tampering_and_missing_bytes(docs, people, item):
    owner, stranger = people["owner"][1], people["stranger"][1]
    document = (await docs.add(owner, item, "deed.pdf", PDF))["document"]
    ok = (await docs.gql(VERIFY_DOCUMENT, {"id": document["id"]}, token=people["viewer"][1]))["verifyDocument"]
    assert ok["verification"] == {
        "ok": True,
        "missing": False,
        "expectedSha256": document["sha256"],
        "actualSha256": document["sha256"],
        "actualSize": len(PDF),
    }
    (stored,) = docs.stored_files()
    stored.write_bytes(PDF.replace(b"PDF-1.7", b"PDF-1.8"))
    bad = (await docs.gql(VERIFY_DOCUMENT, {"id": document["id"]}, token=owner))["verifyDocument"]["verification"]
    assert bad["ok"] is False and bad["missing"] is False
    assert bad["expectedSha256"] == document["sha256"] != bad["actualSha256"]
    assert bad["actualSha256"] == hashlib.sha256(PDF.replace(b"PDF-1.7", b"PDF-1.8")).hexdigest()
    stored.unlink()
    gone = (await docs.gql(VERIFY_DOCUMENT, {"id": document["id"]}, token=owner))["verifyDocument"]["verification"]
    assert (gone["ok"], gone["missing"], gone["actualSha256"]) == (False, True, None)
    assert (await docs.download(f"/documents/{document['id']}", token=owner)).status_code == 404

    hidden = (await docs.gql(VERIFY_DOCUMENT, {"id": document["id"]}, token=stranger))["verifyDocument"]
    assert hidden["verification"] is None and [e["code"] for e in hidden["userErrors"]] == ["NOT_FOUND"]


def paper_spec(short_name: str) -> dict:
    """submit takes documents (attach_documents); note does not."""
    return {
        "short_name": short_name,
        "roles": {"clerk": {"callbacks": ["item_assignee"]}},
        "states": {"open": {}, "submitted": {}, "filed": {"terminal": True}},
        "actions": {
            "open": {"trigger": "init", "new_state": "open"},
            "submit": {
                "allowed_roles": ["clerk"],
                "enabled_states": ["open"],
                "new_state": "submitted",
                "attach_documents": True,
            },
            "note": {"allowed_roles": ["clerk"], "always_enabled": True},
            "file": {"allowed_roles": ["clerk"], "enabled_states": ["submitted"], "new_state": "filed"},
        },
    }


@pytest.fixture
async def paper_item(docs, people, make_user):
    """An item of the paper workflow whose clerk (its assignee) holds no grant at all."""
    admin, owner = people["admin"][1], people["owner"][1]
    defined = (await docs.gql(DEFINE, {"spec": paper_spec("paper")}, token=admin))["defineWorkflow"]
    assert defined["userErrors"] == []
    clerk_id, clerk = await make_user("clerk")
    _, sub, _ = await build_tree(docs.gql, owner, items=0, workflow="paper")
    made = await docs.gql(
        CREATE_ITEM,
        {"input": {"subprojectId": sub["id"], "displayName": "Invoice", "assigneeId": clerk_id}},
        token=owner,
    )
    return clerk, made["createWorkflowItem"]["workflowItem"]["id"]


async def execute(docs, token, item_id, action, files):
    variables = {"input": {"workflowItemId": item_id, "action": action, "documents": [None] * len(files)}}
    paths = {f"input.documents.{i}": f for i, f in enumerate(files)}
    if not files:
        return (await docs.gql(EXECUTE_WITH_DOCUMENTS, variables, token=token))["executeAction"]
    return (await docs.upload(EXECUTE_WITH_DOCUMENTS, variables, paths, token=token))["executeAction"]


async def test_execute_action_attaches_documents_atomically(docs, db, people, paper_item):
    clerk, item_id = paper_item
    done = await execute(docs, clerk, item_id, "submit", [("invoice.pdf", PDF), ("lines.csv", CSV)])
    assert done["userErrors"] == []
    assert done["case"]["state"]["shortName"] == "submitted"
    assert [(d["fileName"], d["addedBy"]["login"]) for d in done["documents"]] == [
        ("invoice.pdf", "clerk"),
        ("lines.csv", "clerk"),
    ]
    entries = await history(docs, clerk, item_id)
    assert [(e["kind"], e["action"]) for e in entries[-3:]] == [
        ("action_executed", "submit"),
        ("document_added", "submit"),
        ("document_added", "submit"),
    ]
    download = await docs.download(done["documents"][1]["url"])
    assert download.content == CSV


async def test_an_action_refused_attaches_nothing_and_its_files_are_collected(docs, db, people, paper_item):
    clerk, item_id = paper_item
    # "note" does not take documents and the clerk may not update the item: the whole action is refused.
    refused = await execute(docs, clerk, item_id, "note", [("note.pdf", PDF)])
    assert [e["code"] for e in refused["userErrors"]] == ["NOT_ALLOWED"]
    assert refused["userErrors"][0]["field"] == ["documents"]
    # Not enabled: refused before any document is looked at.
    await execute(docs, clerk, item_id, "submit", [])
    not_enabled = await execute(docs, clerk, item_id, "submit", [("late.csv", CSV)])
    assert [e["code"] for e in not_enabled["userErrors"]] == ["ACTION_NOT_ENABLED"]
    entries = await history(docs, clerk, item_id)
    assert [e["action"] for e in entries if e["kind"] == "action_executed"] == ["open", "submit"]
    assert await rows(db) == 0
    assert len(docs.stored_files()) == 2  # written before the transaction, orphaned by its rollback

    async with db.read_session() as s:
        young = await collect_orphans(s, docs.service.store, now=utcnow(), grace=timedelta(hours=1))
        assert young.deleted == [] and young.kept == 2
        old = await collect_orphans(s, docs.service.store, now=utcnow() + timedelta(hours=2))
    assert sorted(old.deleted) == sorted([hashlib.sha256(PDF).hexdigest(), hashlib.sha256(CSV).hexdigest()])
    assert docs.stored_files() == []


async def test_an_updater_may_attach_with_any_action(docs, people, paper_item):
    owner = people["owner"][1]
    _, item_id = paper_item
    comment = {"input": {"workflowItemId": item_id, "action": "note", "documents": [None]}}
    # The owner holds workflowItem.update (but plays no role: it may not run "note")...
    refused = await docs.upload(EXECUTE_WITH_DOCUMENTS, comment, {"input.documents.0": ("a.csv", CSV)}, token=owner)
    assert [e["code"] for e in refused["executeAction"]["userErrors"]] == ["NOT_ALLOWED"]
    assert refused["executeAction"]["userErrors"][0]["field"] == ["action"]
    # ... the admin may run it, and attach with it though "note" does not take documents.
    done = await execute(docs, people["admin"][1], item_id, "note", [("a.csv", CSV)])
    assert done["userErrors"] == [] and [d["fileName"] for d in done["documents"]] == ["a.csv"]


@pytest.mark.parametrize(
    ("value", "trigger", "message"),
    [
        ("yes", "user", "must be true or false"),
        (True, "auto", "only a USER action can attach documents"),
    ],
)
async def test_attach_documents_is_checked_when_a_workflow_is_defined(docs, people, value, trigger, message):
    spec = paper_spec("checked")
    spec["actions"]["submit"]["attach_documents"] = value
    spec["actions"]["submit"]["trigger"] = trigger
    if trigger == "auto":
        del spec["actions"]["submit"]["allowed_roles"]
    defined = (await docs.gql(DEFINE, {"spec": spec}, token=people["admin"][1]))["defineWorkflow"]
    assert defined["workflow"] is None
    errors = defined["userErrors"]
    assert any(e["code"] == "INVALID_SPEC" and message in e["message"] for e in errors), errors
    assert any(e["field"][-1] == "attach_documents" for e in errors), errors


async def test_listing_documents_of_many_items_is_one_query(docs, people, count_statements):
    owner = people["owner"][1]
    _, sub, items = await build_tree(docs.gql, owner, items=4)
    for item_id in items:
        await docs.add(owner, item_id, "a.csv", CSV + item_id.encode())
    query = """query($id: ID!) { node(id: $id) { ... on Subproject { workflowItems(first: 10) { edges { node {
      documents { fileName size url addedBy { login } } } } } } } }"""
    await docs.gql(query, {"id": sub["id"]}, token=owner)  # warm: definitions cached
    with count_statements() as counted:
        data = await docs.gql(query, {"id": sub["id"]}, token=owner)
    edges = data["node"]["workflowItems"]["edges"]
    assert [len(e["node"]["documents"]) for e in edges] == [1, 1, 1, 1]
    with count_statements() as one_item:
        await docs.gql(query.replace("first: 10", "first: 1"), {"id": sub["id"]}, token=owner)
    assert counted.count == one_item.count  # documents (one query) and their adders (one), whatever the items


async def test_a_closed_item_takes_no_document_and_an_item_holds_a_bounded_number(docs, db, people, item, monkeypatch):
    owner = people["owner"][1]
    monkeypatch.setattr("engine.documents.records.MAX_DOCUMENTS_PER_ITEM", 2)
    for name in ("one.csv", "two.csv"):
        assert (await docs.add(owner, item, name, CSV + name.encode()))["userErrors"] == []
    third = await docs.add(owner, item, "three.csv", CSV)
    assert [e["code"] for e in third["userErrors"]] == ["TOO_MANY_DOCUMENTS"]
    assert "at most 2 documents" in third["userErrors"][0]["message"]

    cancel = """mutation($id: ID!) { cancelCase(input: {workflowItemId: $id}) { userErrors { code } } }"""
    assert (await docs.gql(cancel, {"id": item}, token=owner))["cancelCase"]["userErrors"] == []
    monkeypatch.setattr("engine.documents.records.MAX_DOCUMENTS_PER_ITEM", 200)
    closed = await docs.add(owner, item, "late.csv", CSV)
    assert [e["code"] for e in closed["userErrors"]] == ["RESOURCE_CLOSED"]
    listed = (await docs.gql(ITEM_DOCUMENTS, {"id": item}, token=owner))["node"]["documents"]
    removal = (await docs.gql(REMOVE_DOCUMENT, {"id": listed[0]["id"]}, token=owner))["removeDocument"]
    assert [e["code"] for e in removal["userErrors"]] == ["RESOURCE_CLOSED"]
    assert await rows(db) == 2


async def test_the_cost_of_a_query_counts_each_item_s_documents_at_their_bound(docs, people):
    owner = people["owner"][1]
    _, sub, _ = await build_tree(docs.gql, owner, items=1)
    query = """query($id: ID!) { node(id: $id) { ... on Subproject { workflowItems(first: 10) { edges { node {
      documents { id } } } } } } }"""
    body = await docs.gql.raw(query, {"id": sub["id"]}, token=owner)
    assert not body.get("errors")
    assert body["extensions"]["cost"]["requested"] == 1 + 10 + 10 * 200  # node, items, their documents


async def test_a_page_or_a_drawing_is_downloaded_sandboxed(docs, people, item):
    """Issue 40, finding 7: an uploaded HTML or SVG opened in place must not run with the
    server's origin; other types keep their plain answer."""
    owner = people["owner"][1]
    page = await docs.add(owner, item, "invoice.html", b"<html><script>fetch('/graphql')</script></html>")
    drawing = await docs.add(owner, item, "plan.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script/></svg>')
    pdf = await docs.add(owner, item, "invoice.pdf", PDF)

    answers = {}
    for added in (page, drawing, pdf):
        document = added["document"]
        response = await docs.download(f"/documents/{document['id']}", token=owner)
        assert response.status_code == 200
        answers[document["contentType"]] = response.headers.get("content-security-policy")

    sandbox = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    assert answers == {"text/html": sandbox, "image/svg+xml": sandbox, "application/pdf": None}


async def test_a_file_name_of_five_thousand_characters_is_a_json_error(docs, people, item):
    """Issue 40, finding 7: it got a plain-text 400 from the form parser."""
    response = await docs.multipart(
        ADD_DOCUMENT,
        {"input": {"workflowItemId": item, "file": None}},
        {"input.file": ("n" * 5000 + ".pdf", PDF)},
        token=people["owner"][1],
    )

    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {
        "errors": [
            {
                "message": "The multipart body could not be read: a part's header, its file name included, is at "
                "most 4,224 bytes.",
                "extensions": {"code": "BAD_REQUEST"},
            }
        ]
    }
    assert docs.stored_files() == []
