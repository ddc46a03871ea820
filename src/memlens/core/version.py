"""The package version (``memlens --version``, every manifest's ``memlens_version``, pyproject's
dynamic version): its own module, so the vocabulary in :mod:`memlens.core.constants` is part of a
stage's code only where the stage uses it."""

VERSION = "0.1.0"
