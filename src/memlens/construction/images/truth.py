"""What an image's ground truth says in words: the strings drawn on it.

The leakage checks compare conversation text against these strings; strings that many images of a
family print ("BOARDING PASS", "TOTAL") say nothing about one image and are passed in explicitly as
``boilerplate`` (computed by :func:`find_boilerplate` over the pool the caller works with).
"""

from __future__ import annotations

from collections.abc import Iterable


def drawn_values(truth: dict, boilerplate: frozenset[str] = frozenset()) -> list[str]:
    """Strings only this image shows (its drawn text), for the semantic-leakage check: boilerplate
    printed on many images of the family and very short codes are not image-specific. Strings the
    conversation itself says about the image (``named_in_text``: the contact of "my chat with Leo")
    are what links the text to the image, not a leak of what only the image shows."""
    said = {str(t).strip().lower() for t in truth.get("named_in_text", []) or []}
    vals = [
        str(t).strip()
        for t in truth.get("texts", [])
        if isinstance(t, (str, int, float)) and str(t).strip().lower() not in said
    ]
    return sorted(
        {v for v in vals if (len(v) >= 5 or any(c.isdigit() for c in v) or " " in v) and v.lower() not in boilerplate}
    )


def printed_strings(truth: dict, min_len: int = 1) -> list[str]:
    """Every string an image prints (longer than ``min_len`` characters), except what the
    conversation itself says about it (``named_in_text``): what a mention must not repeat."""
    said = {str(t).strip().lower() for t in truth.get("named_in_text", []) or []}
    return [
        str(x)
        for x in truth.get("texts", [])
        if isinstance(x, (str, int, float)) and len(str(x).strip()) > min_len and str(x).strip().lower() not in said
    ]


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
