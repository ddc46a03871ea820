"""Token-bounded phrase search, fast enough to check thousands of forbidden strings (answers,
abstracted entity names) against every turn of every session.

Text and phrases are normalized the same way: lowercase; characters other than letters, digits and
``$ € £ ¥ . : /`` become spaces; tokens lose trailing ``. : /``. A phrase occurs when its token
sequence appears in the text's token sequence. Money and number phrases also match their bare
numeric form (``$23.40`` matches ``23.40``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SPLIT = re.compile(r"[^0-9a-z$€£¥.:/]+")
_MONEY = re.compile(r"^[$€£¥]?(\d[\d,]*(?:\.\d+)?)$")


def tokens(text: str) -> list[str]:
    return [t for t in (x.strip(".:/") for x in _SPLIT.split(text.lower())) if t]


def phrase_forms(phrase: str) -> list[tuple[str, ...]]:
    toks = tokens(phrase)
    if not toks:
        return []
    forms = {tuple(toks)}
    if len(toks) == 1:
        m = _MONEY.match(toks[0])
        if m:
            forms.add((m.group(1).replace(",", ""),))
            forms.add((m.group(1),))
    return sorted(forms)


class PhraseIndex:
    def __init__(self, phrases: Iterable[str]):
        self._by_first: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for p in set(phrases):
            for form in phrase_forms(p):
                self._by_first.setdefault(form[0], []).append((form, p))

    def __bool__(self) -> bool:
        return bool(self._by_first)

    def find(self, text: str | list[str]) -> set[str]:
        toks = tokens(text) if isinstance(text, str) else text
        found: set[str] = set()
        idx = self._by_first
        for i, t in enumerate(toks):
            cands = idx.get(t)
            if not cands:
                continue
            for form, phrase in cands:
                if tuple(toks[i : i + len(form)]) == form:
                    found.add(phrase)
        return found


def contains(text: str, phrase: str) -> bool:
    return bool(PhraseIndex([phrase]).find(text))
