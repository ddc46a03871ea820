from memlens.core.constants import VERSION as __version__

__all__ = ["__version__"]
