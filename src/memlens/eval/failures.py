"""Why items failed, said on the console: failure reasons grouped, and the judge-failure rule.

Every failed request is recorded with its error in the results store (and the prediction view).
:func:`reason_of` reduces an error to its reason (paths, ids, hashes and numbers blanked, the root
cause of a connection error kept), :func:`summarize` groups failures by reason with a count and the
first example item, and :func:`render` prints that as the table ``memlens evaluate`` shows at the end.

A judge whose verdicts are mostly failures (:data:`JUDGE_FAILURE_LIMIT`: the judge call failed on
more than half of the answered items) marks the run *failed*: ``memlens judge`` exits 1 and the
report lists the run apart, never ranked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: a run whose judge failed on more than this fraction of the answered items is failed, not ranked
JUDGE_FAILURE_LIMIT = 0.5
#: the prefix of a verdict's reason when the judge call itself failed
JUDGE_FAILED = "judge failed"

_CAUSE = re.compile(r"\(caused by ([^()]*(?:\([^()]*\)[^()]*)*)\)")
_BLANKS = (
    (re.compile(r"\(item [^)]*\)"), ""),
    (re.compile(r"(?:[A-Za-z]:)?(?:/[^\s:;,()'\"]+)+"), "<path>"),
    (re.compile(r"\b[0-9a-f]{8,}\b"), "<hash>"),
    (re.compile(r"'[^']*'|\"[^\"]*\""), "'…'"),
    (re.compile(r"\b\d+(\.\d+)?\b"), "N"),
    (re.compile(r"\s+"), " "),
)


def reason_of(error: str | None) -> str:
    """The reason of a failure: the error with what varies per item blanked (so equal causes group)."""
    text = " ".join(str(error or "no error recorded").split())
    cause = _CAUSE.search(text)
    if cause:  # a connection error's root cause says more than "Connection error."
        text = f"{text[: cause.start()].strip()} ({cause.group(1).strip()})"
    for pattern, repl in _BLANKS:
        text = pattern.sub(repl, text)
    text = text.strip()
    return text if len(text) <= 110 else text[:107] + "..."


@dataclass
class Reason:
    reason: str
    count: int
    example: str  # the first item that failed this way (question id @ length)
    error: str  # that item's error, as recorded


def summarize(failures: Iterable[tuple[str, str | None]]) -> list[Reason]:
    """``(item, error)`` pairs grouped by :func:`reason_of`, most frequent first."""
    groups: dict[str, Reason] = {}
    for item, error in failures:
        r = reason_of(error)
        if r in groups:
            groups[r].count += 1
        else:
            groups[r] = Reason(r, 1, item, " ".join(str(error or "").split()))
    return sorted(groups.values(), key=lambda g: (-g.count, g.reason))


def render(reasons: list[Reason], title: str, *, error_chars: int = 160) -> str:
    """The failure-reason table: count, reason, first example item and its recorded error."""
    if not reasons:
        return ""
    total = sum(r.count for r in reasons)
    w = max(len(str(r.count)) for r in reasons)
    lines = [f"{title}: {total} failed item(s), {len(reasons)} reason(s)"]
    for r in reasons:
        err = r.error if len(r.error) <= error_chars else r.error[: error_chars - 3] + "..."
        lines.append(f"  {str(r.count).rjust(w)}  {r.reason}")
        lines.append(f"  {' ' * w}  e.g. {r.example}: {err}")
    return "\n".join(lines)


def judge_failure_count(verdicts, predictions: dict) -> tuple[int, int]:
    """``(judge calls that failed, answered items judged)``: a verdict without a decision whose
    prediction is an answer (a failed request is the system's failure, not the judge's)."""
    answered = [v for v in verdicts if getattr(predictions.get(v.question_id), "ok", False)]
    failed = sum(v.correct is None for v in answered)
    return failed, len(answered)


def judge_failed(n_failed: int, n_answered: int) -> bool:
    return n_answered > 0 and n_failed / n_answered > JUDGE_FAILURE_LIMIT
