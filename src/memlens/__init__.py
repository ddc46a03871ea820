from memlens.core.version import VERSION as __version__

__all__ = ["__version__"]
