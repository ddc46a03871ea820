"""The schema of the section ``export`` (``conf/export/default.yaml``; a configuration without the
section gets these defaults, declared here only)."""

from __future__ import annotations

from memlens.core.settings import NonNegInt, Section

__all__ = ["ExportSettings"]


class ExportSettings(Section):
    """``export``: ``huggingface: false`` skips the Hugging Face dataset files.

    ``flat_images: true`` writes every image into one folder under its content hash,
    ``release_images/images/<sha256>.<ext>``, and the items' ``file`` fields name those files, so
    that no path tells an evidence image from a haystack image (the official layout, the default,
    sorts them into ``needle_images/`` and ``haystack_images/``: a label of the format for scoring,
    which a detector on the path alone turns into AUC 0.82-0.86). For releases handed to systems
    that ingest files; the official loader and MemLens's read both layouts."""

    huggingface: bool = True
    flat_images: bool = False
    #: processes the release files are written in (a length's JSON and Parquet each, the image
    #: Parquet); 0: one per CPU core, at most 4. The files do not depend on it
    workers: NonNegInt = 0

    def processes(self) -> int:
        """Processes the release files are written in (``workers``, or one per core, at most 4)."""
        import os

        return int(self.workers) or min(os.cpu_count() or 1, 4)
