"""The session writer shared by evidence, haystack and filler sessions.

Evidence and haystack sessions come from the same function with the same templates: the only
difference is whether a mention carries a question's fact. Every generated turn passes the
validator chain (:mod:`memlens.construction.text.validators`); failing turns are regenerated.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from memlens.construction.text import textbank
from memlens.construction.text.leakage import PhraseIndex
from memlens.construction.text.validators import RejectionLog, TurnSpec, check_turn
from memlens.core.errors import MemLensError
from memlens.core.io import canonical_bytes, sha256_bytes
from memlens.core.schema import Session, Topic, Turn


@dataclass
class Mention:
    text: str  # the sentence, with one <image> per image, verbatim
    image_ids: list[str]
    has_answer: bool = False
    image_values: list[str] = field(default_factory=list)
    acknowledge: str = "the picture you shared"
    image_kind: str | None = None  # what the image is (a receipt, a clock...): the assistant reacts to it


@dataclass
class WriterConfig:
    assistant_words: tuple[int, int] = (150, 250)
    user_words: tuple[int, int] = (25, 90)
    turns: tuple[int, int] = (6, 10)
    max_regenerations: int = 5
    #: the share of long sessions (evidence and haystack alike), with ``long_turns`` turns
    long_share: float = 0.0
    long_turns: tuple[int, int] = (18, 30)

    @classmethod
    def from_cfg(cls, g) -> WriterConfig:
        return cls(
            tuple(g.assistant_words),
            tuple(g.user_words),
            tuple(g.turns_per_session),
            int(g.max_regenerations),
            float(g.long_session_share),
            tuple(g.long_session_turns),
        )

    def pairs(self, rng: random.Random, n_mentions: int) -> int:
        """User/assistant pairs of the next session: one more than its mentions at least; a long
        session (a ``long_share`` of them) draws from ``long_turns``, the others from ``turns``."""
        lo, hi = self.long_turns if self.long_share and rng.random() < self.long_share else self.turns
        return max(n_mentions + 1, rng.randint(lo // 2, hi // 2))


def session_id_for(kind: str, topic_id: str, turns: list[Turn]) -> str:
    payload = {"kind": kind, "topic_id": topic_id, "turns": [t.to_dict() for t in turns]}
    return "sess_" + sha256_bytes(canonical_bytes(payload))[:12]


#: rewrites tried per repeated sentence, per variation level, before the next level
VARY_TRIES = 6
#: share of first-use sentences rewritten anyway (repeats are rewritten always)
BASE_VARY = 0.25
#: words kept free below an assistant reply's upper bound for rewriting repeated sentences
ROOM_WORDS = 20
_MENTION_MARK = "\x00"


class SessionWriter:
    """Writes sessions; ``seen`` (shared by the writers of one build) holds every sentence written so
    far, and a sentence already in it is rewritten (:func:`textbank.vary`) so none repeats verbatim."""

    def __init__(
        self, wcfg: WriterConfig, log: RejectionLog, forbidden: list[str] | None = None, seen: set | None = None
    ):
        self.w = wcfg
        self.log = log
        self.forbidden = list(forbidden or [])
        self._index = PhraseIndex(self.forbidden)
        self.seen: set[str] = seen if seen is not None else set()
        self.repeats = {"rewritten": 0, "dropped": 0, "kept": 0}

    def fresh(
        self, rng: random.Random, text: str, mention: str | None = None, max_words: int = 10_000, min_words: int = 1
    ) -> tuple[str, list[str]]:
        """``text`` with every sentence already seen rewritten (the mention is kept verbatim; the
        turn stays within ``[min_words, max_words]``) or, when no rewrite fits, dropped (not a
        question), and the keys of its sentences (added to ``seen`` once the turn is admitted)."""
        total = textbank.count_words(text)
        hold = mention if mention and mention in text else None
        # the mention stands in as one sentence of its own (a mark ending like it)
        mark = _MENTION_MARK + (hold.rstrip()[-1] if hold and hold.rstrip()[-1:] in ".!?" else "") if hold else ""
        work = text.replace(hold, mark, 1) if hold else text
        parts = textbank.split_sentences(work)
        keys: list[str] = []
        local: set[str] = set()
        for i in range(0, len(parts), 2):
            sent = parts[i]
            key, sent_words = textbank.key_and_words(sent)
            if key is None or _MENTION_MARK in sent or "<image>" in sent:
                continue
            if key not in self.seen and key not in local and rng.random() < BASE_VARY:
                # some first uses are rewritten too, so rewrites mark no kind of session
                cand = textbank.vary(rng, sent, rng.choice((0, 1)))
                k, cand_words = textbank.key_and_words(cand)
                grown = cand_words - sent_words
                if k and k not in self.seen and k not in local and total + grown <= max_words:
                    parts[i], key, total = cand, k, total + grown
            if key in self.seen or key in local:
                new = None
                for level in (0, 1, 2):
                    for _ in range(VARY_TRIES):
                        cand = textbank.vary(rng, sent, level)
                        k, cand_words = textbank.key_and_words(cand)
                        grown = cand_words - sent_words
                        if k and k not in self.seen and k not in local and total + grown <= max_words:
                            total += grown
                            new, key = cand, k
                            break
                    if new:
                        break
                if new:
                    parts[i] = new
                    self.repeats["rewritten"] += 1
                elif not sent.rstrip().endswith("?") and total - sent_words >= min_words:
                    total -= sent_words
                    parts[i] = ""
                    if i + 1 < len(parts) and "\n" not in parts[i + 1]:
                        parts[i + 1] = ""
                    elif i > 0:
                        parts[i - 1] = ""
                    elif i + 1 < len(parts):
                        parts[i + 1] = ""
                    self.repeats["dropped"] += 1
                    continue
                else:
                    self.repeats["kept"] += 1
            keys.append(key)
            local.add(key)
        out = "".join(parts)
        return (out.replace(mark, hold, 1) if hold else out), keys

    def _admit(self, make, spec_kw: dict, what: str, rng: random.Random | None = None) -> str:
        for attempt in range(self.w.max_regenerations + 1):
            text = make()
            keys: list[str] = []
            if rng is not None:
                lo, hi = spec_kw["words"]
                floor = max(lo, textbank.count_words(text) // 2)  # a repeat is dropped only from a long turn
                kept = self.repeats["kept"]
                text, keys = self.fresh(rng, text, spec_kw.get("mention"), hi, floor)
                if self.repeats["kept"] > kept and attempt < self.w.max_regenerations:
                    self.repeats["kept"] = kept  # a repeat left in: write the turn afresh
                    continue
            failed = check_turn(TurnSpec(text=text, **spec_kw))
            self.log.record(failed)
            if not failed:
                self.seen.update(keys)
                return text
        raise MemLensError(
            f"generate: could not write an admissible {what} turn after "
            f"{self.w.max_regenerations} regenerations (last failures: {failed})"
        )

    def plan_session(
        self,
        rng: random.Random,
        topic: Topic,
        subtopic: str,
        mentions: list[Mention],
        extra_forbidden: list[str] | None = None,
    ) -> tuple[PhraseIndex, int, list[int]]:
        """What every writer decides first, in this order of random draws: the phrases the session
        must not contain, its number of user/assistant pairs and the user turns that carry the
        mentions (random ones, not always the first). An image value that the session's own topic
        words contain ("laundry detergent") reveals nothing, so it is dropped from the mentions'
        values."""
        forbidden = PhraseIndex(self.forbidden + list(extra_forbidden or [])) if extra_forbidden else self._index
        for m in mentions:
            if m.image_values:
                m.image_values = [v for v in m.image_values if not PhraseIndex([v]).find(f"{topic.title} {subtopic}")]
        n_pairs = self.w.pairs(rng, len(mentions))
        slots = sorted(rng.sample(range(n_pairs), len(mentions))) if mentions else []
        return forbidden, n_pairs, slots

    def write(
        self,
        rng: random.Random,
        kind: str,
        topic: Topic,
        subtopic: str,
        mentions: list[Mention],
        extra_forbidden: list[str] | None = None,
        ambiguity: list[str] | None = None,
    ) -> Session:
        forbidden, n_pairs, slots = self.plan_session(rng, topic, subtopic, mentions, extra_forbidden)
        # user turns 0..n_pairs-1
        slot_of = dict(zip(slots, mentions))
        turns: list[Turn] = []
        uw, aw = self.w.user_words, self.w.assistant_words
        # replies are written with some room below the upper bound, for the rewrites of repeats
        aw_room = (aw[0], max(aw[0], aw[1] - ROOM_WORDS))
        base = {"forbidden": forbidden, "ambiguity": list(ambiguity or [])}
        for i in range(n_pairs):
            m = slot_of.get(i)
            if m is None:
                if i == 0:
                    text = self._admit(
                        lambda: textbank.session_opening(
                            rng, topic_title=topic.title, subtopic=subtopic, track=topic.track
                        ),
                        {"role": "user", "words": (1, 400), **base},
                        "opening",
                        rng,
                    )
                else:
                    text = self._admit(
                        lambda: textbank.user_turn(
                            rng, topic_title=topic.title, subtopic=subtopic, track=topic.track, words=uw
                        ),
                        {"role": "user", "words": (1, 400), **base},
                        "user",
                        rng,
                    )
                turns.append(Turn("user", text, [], False))
                ack = None
            else:
                text = self._admit(
                    lambda m=m: textbank.user_turn(
                        rng, topic_title=topic.title, subtopic=subtopic, track=topic.track, words=uw, mention=m.text
                    ),
                    {
                        "role": "user",
                        "words": (1, 400),
                        "n_images": len(m.image_ids),
                        "mention": m.text,
                        "image_values": m.image_values,
                        **base,
                    },
                    "mention",
                    rng,
                )
                turns.append(Turn("user", text, list(m.image_ids), m.has_answer))
                ack = m.acknowledge
            reaction = m.image_kind if m is not None else None
            reply = self._admit(
                lambda ack=ack, reaction=reaction: textbank.assistant_reply(
                    rng,
                    topic_title=topic.title,
                    subtopic=subtopic,
                    track=topic.track,
                    words=aw_room,
                    acknowledge=ack,
                    reaction=reaction,
                ),
                {"role": "assistant", "words": aw, **base},
                "assistant",
                rng,
            )
            turns.append(Turn("assistant", reply, [], False))
        return Session(session_id_for(kind, topic.topic_id, turns), kind, topic.topic_id, turns)

    def write_filler(self, rng: random.Random, n_turns: int) -> Session:
        pairs = textbank.filler_session(rng, n_turns=n_turns, words=self.w.assistant_words)
        turns = []
        for role, text in pairs:
            floor = self.w.assistant_words[0] if role == "assistant" else textbank.count_words(text) // 2
            text, keys = self.fresh(rng, text, min_words=max(1, floor))
            self.seen.update(keys)
            turns.append(Turn(role, text, [], False))
        for t in turns:  # filler assistants need not end with a follow-up question
            self.log.record(check_turn(TurnSpec(role="user", text=t.content, forbidden=self._index)))
        return Session(session_id_for("filler", "", turns), "filler", "", turns)
