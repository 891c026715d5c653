"""The HTTP side of bounded work and of client mistakes: a body limit enforced while the body
streams in, errors as JSON GraphQL errors with a code."""

import orjson
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The codes of the HTTP refusals, in a GraphQL error's extensions.
HTTP_CODES = {400: "BAD_REQUEST", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 413: "REQUEST_TOO_LARGE"}


def error_response(status: int, message: str, code: str | None = None) -> Response:
    """A refusal before any GraphQL ran, shaped as GraphQL errors are, so clients read one format."""
    body = {"errors": [{"message": message, "extensions": {"code": code or HTTP_CODES.get(status, "BAD_REQUEST")}}]}
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


class _BodyTooLarge(Exception):
    pass


class BodyLimit:
    """Refuses (413) a request body longer than ``max_bytes``: at once when Content-Length says
    so, else as soon as the bytes received pass the limit — a body that lies about its length,
    or sends none, is never read whole."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLarge
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except _BodyTooLarge:
            if started:  # cannot happen with a view that reads its body first; nothing more to say
                raise
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(413, f"The request body is larger than {self.max_bytes} bytes.")
        response.headers["connection"] = "close"  # the rest of the body is not read
        await response(scope, receive, send)


__all__ = ["HTTP_CODES", "BodyLimit", "error_response"]
