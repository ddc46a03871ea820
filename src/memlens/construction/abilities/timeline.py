"""Time lines fixed at plan time, so images can print dates that agree with their sessions.

The generate stage dates a question's evidence sessions after the images are rendered; a question
type whose images print dates (receipts of one outing) fixes the question date and every evidence
session's timestamp when it plans the images instead (``Draft.question_date`` and
``FactDraft.at``), drawn from the same law the generate stage uses for the others.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta

from memlens.core.constants import HISTORY_SPAN_DAYS
from memlens.core.schema import format_date

#: the first day a history can start (the generate stage's epoch)
EPOCH = datetime(2024, 1, 1, 8, 0)
#: the generate stage's spread of question dates after the first full history window
QUESTION_SPREAD_DAYS = 700
#: the generate stage's jitter of a session's time of day (minutes before the nominal time)
SESSION_JITTER_MINUTES = 600


def question_date(rng: random.Random) -> datetime:
    """A question date drawn like the generate stage draws one."""
    day = rng.randrange(0, QUESTION_SPREAD_DAYS)
    return EPOCH + timedelta(days=HISTORY_SPAN_DAYS + day, hours=rng.randrange(0, 13), minutes=rng.randrange(60))


def sessions_before(rng: random.Random, qdate: datetime, days_before: list[float]) -> list[str]:
    """Release-format timestamps ``days_before`` the question date, with the stage's jitter."""
    return [
        format_date(qdate - timedelta(days=float(d), minutes=rng.randrange(0, SESSION_JITTER_MINUTES)))
        for d in days_before
    ]


def day_of(stamp: str) -> date:
    """The calendar day of a release-format timestamp."""
    return datetime.strptime(stamp[:10], "%Y/%m/%d").date()
