"""The generate stage's draws of a question's time line and session shape, in one home (the
stage and the validate stage's probe set, :mod:`memlens.construction.validate.adversaries.probe`,
draw with them): distractor mentions per session, a session's subtopic, the question date and the
evidence sessions' timestamps."""

from __future__ import annotations

from datetime import datetime, timedelta

from memlens.core.constants import HISTORY_SPAN_DAYS
from memlens.core.schema import format_date
from memlens.core.store import derive_rng

#: extra (distractor) image mentions per image-bearing session, on top of the first one: evidence and
#: haystack sessions alike carry ~1.5 images, as the paper's sessions
EXTRA_MENTIONS = (0, 0, 0, 0, 0, 1, 1, 1, 1, 2)
EPOCH = datetime(2024, 1, 1, 8, 0)


def session_subtopic(seed: int, topic, *key) -> str:
    """The subtopic one image-bearing session talks about: any subtopic of its topic, drawn per
    session (evidence and haystack alike), so no subtopic is the mark of one question's sessions."""
    subs = list(topic.subtopics) or [topic.title]
    return subs[derive_rng(seed, "subtopic", *key).randrange(len(subs))]


def question_date_for(rng) -> datetime:
    day = rng.randrange(0, 700)
    return EPOCH + timedelta(days=HISTORY_SPAN_DAYS + day, hours=rng.randrange(0, 13), minutes=rng.randrange(60))


def evidence_date(rng, fact, j: int, n: int, ordered: bool, qdate: datetime) -> str:
    """The timestamp of the session of fact ``j`` of ``n`` (drawn after the session is written):
    the fact's own, else ``days_before`` the question, else spread in order (``ordered``) or at random
    over the history window, at a waking hour of that day."""
    if fact.at is not None:
        return fact.at
    if fact.days_before is not None:
        days = float(fact.days_before)
    elif ordered:  # keep the facts' order in time
        days = HISTORY_SPAN_DAYS * (n - j) / (n + 1) - rng.uniform(0, HISTORY_SPAN_DAYS / (n + 2))
    else:
        days = rng.uniform(1, HISTORY_SPAN_DAYS - 1)
    # a waking hour of that day (the time words of the facts read as daytime or evening)
    day = (qdate - timedelta(days=days)).date()
    when = datetime.combine(day, datetime.min.time()) + timedelta(minutes=rng.randrange(7 * 60, 23 * 60))
    if when >= qdate:
        when -= timedelta(days=1)
    return format_date(when)
