"""What an image's ground truth says in words: the strings drawn on it.

The leakage checks compare conversation text against these strings; strings that many images of a
family print ("BOARDING PASS", "TOTAL") say nothing about one image and are passed in explicitly as
``boilerplate`` (computed by :func:`find_boilerplate` over the pool the caller works with).
"""

from __future__ import annotations

from collections.abc import Iterable


def drawn_values(truth: dict, boilerplate: frozenset[str] = frozenset()) -> list[str]:
    """Strings only this image shows (its drawn text), for the semantic-leakage check: boilerplate
    printed on many images of the family and very short codes are not image-specific."""
    vals = [str(t).strip() for t in truth.get("texts", []) if isinstance(t, (str, int, float))]
    return sorted(
        {v for v in vals if (len(v) >= 5 or any(c.isdigit() for c in v) or " " in v) and v.lower() not in boilerplate}
    )


def find_boilerplate(records: Iterable) -> frozenset[str]:
    """Lower-cased strings drawn on at least 5% (and at least 3) of the images of their family."""
    by_family: dict[str, list] = {}
    for r in records:
        by_family.setdefault(r.family, []).append(r)
    out: set[str] = set()
    for recs in by_family.values():
        counts: dict[str, int] = {}
        for r in recs:
            for t in {str(x).strip().lower() for x in r.truth.get("texts", [])}:
                counts[t] = counts.get(t, 0) + 1
        floor = max(3, int(0.05 * len(recs)))
        out |= {t for t, c in counts.items() if c >= floor}
    return frozenset(out)
