"""Work split over forked processes that inherit what the caller holds (nothing is pickled on the
way in: a stage's loaded benchmark is shared copy-on-write, not copied per process).

:func:`balance` splits named jobs into groups of about equal cost (longest first, each to the
lightest group); :class:`ForkedCall` runs one function in a forked process and hands back what it
returned or raised (a process that dies is a :class:`~memlens.core.errors.MemLensError` naming the
work and how to run it in one process, never a hang); :func:`run_split` runs the first group in the
calling process and the others forked. The validate stage's adversaries and the export stage's
file writers run so.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memlens.core.errors import MemLensError

__all__ = ["ForkedCall", "balance", "can_fork", "run_split"]


def can_fork() -> bool:
    return "fork" in mp.get_all_start_methods()


def balance(names: Sequence[str], costs: Mapping[str, float], workers: int) -> list[list[str]]:
    """``names`` split into at most ``workers`` groups of about equal cost (``costs``, 1 for a name
    it lacks; longest first, each to the lightest group), each group in ``names`` order; the first
    group holds the costliest job."""
    groups: list[list[str]] = [[] for _ in range(max(1, min(workers, len(names))))]
    load = [0.0] * len(groups)
    for name in sorted(names, key=lambda n: -costs.get(n, 1.0)):
        i = load.index(min(load))
        groups[i].append(name)
        load[i] += costs.get(name, 1.0)
    return [[n for n in names if n in g] for g in groups if g]


class ForkedCall:
    """``fn()`` run in a forked process; :meth:`result` waits for what it returns (or raises what it
    raised; a process that dies is a :class:`MemLensError`: ``"<what> died (exit code N); <hint>"``)."""

    def __init__(self, fn: Callable[[], Any], what: str, hint: str = ""):
        ctx = mp.get_context("fork")
        self.what, self.hint = what, hint
        self._recv, send = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=self._main, args=(fn, send), daemon=True)
        self._proc.start()
        send.close()

    @staticmethod
    def _main(fn, send) -> None:
        try:
            msg = ("ok", fn())
        except BaseException as exc:  # handed to the parent, which raises it
            msg = ("error", exc)
        try:
            send.send(msg)
        except Exception as exc:  # an exception that does not pickle
            send.send(("error", MemLensError(f"{type(msg[1]).__name__}: {msg[1]} ({exc})")))
        send.close()

    def result(self) -> Any:
        try:
            status, value = self._recv.recv()
        except EOFError:
            self._proc.join()
            raise MemLensError(
                f"{self.what} died (exit code {self._proc.exitcode})" + (f"; {self.hint}" if self.hint else "")
            ) from None
        finally:
            self._recv.close()
        self._proc.join()
        if status == "error":
            raise value
        return value


def run_split(
    groups: Sequence[Callable[[], Any]], what: Callable[[int], str], hint: str = "", before_fork=None
) -> list[Any]:
    """Each of ``groups`` called once: the first in this process, the others each in a process
    forked from it (all forked before the first starts); their results in order. ``what(i)`` names
    group ``i`` in the error of a process that dies; ``before_fork`` is called just before the forks.
    The caller's objects are frozen for the forks (``gc.freeze``), so the children's collections
    leave the inherited pages shared."""
    mine, *theirs = groups
    if theirs:
        if before_fork is not None:
            before_fork()
        gc.freeze()
    try:
        children = [ForkedCall(fn, what(i + 1), hint) for i, fn in enumerate(theirs)]
    finally:
        gc.unfreeze()
    return [mine()] + [c.result() for c in children]
