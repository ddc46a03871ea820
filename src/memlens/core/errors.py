"""Errors that end a stage with one clear message (file, item, field) instead of a traceback."""

from __future__ import annotations


class MemLensError(Exception):
    """Base class: the CLI prints ``str(exc)`` and exits with status 2."""


class SchemaError(MemLensError):
    """A record or file does not follow the schema."""


class DataError(MemLensError):
    """A data file is missing, unreadable or not valid JSON/JSONL."""


class ImageError(MemLensError):
    """An image is missing, corrupt, too large, or its path escapes the data folder."""

    def __init__(self, path: object, reason: str, item: str | None = None):
        self.path = str(path)
        self.reason = reason
        self.item = item
        where = f" (item {item})" if item else ""
        super().__init__(f"image {self.path}{where}: {reason}")

    def __reduce__(self):  # picklable across worker processes
        return (type(self), (self.path, self.reason, self.item))


class ConfigError(MemLensError):
    """The configuration is invalid (unknown option, missing key, bad value)."""


class GateError(MemLensError):
    """A validity gate of the benchmark failed. The validity report that says so is the stage's result:
    it is kept (:func:`memlens.core.outputs.guard_outputs`)."""

    keeps_outputs = True
