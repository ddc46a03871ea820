"""Core layer: schema, JSON(L) IO, content-addressed store, config, constants, images, HTTP client.

Imports nothing from :mod:`memlens.construction` or :mod:`memlens.eval`."""
