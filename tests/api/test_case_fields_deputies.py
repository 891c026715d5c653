"""A state's hidden case fields and deputies (issue 48): a deputy standing in for someone who
plays a role the state names (``hidden_fields.visible_to``), themselves or through a group, sees
the fields as that person would, exactly while the deputyship holds, on both read roads; a
deputy of someone whom the state hides them from sees nothing more. Hidden ≡ missing: the
fields, the log's ``data.fields`` and the entry's hashes alike."""

from tests.api.test_case_fields_api import EXECUTE_WITH_FIELDS, GOOD, purchase, run
from tests.fixtures.deputies import HOUR, T0, name_deputy, subproject_of
from tests.fixtures.documents import ADD_MEMBER, CREATE_GROUP, CREATE_ITEM, GRANT, REASSIGN

FIELDS_AND_LOG = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { displayName case {
  fields log { edges { node { action data hash prevHash } } } } } } }"""


async def _read(gql, same, count_statements, token, item_id):
    """What ``token``'s holder reads of the item, the same on both roads; the compiled road ran
    (one statement)."""
    body = (await same(FIELDS_AND_LOG, {"id": item_id}, token))["data"]["node"]
    with count_statements() as compiled:
        await gql.raw(FIELDS_AND_LOG, {"id": item_id}, token=token)
    assert compiled.count == 1, compiled.statements
    return body


def _note(body) -> tuple[str | None, str | None, bool]:
    """(the budget note in the fields, in the submit entry's changes, whether that entry shows its hash)."""
    if body is None:
        return ("no item", "no item", False)
    submit = next(e["node"] for e in body["case"]["log"]["edges"] if e["node"]["action"] == "submit")
    change = submit["data"]["fields"].get("budget_note")
    return (body["case"]["fields"].get("budget_note"), change and change["to"], submit["hash"] is not None)


async def test_a_deputy_of_a_role_the_state_names_sees_its_hidden_fields_while_the_deputyship_holds(
    gql, make_user, same, count_statements, clock
):
    chairs, alice, admin = await purchase(gql, make_user)
    carol_id, _ = await make_user("carol")  # the CFO of Chairs herself
    frank_id, _ = await make_user("frank")  # in Finance, the CFO of Desk
    dave_id, dave = await make_user("dave")  # carol's deputy
    gina_id, gina = await make_user("gina")  # frank's deputy
    eve_id, eve = await make_user("eve")  # alice's deputy: alice requests, the state hides the note from her
    sub = await subproject_of(gql, alice, chairs["id"])
    made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub, "displayName": "Desk"}}, token=alice)
    desk = made["createWorkflowItem"]["workflowItem"]
    for item, note in ((chairs, "from Q4"), (desk, "petty cash")):
        done = await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields={**GOOD, "budget_note": note}), token=alice)
        assert done["executeAction"]["case"]["state"]["shortName"] == "review"
    finance = (await gql(CREATE_GROUP, {"name": "finance"}, token=admin))["createGroup"]["group"]["id"]
    assert (await gql(ADD_MEMBER, {"g": finance, "u": frank_id}, token=admin))["addGroupMember"]["userErrors"] == []
    for item, party in ((chairs, carol_id), (desk, finance)):
        given = {"input": {"workflowItemId": item["id"], "role": "cfo", "partyIds": [party]}}
        assert (await gql(REASSIGN, given, token=admin))["reassignRole"]["userErrors"] == []
    # dave and gina also read their item and its log through grants: they stay when the deputyship ends
    for item, user in ((chairs, dave_id), (desk, gina_id)):
        for intent in ("workflowItem.view", "workflowItem.viewHistory"):
            granted = await gql(GRANT, {"r": item["id"], "i": intent, "p": user}, token=alice)
            assert granted["grantPermission"]["userErrors"] == []
    alice_id = await _id_of(gql, alice)
    for absent, deputy in ((carol_id, dave_id), (frank_id, gina_id), (alice_id, eve_id)):
        named = await name_deputy(gql, admin, deputy, starts=T0 + HOUR, until=T0 + 2 * HOUR, user_id=absent)
        assert named["userErrors"] == [], named

    clock.set(T0 + HOUR / 2)  # before: a grant shows the item, not the note
    assert _note(await _read(gql, same, count_statements, dave, chairs["id"])) == (None, None, False)
    assert _note(await _read(gql, same, count_statements, gina, desk["id"])) == (None, None, False)
    assert _note(await _read(gql, same, count_statements, eve, chairs["id"])) == ("no item", "no item", False)

    clock.set(T0 + HOUR)  # from `from` on: each deputy sees what the one they stand in for sees
    assert _note(await _read(gql, same, count_statements, dave, chairs["id"])) == ("from Q4", "from Q4", True)
    assert _note(await _read(gql, same, count_statements, gina, desk["id"])) == ("petty cash", "petty cash", True)
    # eve reads Chairs as alice does (a requester): without the note, its change or the entry's hash
    eve_reads = await _read(gql, same, count_statements, eve, chairs["id"])
    assert _note(eve_reads) == (None, None, False)
    assert eve_reads["case"]["fields"]["vendor"] == "Acme"
    # dave stands in for the CFO of Chairs, not of Desk (Finance's): Desk stays hidden from him
    assert (await same(FIELDS_AND_LOG, {"id": desk["id"]}, dave))["data"]["node"] is None

    clock.set(T0 + 2 * HOUR)  # until is exclusive: the note is hidden again
    assert _note(await _read(gql, same, count_statements, dave, chairs["id"])) == (None, None, False)
    assert _note(await _read(gql, same, count_statements, gina, desk["id"])) == (None, None, False)


async def _id_of(gql, token) -> str:
    return (await gql("{ viewer { id } }", token=token))["viewer"]["id"]
