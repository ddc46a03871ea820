"""Loaded by Hydra's plugin discovery when DVC composes ``params.yaml`` (``hydra.plugins_path``: the
repository root): registers MemLens' secrets check, the resolver of ``secrets_checked`` in
``conf/config.yaml``. A ``-S`` override that would write a key fails the composition, so nothing is
written to ``params.yaml``, ``dvc.lock`` or the experiment refs (:mod:`memlens.core.secrets`)."""

from memlens.core.secrets import register

register()
