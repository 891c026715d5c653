"""Email bodies from Jinja2 templates (``engine/notify/templates/``): every message is a
text part and an HTML part of the same content (multipart/alternative), so a reader whose client
shows only text misses nothing.

The templates are read through ``PackageLoader`` (an installed package finds them beside this
module; pyproject.toml ships them). HTML is autoescaped, so an item named ``<b>Tiles & Co</b>``
reads as those characters, never as markup; the text templates are not escaped, a text part has
no markup to break. ``StrictUndefined``: a template that names what its caller did not give fails
the message loudly (the job records the error) instead of rendering an empty hole.
"""

from email.message import EmailMessage
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape


@cache
def environment() -> Environment:
    return Environment(
        loader=PackageLoader("engine.notify", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html",), disabled_extensions=("txt",), default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(name: str, context: dict[str, Any]) -> tuple[str, str]:
    """``name.txt`` and ``name.html`` rendered with ``context``: (text, html)."""
    env = environment()
    text = env.get_template(f"{name}.txt").render(context)
    html = env.get_template(f"{name}.html").render(context)
    return text, html


def fill(message: EmailMessage, text: str, html: str) -> None:
    """The two parts, text first: RFC 2046 puts the richest alternative last."""
    message.set_content(text)
    message.add_alternative(html, subtype="html")


__all__ = ["environment", "fill", "render"]
