"""Thin adapters between the schema and the engine: context, loaders, reads, mutation runner."""
