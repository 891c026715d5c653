"""engine.get_user_actions counts privileges held on the case's item (engine/cases/execution.py): dave
plays no role but holds workflowItem.update, so he may annotate; eve, with view only, may not.
Written for mutants that survived `make mutants` (bench/MUTANTS.md)."""

import engine
from engine.people import permissions
from models import Case
from tests.fixtures.builders import bug_case

MEMO = {
    "short_name": "memo",
    "roles": {"author": {"callbacks": ["creation_user"]}},
    "states": {"open": {}, "signed": {"terminal": True}},
    "actions": {
        "annotate": {"allowed_roles": ["author"], "privileges": ["workflowItem.update"], "always_enabled": True},
        "sign": {"allowed_roles": ["author"], "enabled_states": ["open"], "new_state": "signed"},
    },
}


async def test_a_privilege_on_the_item_lets_a_non_player_act(db, make_actor):
    owner, dave, eve = await make_actor("owner"), await make_actor("dave"), await make_actor("eve")
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=MEMO)
    _, (case,) = await bug_case(db, owner, owner, workflow="memo")
    async with db.transaction() as s:
        item_id = (await s.get(Case, case.id)).object_id
        for party, intents in ((dave, ("workflowItem.view", "workflowItem.update")), (eve, ("workflowItem.view",))):
            for intent in intents:
                await permissions.grant_raw(s, resource_id=item_id, intent=intent, party_id=party.user_id)
    async with db.session() as s:

        async def actions(actor):
            return sorted(ea.action for ea in await engine.get_user_actions(s, case_id=case.id, actor=actor))

        assert await actions(owner) == ["annotate", "sign"]
        assert await actions(dave) == ["annotate"]
        assert await actions(eve) == []
