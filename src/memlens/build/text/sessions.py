"""The session writer shared by evidence, haystack and filler sessions.

Evidence and haystack sessions come from the same function with the same templates: the only
difference is whether a mention carries a question's fact. Every generated turn passes the
validator chain (:mod:`memlens.build.text.validators`); failing turns are regenerated.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from memlens.build.text import textbank
from memlens.build.text.leakage import PhraseIndex
from memlens.build.text.validators import RejectionLog, TurnSpec, check_turn
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


@dataclass
class WriterConfig:
    assistant_words: tuple[int, int] = (150, 250)
    user_words: tuple[int, int] = (25, 90)
    turns: tuple[int, int] = (6, 10)
    max_regenerations: int = 5

    @classmethod
    def from_cfg(cls, g) -> WriterConfig:
        return cls(tuple(g.assistant_words), tuple(g.user_words), tuple(g.turns_per_session), int(g.max_regenerations))


def session_id_for(kind: str, topic_id: str, turns: list[Turn]) -> str:
    payload = {"kind": kind, "topic_id": topic_id, "turns": [t.to_dict() for t in turns]}
    return "sess_" + sha256_bytes(canonical_bytes(payload))[:12]


class SessionWriter:
    def __init__(self, wcfg: WriterConfig, log: RejectionLog, forbidden: list[str] | None = None):
        self.w = wcfg
        self.log = log
        self.forbidden = list(forbidden or [])
        self._index = PhraseIndex(self.forbidden)

    def _admit(self, make, spec_kw: dict, what: str) -> str:
        for _ in range(self.w.max_regenerations + 1):
            text = make()
            failed = check_turn(TurnSpec(text=text, **spec_kw))
            self.log.record(failed)
            if not failed:
                return text
        raise MemLensError(
            f"generate: could not write an admissible {what} turn after "
            f"{self.w.max_regenerations} regenerations (last failures: {failed})"
        )

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
        forbidden = PhraseIndex(self.forbidden + list(extra_forbidden or [])) if extra_forbidden else self._index
        # an image value that the session's own topic words contain ("laundry detergent") reveals nothing
        for m in mentions:
            if m.image_values:
                m.image_values = [v for v in m.image_values if not PhraseIndex([v]).find(f"{topic.title} {subtopic}")]
        lo, hi = self.w.turns
        n_pairs = max(len(mentions) + 1, rng.randint(lo // 2, hi // 2))
        # user turns 0..n_pairs-1; mentions go to random user turns (not always the first)
        slots = sorted(rng.sample(range(n_pairs), len(mentions))) if mentions else []
        slot_of = dict(zip(slots, mentions))
        turns: list[Turn] = []
        uw, aw = self.w.user_words, self.w.assistant_words
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
                    )
                else:
                    text = self._admit(
                        lambda: textbank.user_turn(
                            rng, topic_title=topic.title, subtopic=subtopic, track=topic.track, words=uw
                        ),
                        {"role": "user", "words": (1, 400), **base},
                        "user",
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
                )
                turns.append(Turn("user", text, list(m.image_ids), m.has_answer))
                ack = m.acknowledge
            reply = self._admit(
                lambda ack=ack: textbank.assistant_reply(
                    rng, topic_title=topic.title, subtopic=subtopic, track=topic.track, words=aw, acknowledge=ack
                ),
                {"role": "assistant", "words": aw, **base},
                "assistant",
            )
            turns.append(Turn("assistant", reply, [], False))
        return Session(session_id_for(kind, topic.topic_id, turns), kind, topic.topic_id, turns)

    def write_filler(self, rng: random.Random, n_turns: int) -> Session:
        pairs = textbank.filler_session(rng, n_turns=n_turns, words=self.w.assistant_words)
        turns = [Turn(role, text, [], False) for role, text in pairs]
        for t in turns:  # filler assistants need not end with a follow-up question
            self.log.record(check_turn(TurnSpec(role="user", text=t.content, forbidden=self._index)))
        return Session(session_id_for("filler", "", turns), "filler", "", turns)
