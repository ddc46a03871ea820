"""Handing freed heap back to the system between the adversaries' steps (validate's peak memory)."""

from __future__ import annotations

import contextlib
import ctypes
import gc


def release_freed_memory() -> None:
    """Hand the heap a finished step freed back to the system (glibc keeps freed memory for reuse,
    so a process's footprint stays at its highest step's while the next steps run beside the
    other process's): a full collection, then ``malloc_trim``. Nothing where glibc is absent."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").malloc_trim(0)
