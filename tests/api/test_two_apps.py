"""Two apps in one process (issue 46): each keeps its own mail server, webhook endpoints and
publisher (server/wiring.py). Before, the newest ``create_app`` took the process's over: an app
with email refused EMAIL once a second app without it was made, and a spec naming the first
app's webhook endpoint was refused through it."""

import httpx

from server.app import create_app
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.documents import CREATE_PROJECT, DEFINE
from tests.fixtures.smtp import mail_settings

SET_EMAIL = """mutation($input: SetNotificationDeliveryInput!) { setNotificationDelivery(input: $input) {
  user { notificationDelivery { level channels } } userErrors { code message field } } }"""
BILLED = {
    "short_name": "billed",
    "states": {"open": {}, "done": {"terminal": True}},
    "actions": {
        "open": {"trigger": "init", "new_state": "open"},
        "bill": {
            "enabled_states": ["open"],
            "new_state": "done",
            "side_effects": [{"webhook": {"endpoint": "billing"}}],
        },
    },
}


def client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test")


async def test_two_apps_in_one_process_keep_their_own_mail_webhooks_and_publisher(db, mailbox, make_user, monkeypatch):
    endpoint = {"url": "http://127.0.0.1:9/hook", "secret": "s3cret", "timeout": 5}
    mailing = create_app(Settings(database_url=db.url, webhooks={"billing": endpoint}, **mail_settings(mailbox)), db=db)
    plain = create_app(Settings(database_url=db.url), db=db)  # the newest: no email, no endpoints
    _, ada = await make_user("ada")
    _, root = await make_user("root", admin=True)
    email = {"email": "ada@example.org", "levels": [{"level": "ASSIGNED", "channels": ["EMAIL"]}]}
    async with client(mailing) as one, client(plain) as two:
        first, second = GraphQLClient(one), GraphQLClient(two)
        chosen = (await first(SET_EMAIL, {"input": email}, token=ada))["setNotificationDelivery"]
        assert chosen["userErrors"] == [] and chosen["user"]["notificationDelivery"][0]["channels"] == ["EMAIL"]
        refused = (await second(SET_EMAIL, {"input": email}, token=ada))["setNotificationDelivery"]
        assert [e["message"] for e in refused["userErrors"]] == [
            "This server sends no email (CASEWAY_SMTP_URL is not set)."
        ]
        defined = (await first(DEFINE, {"spec": BILLED}, token=root))["defineWorkflow"]
        assert defined["userErrors"] == []
        unknown = (await second(DEFINE, {"spec": BILLED | {"short_name": "billed2"}}, token=root))["defineWorkflow"]
        assert unknown["userErrors"] and "billing" in unknown["userErrors"][0]["message"]
        heard = {"mailing": [], "plain": []}
        for name, app in (("mailing", mailing), ("plain", plain)):
            monkeypatch.setattr(app.state.hub, "publish", lambda entries, name=name: _heard(heard[name], entries))
        made = await first(CREATE_PROJECT, {"input": {"displayName": "Roads"}}, token=root)
        assert made["createProject"]["userErrors"] == []
        # the write is published to the hub of the app that made it, not to the newest app's
        assert ([e.kind for e in heard["mailing"]], heard["plain"]) == (["project_created"], [])


async def _heard(into, entries):
    into.extend(entries)
