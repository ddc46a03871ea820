"""The two-model session simulator: a user model and an assistant model write each session.

:class:`SimulatedWriter` has the interface of :class:`memlens.construction.text.sessions.SessionWriter`,
so the generate stage writes evidence and haystack sessions with the same calls whichever
generator is configured. ``write`` decides the session's shape from the stage's rng (number of
turn pairs, which user turns carry the mentions, a request seed) and returns a *pending* session
whose id is the hash of that shape; :meth:`Simulator.finish` then simulates every pending session
concurrently (turns of one session in order, sessions in parallel through the engine's client).

Each generated turn passes the same six-check validator chain as template turns
(:func:`memlens.construction.text.validators.check_turn`) and, when the session has hidden facts (the
question's answer and entity, the values only its images show), the LLM semantic-leakage check of
the ``leakage_checker`` role; a failing turn is regenerated with another request seed, up to
``max_regenerations`` times. An evidence session that cannot be completed is an error naming the
session and the last failures; a haystack session whose mention cannot be admitted is simulated
again without it (counted in :attr:`Simulator.stats`).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections import Counter
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from memlens.construction.text.leakage import PhraseIndex
from memlens.construction.text.llm import prompts
from memlens.construction.text.llm.engine import LLMEngine, LLMRequestError
from memlens.construction.text.llm.schemas import LEAK_CHECK
from memlens.construction.text.sessions import Mention, SessionWriter, WriterConfig
from memlens.construction.text.validators import RejectionLog, TurnSpec, check_turn
from memlens.core.errors import DataError
from memlens.core.io import canonical_bytes, sha256_bytes
from memlens.core.schema import Session, Topic, Turn

__all__ = ["SimulatedWriter", "Simulator"]

PENDING = "(pending simulation)"


@dataclass
class _Spec:
    session_id: str
    kind: str
    topic: Topic
    subtopic: str
    mentions: list[Mention]
    n_pairs: int
    slots: list[int]
    forbidden: PhraseIndex
    hidden: list[str]
    ambiguity: list[str]
    seed: int


def _seed(*parts) -> int:
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:8], 16)


@dataclass
class Simulator:
    """Pending sessions and the roles that write them (``user``, ``assistant``, ``leakage_checker``)."""

    engine: LLMEngine
    wcfg: WriterConfig
    leakage_check: bool = True
    progress: bool = True
    specs: dict[str, _Spec] = field(default_factory=dict)
    stats: Counter = field(default_factory=Counter)

    def writer(self, log: RejectionLog, forbidden: list[str] | None = None, filler=None) -> SimulatedWriter:
        return SimulatedWriter(self.wcfg, log, forbidden, simulator=self, filler=filler)

    # ------------------------------------------------------------------ one turn
    async def _admit(self, spec: _Spec, log: RejectionLog, i: int, role: str, history, m: Mention | None) -> str:
        words = self.wcfg.user_words if role == "user" else self.wcfg.assistant_words
        ctx = {
            "topic": spec.topic.title,
            "subtopic": spec.subtopic,
            "track": spec.topic.track,
            "words": list(words),
            "mention": m.text if m else None,
            "photo": bool(history and "<image>" in history[-1][1]),
        }
        failed: list[str] = []
        # remaining requests of this session, about three per turn pair (user, assistant, leakage check)
        prio = -float(3 * (spec.n_pairs - i) - (role == "assistant"))
        for attempt in range(self.wcfg.max_regenerations + 1):
            seed = _seed(spec.seed, i, role, attempt)
            if role == "user":
                msgs = prompts.user_turn(ctx, history)
                text = await self.engine.text(
                    "user", f"user_turn:{spec.session_id}:{i}", msgs, seed=seed, priority=prio
                )
                ts = TurnSpec(
                    role="user",
                    text=text,
                    words=(1, 400),
                    n_images=len(m.image_ids) if m else 0,
                    mention=m.text if m else None,
                    image_values=list(m.image_values) if m else [],
                    forbidden=spec.forbidden,
                    ambiguity=spec.ambiguity,
                )
            else:
                msgs = prompts.assistant_turn(ctx, history)
                tag = f"assistant_turn:{spec.session_id}:{i}"
                text = await self.engine.text("assistant", tag, msgs, seed=seed, priority=prio)
                ts = TurnSpec(
                    role="assistant", text=text, words=words, forbidden=spec.forbidden, ambiguity=spec.ambiguity
                )
            failed = check_turn(ts)
            if not failed and self.leakage_check and spec.hidden:
                verdict = await self.engine.json(
                    "leakage_checker",
                    f"leak_check:{spec.session_id}:{i}:{role}",
                    prompts.leak_check(text, spec.hidden, LEAK_CHECK),
                    LEAK_CHECK,
                    priority=prio,
                )
                self.stats["llm_leak_checks"] += 1
                if verdict["reveals"]:
                    self.stats["llm_leak_flagged"] += 1
                    failed = ["semantic_leakage"]
            log.record(failed)
            if not failed:
                return text
        raise DataError(
            f"generate: session {spec.session_id} ({spec.kind}): could not write an admissible {role} turn {i} "
            f"after {self.wcfg.max_regenerations} regenerations (last failures: {failed})"
        )

    async def _simulate(self, spec: _Spec, log: RejectionLog) -> list[Turn]:
        slot_of = dict(zip(spec.slots, spec.mentions))
        history: list[tuple[str, str]] = []
        turns: list[Turn] = []
        for i in range(spec.n_pairs):
            m = slot_of.get(i)
            text = await self._admit(spec, log, i, "user", history, m)
            turns.append(Turn("user", text, list(m.image_ids) if m else [], bool(m and m.has_answer)))
            history.append(("user", text))
            reply = await self._admit(spec, log, i, "assistant", history, None)
            turns.append(Turn("assistant", reply, [], False))
            history.append(("assistant", reply))
        return turns

    async def _one(self, spec: _Spec, log: RejectionLog) -> list[Turn]:
        try:
            return await self._simulate(spec, log)
        except (DataError, LLMRequestError):
            if spec.kind != "haystack" or not spec.mentions:
                raise
        # a haystack mention that cannot be written here: keep the session text-only
        self.stats["haystack_mentions_dropped"] += len(spec.mentions)
        bare = _Spec(**{**spec.__dict__, "mentions": [], "slots": [], "hidden": [], "seed": _seed(spec.seed, "bare")})
        return await self._simulate(bare, log)

    # ------------------------------------------------------------------ all pending sessions
    def finish(self, sessions: dict[str, Session], logs: dict[str, RejectionLog]) -> dict[str, Session]:
        """Simulate every pending session in ``sessions`` (ids registered by :meth:`SimulatedWriter.write`);
        ``logs`` maps session id -> the rejection log of its writer. Raises :class:`DataError`
        naming every session that failed (the request cache keeps what succeeded)."""
        todo = sorted(k for k, s in sessions.items() if k in self.specs and s.turns[0].content == PENDING)

        async def main() -> tuple[dict[str, list[Turn]], list[str]]:
            out: dict[str, list[Turn]] = {}
            errors: list[str] = []
            bar = tqdm(total=len(todo), desc="simulate sessions", unit="session", disable=not self.progress)

            async def run(sid: str) -> None:
                try:
                    out[sid] = await self._one(self.specs[sid], logs[sid])
                except (DataError, LLMRequestError) as exc:
                    errors.append(str(exc))
                bar.update(1)

            try:
                await asyncio.gather(*(run(s) for s in todo))
            finally:
                bar.close()
                await self.engine.aclose()
            return out, errors

        done, errors = asyncio.run(main())
        if errors:
            shown = "\n  ".join(sorted(errors)[:10])
            raise DataError(
                f"generate: {len(errors)} of {len(todo)} simulated sessions failed (a re-run resends only "
                f"these; the cache keeps the rest):\n  {shown}"
            )
        res = dict(sessions)
        for sid, turns in done.items():
            s = sessions[sid]
            res[sid] = Session(sid, s.kind, s.topic_id, turns)
        return res


class SimulatedWriter(SessionWriter):
    """A :class:`SessionWriter` whose sessions are written by the :class:`Simulator`'s models."""

    def __init__(self, wcfg: WriterConfig, log: RejectionLog, forbidden=None, *, simulator: Simulator, filler=None):
        super().__init__(wcfg, log, forbidden)
        self.sim = simulator
        self.filler = filler
        self.pending_logs: dict[str, RejectionLog] = {}

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
        seed = rng.getrandbits(32)
        hidden = sorted({v for m in mentions for v in m.image_values} | {f for f in (extra_forbidden or []) if f})
        shape = {
            "kind": kind,
            "topic_id": topic.topic_id,
            "subtopic": subtopic,
            "n_pairs": n_pairs,
            "slots": slots,
            "mentions": [[m.text, m.image_ids, m.has_answer] for m in mentions],
            "seed": seed,
            "prompt_version": prompts.PROMPT_VERSION,
        }
        sid = "sess_" + sha256_bytes(canonical_bytes(shape))[:12]
        self.sim.specs[sid] = _Spec(
            sid, kind, topic, subtopic, list(mentions), n_pairs, slots, forbidden, hidden, list(ambiguity or []), seed
        )
        self.pending_logs[sid] = self.log
        return Session(sid, kind, topic.topic_id, [Turn("user", PENDING)])

    def write_filler(self, rng: random.Random, n_turns: int) -> Session:
        if self.filler is None:
            return super().write_filler(rng, n_turns)
        return self.filler.session(rng, n_turns, self._index, self.log)
