"""Stand-in systems with planted error patterns: how the analyses are tested without real models.

A stand-in is not a model and never pretends to be one (its kind is ``standin``, or ``agent`` for
the agent stand-in; its name says ``standin``). It reads the benchmark's answer key itself
(:meth:`PlantedErrors.attach`: questions, derivations and the images' ground truth of a *built*
benchmark) and, per (question, length), answers correctly with probability

    accuracy - decay_per_doubling * log2(length / 32K)   (clipped to [0, 1])

and otherwise plants one wrong answer of a known kind, drawn by ``patterns`` (weights) among
the kinds that apply to the question:

==============  =========================================================  ===========================
pattern         the answer                                                 the exact taxonomy's source
==============  =========================================================  ===========================
``stale``       the KU old value                                           ``stale_value``
``decoy``       the asked field of a same-family image of the history       ``distractor_image``
                that is not evidence (a value no evidence image shows)
``slip``        a computed answer off by one (a sum by one unit, a count   ``arithmetic_slip``
                by one, an order with its first two swapped)
``refusal``     "Insufficient information" on an answerable item           ``refusal_on_answerable``
``fabricate``   a value that is in no image or session of the history      ``not_in_history``
                (on a refusal item: any answer)                            (``answer_on_refusal_item``)
``misread``     the asked fact of a single evidence image with one digit,  ``asked_fact_misread``
                date field or letter changed
``operand``     one operand of a sum (the asked fact of one image)          ``evidence_operand``
``flip``        the other option of a binary question                      ``binary_choice``
==============  =========================================================  ===========================

What was planted is recorded in each prediction's ``meta`` (``planted``), so a test compares the
taxonomy's finding with the truth item by item (``tests/report/test_planted_patterns.py``). Every
choice derives from (``seed``, question, length): the same config gives the same answers.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from memlens.core.config import length_tokens
from memlens.core.constants import AR, KU, REFUSAL_REFERENCE
from memlens.core.errors import ConfigError
from memlens.core.items import EvalItem
from memlens.core.registry import component
from memlens.core.settings import Fraction, NonNegFloat, configured, operational
from memlens.core.store import derive_rng
from memlens.eval.systems.base import Model, ModelOutput, SystemSettings

__all__ = ["PlantedErrors", "PATTERNS", "EXPECTED_SOURCE", "STANDIN_VERSION"]

PATTERNS = ("stale", "decoy", "slip", "refusal", "fabricate", "misread", "operand", "flip")
#: part of a stand-in's identity: bump it when the answers change, so stored answers are not reused
STANDIN_VERSION = "3"
#: the exact taxonomy source each planted pattern must be found as (refusal items: fabricate)
EXPECTED_SOURCE = {
    "stale": "stale_value",
    "decoy": "distractor_image",
    "slip": "arithmetic_slip",
    "refusal": "refusal_on_answerable",
    "fabricate": "not_in_history",
    "misread": "asked_fact_misread",
    "operand": "evidence_operand",
    "flip": "binary_choice",
    "fabricate_refusal_item": "answer_on_refusal_item",
}
_FABRICATED_NAME = "Quillon Vantablue"
_FABRICATED_DATE = "1907/03/14"


class StandinSettings(SystemSettings):
    """``model`` with ``_target_: memlens.eval.systems.standin.PlantedErrors``: a stand-in system with
    planted error patterns (reads the answer key; for testing the analyses, not a model). The sizes
    and the backbone are descriptive (the report's system card), not part of the system identity."""

    seed: int = 0
    accuracy: Fraction = 0.6  # share of correct answers at 32K
    decay_per_doubling: NonNegFloat = 0.05  # lost per doubling of the length
    patterns: dict[str, NonNegFloat] | None = None  # weights of the planted error kinds; null: all alike
    subset: Literal["agent_subset_195"] | None = None  # the agent stand-in is evaluated on the agent subset
    params_total_b: float | None = operational(None)
    params_active_b: float | None = operational(None)
    backbone_config: str | None = operational(None)
    notes: str | None = operational(None)


@configured
@component("model", "standin")
class PlantedErrors(Model):
    """See the module docstring."""

    kind = "standin"
    Config = StandinSettings

    def __init__(
        self,
        name: str = "standin",
        *,
        kind: str | None,
        seed: int,
        accuracy: float,
        decay_per_doubling: float,
        patterns: dict[str, float] | None,
        subset: str | None,
        params_total_b: float | None,
        params_active_b: float | None,
        backbone_config: str | None,
        notes: str | None,
    ):
        weights = dict(patterns or {p: 1.0 for p in PATTERNS})
        unknown = sorted(set(weights) - set(PATTERNS))
        if unknown:
            raise ConfigError(f"model.patterns: unknown pattern(s) {unknown} (known: {', '.join(PATTERNS)})")
        if not any(w > 0 for w in weights.values()):
            raise ConfigError("model.patterns: at least one pattern needs a positive weight")
        super().__init__(
            name,
            kind,
            options=dict(seed=seed, accuracy=accuracy, decay_per_doubling=decay_per_doubling, patterns=weights),
        )
        self.seed, self.accuracy, self.decay = int(seed), float(accuracy), float(decay_per_doubling)
        self.weights = weights
        if subset is not None:
            self.default_subset = subset
        self.questions: dict = {}
        self.truths: dict[str, dict] = {}
        self.families: dict[str, str] = {}

    # ------------------------------------------------------------------ set-up
    def attach(self, paths: Any, benchmark: Any) -> None:
        if getattr(benchmark, "kind", "built") != "built":
            raise ConfigError(f"model {self.name!r}: a stand-in reads the ground truth of a built benchmark")
        self.questions = benchmark.questions
        images = benchmark.source.images
        self.truths = {k: r.truth for k, r in images.items()}
        self.families = {k: r.family for k, r in images.items()}

    def identity_extra(self) -> dict:
        return {"standin_version": STANDIN_VERSION}

    def p_correct(self, length: str) -> float:
        doublings = math.log2(length_tokens(length) / length_tokens("32k"))
        return min(1.0, max(0.0, self.accuracy - self.decay * doublings))

    # ------------------------------------------------------------------ answering
    def generate(self, item: EvalItem, mode: str = "standard") -> ModelOutput:
        q = self.questions.get(item.question_id)
        if q is None:
            return ModelOutput(text=None, ok=False, error=f"unknown question {item.question_id}")
        rng = derive_rng(self.seed, "standin", item.question_id, item.length)
        if rng.random() < self.p_correct(item.length):
            text = REFUSAL_REFERENCE if q.question_type == AR else str(q.answer)
            return ModelOutput(text=text, meta={"planted": "correct"})
        if q.question_type == AR:
            return ModelOutput(text=self._fabricate(q) or _FABRICATED_NAME, meta={"planted": "fabricate_refusal_item"})
        options = {p: self._plant(p, q, item, rng) for p, w in sorted(self.weights.items()) if w > 0}
        options = {p: a for p, a in options.items() if a}
        if not options:
            return ModelOutput(text=REFUSAL_REFERENCE, meta={"planted": "refusal"})
        names = sorted(options)
        pick = rng.choices(names, weights=[self.weights[n] for n in names])[0]
        return ModelOutput(text=options[pick], meta={"planted": pick})

    def _plant(self, pattern: str, q, item: EvalItem, rng) -> str | None:
        return getattr(self, f"_{pattern}")(q) if pattern not in ("decoy",) else self._decoy(q, item, rng)

    # ------------------------------------------------------------------ the patterns
    @staticmethod
    def _refusal(q) -> str:
        return REFUSAL_REFERENCE

    @staticmethod
    def _stale(q) -> str | None:
        return str(q.old_answer) if q.question_type == KU and q.old_answer else None

    def _flip(self, q) -> str | None:
        ans = str(q.answer)
        return {"A": "B", "B": "A", "Yes": "No", "No": "Yes"}.get(ans)

    def _prog(self, q) -> dict | None:
        prog = q.details.get("derivation")
        while isinstance(prog, dict) and prog.get("op") == "str":
            prog = prog.get("arg")
        return prog if isinstance(prog, dict) else None

    def _evidence_truths(self, q) -> list[dict | None]:
        ids = q.details.get("image_ids") or q.evidence_image_ids
        return [self.truths.get(i) for i in ids]

    def _operand(self, q) -> str | None:
        from memlens.construction.abilities.derive import money

        prog = self._prog(q)
        if not prog or prog.get("op") != "sum" or prog.get("fmt") != "money":
            return None
        found = [v for v in _operand_values(prog, self._evidence_truths(q)) if v not in (None, "")]
        if len(found) + sum(1 for a in prog.get("args", []) if a.get("op") == "const") < 2 or not found:
            return None
        return money(found[0], prog.get("currency"))

    def _slip(self, q) -> str | None:
        from decimal import Decimal

        from memlens.construction.abilities.derive import money

        prog = self._prog(q)
        op = (prog or {}).get("op")
        if op == "sum" and prog.get("fmt") == "money":
            n = canon_number(str(q.answer).split()[0]) or canon_number(q.answer)
            return money(n + Decimal(1), prog.get("currency")) if n is not None else None
        if op in ("count", "distinct"):
            n = canon_number(q.answer)
            return str(int(n) + 1) if n is not None else None
        if op == "order":
            o = canon_order(q.answer)
            idx = o.strip("()").split(")(") if o else []
            return "".join(f"({x})" for x in [idx[1], idx[0], *idx[2:]]) if len(idx) >= 2 else None
        return None

    def _fabricate(self, q) -> str | None:
        ans = str(q.answer)
        if canon_order(ans) or ans in ("A", "B", "Yes", "No"):
            return None
        if canon_date(ans):
            return _FABRICATED_DATE
        n = canon_number(ans.split()[0] if ans.split() else ans)
        if n is not None:
            return ans.replace(ans.split()[0], f"{int(n) * 7 + 9137}")
        return _FABRICATED_NAME

    def _misread(self, q) -> str | None:
        import datetime as dt

        prog = self._prog(q)
        if not prog or prog.get("op") not in ("get", "format"):
            return None
        ans = str(q.answer)
        d = canon_date(ans)
        if d:
            y, m, day = (int(x) for x in d.split("/"))
            shifted = dt.date(y, m, day + 1 if day < 28 else day - 1)
            return shifted.strftime("%Y/%m/%d")
        n = canon_number(ans)
        if n is not None and n == int(n):
            return str(int(n) + 1)
        words = ans.split()
        best = max(range(len(words)), key=lambda i: sum(c.isalpha() for c in words[i]), default=None)
        if best is None or sum(c.isalpha() for c in words[best]) < 4:
            return None
        w = words[best]
        k = max(i for i, c in enumerate(w) if c.isalpha())
        c = w[k]
        swap = "e" if c.lower() != "e" else "a"
        words[best] = w[:k] + (swap.upper() if c.isupper() else swap) + w[k + 1 :]
        return " ".join(words)

    def _decoy(self, q, item: EvalItem, rng) -> str | None:
        """The asked field of a same-family image of this history that is not evidence."""
        prog = self._prog(q)
        if prog and prog.get("op") == "last":
            prog = prog["args"][-1] if prog.get("args") else None
        if not prog or prog.get("op") not in ("get", "format") or not isinstance(prog.get("img"), int):
            return None
        evidence = list(q.details.get("image_ids") or q.evidence_image_ids)
        if prog["img"] >= len(evidence):
            return None
        fam = self.families.get(evidence[prog["img"]])
        shown = {_plain(v) for i in evidence for v in _leaves(self.truths.get(i))}
        banned = shown | {_plain(q.answer)} | {_plain(x) for x in [q.old_answer] if x}
        path = list(prog.get("path") or [])
        pool = sorted({i for i in item.image_ids if i not in evidence and self.families.get(i) == fam})
        rng.shuffle(pool)
        for img in pool:
            for value in self._values_at(self.truths.get(img) or {}, prog, path):
                if _plain(value) and _plain(value) not in banned:
                    return str(value)
        return None

    @staticmethod
    def _values_at(truth: dict, prog: dict, path: list) -> list:
        """The value at the asked field (for a formatted answer, the element at the same place)."""
        try:
            v = truth
            for k in path:
                v = v[k]
            if prog["op"] == "format":
                return [prog["template"].format(**v)]
            return [v] if isinstance(v, (str, int, float)) and not isinstance(v, bool) else []
        except (KeyError, IndexError, TypeError, ValueError):
            return []


# ---------------------------------------------------------------------------------- small helpers
# (kept here: a system must not depend on the report code that judges it)
_ORDER_RE = re.compile(r"^(?:\(\d+\))+$")
_DATE_RE = re.compile(r"^(\d{4})[/-](\d{1,2})[/-](\d{1,2})")


def canon_number(v) -> Decimal | None:
    s = str(v).strip().lstrip("$€£¥")
    s = re.sub(r"\s*(?:[A-Z]{3}|kr\.?)$", "", s).replace(",", "")
    try:
        return Decimal(s) if re.fullmatch(r"-?\d+(?:\.\d+)?", s) else None
    except InvalidOperation:
        return None


def canon_date(v) -> str | None:
    m = _DATE_RE.match(str(v).strip())
    return f"{int(m[1]):04d}/{int(m[2]):02d}/{int(m[3]):02d}" if m else None


def canon_order(v) -> str | None:
    s = str(v or "").replace(" ", "")
    return s if _ORDER_RE.match(s) else None


def _plain(v) -> str:
    """A value for comparing what images show: casefolded, punctuation and spaces collapsed."""
    return " ".join(re.sub(r"[^\w]+", " ", str(v).casefold()).split())


def _leaves(x) -> list:
    if isinstance(x, dict):
        return [v for k, y in x.items() if k not in ("photo", "seed", "size") for v in _leaves(y)]
    if isinstance(x, (list, tuple)):
        return [v for y in x for v in _leaves(y)]
    return [] if x is None or isinstance(x, bool) else [x]


def _operand_values(prog, truths) -> list:
    """The values a derivation reads off the evidence images (``get`` leaves), in program order."""
    out = []
    if isinstance(prog, dict):
        if prog.get("op") == "get":
            i = prog.get("img")
            try:
                v = truths[i]
                for k in prog.get("path") or []:
                    v = v[k]
                out.append(v)
            except (IndexError, KeyError, TypeError):
                pass
            return out
        for v in prog.values():
            out += _operand_values(v, truths)
    elif isinstance(prog, list):
        for v in prog:
            out += _operand_values(v, truths)
    return out
