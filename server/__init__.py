"""Wiring: the Starlette app, settings and the `caseway` command."""
