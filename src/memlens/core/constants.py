"""Facts shared by every layer, each defined once."""
from __future__ import annotations

#: the package version (also what ``memlens --version`` prints and manifests record)
VERSION = "0.1.0"
