"""`server.asgi:app` for uvicorn (and its worker processes)."""

from server.app import create_app

app = create_app()
