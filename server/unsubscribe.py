"""``/unsubscribe``: the signed link every email carries (engine/notify/mail.py).

A POST (what a mail client's one-click unsubscribe sends, RFC 8058, or the page's button) turns
email off for the link's levels at once. A GET only shows that button: mail scanners fetch the
links of the messages they check, and a fetch must not unsubscribe anybody. A link whose
signature does not hold gets 404 and changes nothing, whatever it names.
"""

from html import escape

from starlette.requests import Request
from starlette.responses import HTMLResponse

from engine.clock import SYSTEM_CLOCK
from engine.notify import delivery, mail
from models import Database, User

_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Caseway email</title></head>
<body style="font-family: sans-serif; max-width: 36em; margin: 3em auto">{body}</body></html>"""
_INVALID = "<p>This unsubscribe link is not valid. Choose how you are notified in Caseway itself.</p>"


def _page(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(_PAGE.format(body=body), status_code=status)


def unsubscribe_endpoint(db: Database):  # type: ignore[no-untyped-def]
    async def unsubscribe(request: Request) -> HTMLResponse:
        signed = mail.verify_unsubscribe(request.query_params)
        if signed is None:
            return _page(_INVALID, 404)
        user_id, levels = signed
        named = escape(", ".join(levels))
        if request.method == "GET":
            async with db.read_session() as session:
                user = await session.get(User, user_id)
            if user is None:
                return _page(_INVALID, 404)
            return _page(
                f"<p>Stop email about {named} notifications for {escape(user.display_name)}?</p>"
                '<form method="post"><button type="submit">Unsubscribe</button></form>'
                "<p>You will still see them in Caseway.</p>"
            )
        async with db.transaction() as session:
            if await session.get(User, user_id) is None:
                return _page(_INVALID, 404)
            await delivery.unsubscribe(session, user_id=user_id, levels=levels, now=SYSTEM_CLOCK.now())
        return _page(f"<p>Done: no more email about {named} notifications. You still see them in Caseway.</p>")

    return unsubscribe
