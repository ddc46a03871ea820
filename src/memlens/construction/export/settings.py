"""The schema of the optional section ``export``; a configuration without the section gets
these defaults (they are declared here only)."""

from __future__ import annotations

from memlens.core.settings import Section

__all__ = ["ExportSettings"]


class ExportSettings(Section):
    """``export`` (optional): ``huggingface: false`` skips the Hugging Face dataset files."""

    huggingface: bool = True
