"""The HTTP side of bounded work and of client mistakes: a body limit enforced while the body
streams in, errors as JSON GraphQL errors with a code."""

import json

import orjson
from cross_web import HTTPException
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The codes of the HTTP refusals, in a GraphQL error's extensions.
HTTP_CODES = {
    400: "BAD_REQUEST",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "REQUEST_TOO_LARGE",
    503: "UNAVAILABLE",
}


# Levels a JSON body (or a GET's variables) may nest: the envelope, input objects and a JSON
# scalar's own 20 (schema/input_guard.py) fit well within it. Checked after parsing, so that the
# limit is this one whatever the interpreter's parser allows (Python 3.11's refused 1,000 levels
# by its recursion limit, 3.12's reads them).
MAX_JSON_NESTING = 100


def too_deep(value: object, limit: int = MAX_JSON_NESTING) -> bool:
    """Whether a parsed JSON value nests lists and objects more than ``limit`` deep; iterative,
    and bounded by the body's size."""
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def decode_json(data: str | bytes) -> object:
    """A body or WebSocket message as JSON: json (not orjson, which reads integers beyond 64 bits
    as floats), its every failure a client's mistake, malformed (``json.JSONDecodeError``, which
    strawberry answers), or refused with a sentence (400): not UTF-8, nested past the bound, or a
    number too long to convert."""
    too_deeply = f"The JSON is nested too deeply: at most {MAX_JSON_NESTING} levels."
    try:
        value = json.loads(data)
    except json.JSONDecodeError:
        raise
    except UnicodeDecodeError:  # a ValueError too: told apart before the digit limit's
        raise HTTPException(400, "The body is not UTF-8 text, as JSON must be.") from None
    except RecursionError:
        raise HTTPException(400, too_deeply) from None
    except ValueError:
        raise HTTPException(400, "The JSON has a number too long to read.") from None
    if too_deep(value):
        raise HTTPException(400, too_deeply)
    return value


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

    def __init__(self, app: ASGIApp, max_bytes: int, upload_bytes: int = 0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.upload_bytes = upload_bytes

    def limit_of(self, scope: Scope, headers: Headers) -> int:
        """A GraphQL multipart request (file uploads: addDocument, executeAction's documents) may
        carry ``upload_bytes`` of files on top of the usual limit; every other body is held to it."""
        multipart = headers.get("content-type", "").lower().startswith("multipart/form-data")
        return self.max_bytes + (self.upload_bytes if multipart and scope.get("path") == "/graphql" else 0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        limit = self.limit_of(scope, headers)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, limit)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
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
            await self._refuse(scope, receive, send, limit)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        response = error_response(413, f"The request body is larger than {limit} bytes.")
        response.headers["connection"] = "close"  # the rest of the body is not read
        await response(scope, receive, send)


__all__ = ["HTTP_CODES", "BodyLimit", "error_response"]


def unreadable_form(refusal: StarletteHTTPException) -> str:
    """One sentence for a multipart body Starlette refused ("Invalid multipart data."), from
    python-multipart's reason where it has one."""
    cause: BaseException | None = refusal
    while cause is not None and type(cause).__name__ != "MultipartParseError":
        cause = cause.__cause__ or cause.__context__
    if cause is not None and "header size" in str(cause):
        return "The multipart body could not be read: a part's header, its file name included, is at most 4,224 bytes."
    reason = f" ({cause})" if cause is not None else ""
    return f"The multipart body could not be read: it is not valid multipart/form-data{reason}."
