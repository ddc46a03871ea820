"""The schema of the optional section ``ontology``; a configuration without the section gets
these defaults (they are declared here only)."""

from __future__ import annotations

from memlens.core.settings import Section

__all__ = ["OntologySettings"]


class OntologySettings(Section):
    """``ontology`` (optional, ``+ontology.version=...``): the ontology file version."""

    version: str = "1"
