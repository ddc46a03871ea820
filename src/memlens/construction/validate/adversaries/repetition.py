"""Sentence repetition: how templated the conversations read.

Sentences are the turn texts split at ``.``, ``!``, ``?`` and line breaks, compared after
collapsing white space (case kept: a verbatim repeat). Sentences of fewer than ``min_words`` words
(greetings, "Thanks!") are ignored.

- **within a history** (per length): the share of a history's sentences that repeat a sentence
  seen earlier in the same history; mean, median and maximum over the histories of that length.
- **across the benchmark**: each distinct session once; the use count of each sentence, the share
  of occurrences that come from sentences used ``frequent_uses`` times or more, and the top
  sentences with their counts.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from memlens.construction.validate.adversaries.data import Bench

SENT = re.compile(r"(?<=[.!?])\s+|\n+")


def sentences(text: str, min_words: int) -> list[str]:
    out = []
    for s in SENT.split(text):
        s = " ".join(s.split())
        if len(s.split()) >= min_words:
            out.append(s)
    return out


def run(bench: Bench, *, min_words: int = 5, frequent_uses: int = 100, top: int = 5) -> dict:
    per_session = {
        sid: [x for t in s.turns for x in sentences(t.content, min_words)] for sid, s in bench.sessions.items()
    }
    uses = Counter(x for sid in sorted(per_session) for x in per_session[sid])
    total = sum(uses.values())
    frequent = sum(c for c in uses.values() if c >= frequent_uses)
    lengths = {}
    for ln, insts in bench.instances.items():
        shares = []
        for inst in insts:
            seen: set[str] = set()
            rep = n = 0
            for sid in inst.session_ids:
                for x in per_session[sid]:
                    n += 1
                    rep += x in seen
                    seen.add(x)
            if n:
                shares.append(rep / n)
        lengths[ln] = {
            "histories": len(shares),
            "repeat_share_mean": round(float(np.mean(shares)), 4) if shares else 0.0,
            "repeat_share_median": round(float(np.median(shares)), 4) if shares else 0.0,
            "repeat_share_max": round(float(np.max(shares)), 4) if shares else 0.0,
        }
    return {
        "min_words": min_words,
        "frequent_uses": frequent_uses,
        "sentence_occurrences": total,
        "distinct_sentences": len(uses),
        "frequent_share": round(frequent / total, 4) if total else 0.0,
        "top_count": uses.most_common(1)[0][1] if uses else 0,
        "top_sentences": [
            {"sentence": s, "count": c} for s, c in sorted(uses.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        ],
        "lengths": lengths,
    }
