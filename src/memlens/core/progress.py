"""Progress that reads well in a terminal and in a log file.

Stages draw their progress with tqdm. In a terminal tqdm redraws one line with carriage returns;
in a log file (CI, ``dvc exp run`` in a queue, ``2> log``) that becomes one endless line of ``\\r``
frames. :func:`plain_progress` (used by ``memlens <stage>``) wraps ``sys.stderr`` when it is not a
terminal: a tqdm frame (a write starting with ``\\r``) is printed as an ordinary line at most every
:data:`INTERVAL_S` seconds per bar (``$MEMLENS_PROGRESS_INTERVAL`` overrides it), and the last frame
of a bar when it is closed; every other write passes through unchanged.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: seconds between two progress lines of one bar outside a terminal
INTERVAL_S = 15.0
_DESC = re.compile(r"^([^:|]*?)(?::\s|\s*\d+%|\s*\d+/|\s*\d+\s*\w*\s*\[)")


class PlainProgressStream:
    """A text stream that turns tqdm's carriage-return frames into occasional plain lines."""

    def __init__(self, stream: Any, interval_s: float | None = None):
        self._stream = stream
        env = os.environ.get("MEMLENS_PROGRESS_INTERVAL")
        self.interval_s = float(env) if env else (INTERVAL_S if interval_s is None else interval_s)
        self._last: dict[str, float] = {}
        self._pending: dict[str, str] = {}
        self._lock = threading.Lock()

    def _key(self, frame: str) -> str:
        m = _DESC.match(frame)
        return (m.group(1) if m else frame[:20]).strip()

    def write(self, text: str) -> int:
        if "\r" not in text:
            return self._stream.write(text)
        with self._lock:
            for frame in text.split("\r"):
                frame = frame.rstrip()
                if not frame:
                    continue
                if "\n" in frame:  # a frame followed by ordinary output
                    head, _, tail = frame.partition("\n")
                    self._frame(head, force=True)
                    self._stream.write(tail + "\n")
                    continue
                self._frame(frame)
        return len(text)

    def _frame(self, frame: str, *, force: bool = False) -> None:
        key = self._key(frame)
        now = time.monotonic()
        if force or now - self._last.get(key, -1e9) >= self.interval_s:
            self._stream.write(frame + "\n")
            self._last[key] = now
            self._pending.pop(key, None)
        else:
            self._pending[key] = frame

    def flush(self) -> None:
        self._stream.flush()

    def close_bars(self) -> None:
        """Print the last frame of every bar not printed yet."""
        with self._lock:
            for frame in self._pending.values():
                self._stream.write(frame + "\n")
            self._pending.clear()
        self._stream.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def plain_progress() -> Iterator[None]:
    """Within the block, ``sys.stderr`` prints progress as plain lines when it is not a terminal."""
    original = sys.stderr
    try:
        tty = bool(original.isatty())
    except (AttributeError, ValueError):
        tty = False
    if tty or isinstance(original, PlainProgressStream):
        yield
        return
    wrapper = PlainProgressStream(original)
    sys.stderr = wrapper
    try:
        yield
    finally:
        wrapper.close_bars()
        if sys.stderr is wrapper:
            sys.stderr = original
