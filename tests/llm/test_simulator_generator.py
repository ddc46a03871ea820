"""The two-model simulator (one session, real HTTP) and the question writer's triple checks."""

from __future__ import annotations

import json
import random

import pytest

from memlens.construction.abilities.base import Draft, FactDraft
from memlens.construction.generate.llm import check_triple, format_instruction
from memlens.construction.text.llm.engine import Endpoint, LLMEngine
from memlens.construction.text.llm.simulator import Simulator
from memlens.construction.text.sessions import Mention, WriterConfig
from memlens.construction.text.validators import RejectionLog
from memlens.core.errors import DataError
from memlens.core.schema import Topic
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.scripted_llm import ScriptedLLM

TOPIC = Topic("t_1", "experience", "Hobbies", "Indoor gardening", ["herb pots"])
MENTION = Mention("I took a photo of the shop sign <image> on my way home.", ["img1"], True, ["Rowan Bookshop"])


def simulator(server, **kw) -> Simulator:
    ep = Endpoint(base_url=server.base_url, model="sim")
    eng = LLMEngine({r: ep for r in ("user", "assistant", "leakage_checker")}, max_retries=0)
    return Simulator(eng, WriterConfig(turns=(8, 12), max_regenerations=kw.pop("regen", 2)), progress=False, **kw)


class LeakyFirst(ScriptedLLM):
    """Writes the hidden shop name into the first user turn that carries the photo."""

    def __init__(self, always: bool = False):
        super().__init__()
        self.leaked = 0
        self.always = always

    def __call__(self, body):
        text = super().__call__(body)
        system = body["messages"][0]["content"]
        if system.startswith("[memlens:user_turn") and "<image>" in text and (self.always or not self.leaked):
            self.leaked += 1
            return text[:-1] + ", right next to Rowan Bookshop."
        return text


def test_one_evidence_session_is_simulated_validated_and_leak_checked():
    responder = LeakyFirst()
    with FakeOpenAIServer(responder=responder) as srv:
        sim = simulator(srv)
        log = RejectionLog()
        w = sim.writer(log, ["secret answer"])
        pending = w.write(
            random.Random(3), "evidence", TOPIC, "herb pots", [MENTION], extra_forbidden=["Rowan Bookshop"]
        )
        assert pending.turns[0].content.startswith("(pending")
        out = sim.finish({pending.session_id: pending}, w.pending_logs)
        s = out[pending.session_id]
        assert s.session_id == pending.session_id and s.kind == "evidence" and 8 <= len(s.turns) <= 12
        assert [t.role for t in s.turns] == ["user", "assistant"] * (len(s.turns) // 2)
        (carrier,) = [t for t in s.turns if t.images]
        assert MENTION.text in carrier.content and carrier.images == ["img1"] and carrier.has_answer
        assert "Rowan Bookshop" not in s.text  # the leaky turn was caught and regenerated
        assert all(t.content.endswith("?") for t in s.turns if t.role == "assistant")
        assert responder.leaked == 1 and log.counts["semantic_leakage"] >= 1 and log.regenerated >= 1
        assert sim.stats["llm_leak_checks"] >= len(s.turns)
        # the assistant saw the history, with the photo as [photo] and its own turns as 'assistant'
        a_req = [b for b in srv.requests if b["messages"][0]["content"].startswith("[memlens:assistant_turn")][-1]
        roles = [m["role"] for m in a_req["messages"][1:]]
        assert roles[0] == "user" and roles[1] == "assistant" and "<image>" not in json.dumps(a_req["messages"][1:])


class AssistantLeaksOnce(ScriptedLLM):
    """The first assistant reply after the photo reads out a value only the image shows."""

    def __init__(self):
        super().__init__()
        self.leaked = 0

    def __call__(self, body):
        text = super().__call__(body)
        first = body["messages"][0]["content"].startswith("[memlens:assistant_turn") and not self.leaked
        if first and "[photo]" in body["messages"][-1]["content"]:
            self.leaked += 1
            return "The sign in your photo says OPEN 24 HOURS. " + text
        return text


def test_the_llm_check_catches_what_the_rules_do_not_check():
    """Assistant turns are not scanned for image values by the rules; the LLM check flags them."""
    m = Mention("I took a photo of the shop sign <image> on my way home.", ["img1"], True, ["OPEN 24 HOURS"])
    responder = AssistantLeaksOnce()
    with FakeOpenAIServer(responder=responder) as srv:
        sim = simulator(srv)
        w = sim.writer(RejectionLog(), [])
        p = w.write(random.Random(3), "evidence", TOPIC, "herb pots", [m])
        s = sim.finish({p.session_id: p}, w.pending_logs)[p.session_id]
    assert responder.leaked == 1 and sim.stats["llm_leak_flagged"] == 1
    assert "OPEN 24" not in s.text


def test_without_the_llm_check_the_leak_gets_through():
    m = Mention("I took a photo of the shop sign <image> on my way home.", ["img1"], True, ["OPEN 24 HOURS"])
    with FakeOpenAIServer(responder=AssistantLeaksOnce()) as srv:
        sim = simulator(srv, leakage_check=False)
        w = sim.writer(RejectionLog(), [])
        p = w.write(random.Random(3), "evidence", TOPIC, "herb pots", [m])
        s = sim.finish({p.session_id: p}, w.pending_logs)[p.session_id]
    assert "OPEN 24 HOURS" in s.text and not any("leak_check" in json.dumps(b) for b in srv.requests)


def test_an_evidence_session_that_keeps_leaking_fails_naming_it():
    with FakeOpenAIServer(responder=LeakyFirst(always=True)) as srv:
        sim = simulator(srv, regen=1)
        log = RejectionLog()
        w = sim.writer(log, [])
        p = w.write(random.Random(3), "evidence", TOPIC, "herb pots", [MENTION], extra_forbidden=["Rowan Bookshop"])
        with pytest.raises(DataError, match=rf"{p.session_id} \(evidence\).*user turn.*semantic_leakage|ngram_leakage"):
            sim.finish({p.session_id: p}, w.pending_logs)


def test_a_haystack_mention_that_cannot_be_written_is_dropped_not_the_session():
    with FakeOpenAIServer(responder=LeakyFirst(always=True)) as srv:
        sim = simulator(srv, regen=1)
        w = sim.writer(RejectionLog(), ["Rowan Bookshop"])
        p = w.write(random.Random(5), "haystack", TOPIC, "herb pots", [MENTION])
        s = sim.finish({p.session_id: p}, w.pending_logs)[p.session_id]
        assert not s.image_ids and sim.stats["haystack_mentions_dropped"] == 1


# ------------------------------------------------------------------------------ triple checks
DRAFT = Draft(
    question="Put these in order: (1) the bakery; (2) the florist. Answer with the numbers in parentheses, earliest first.",
    answer="(2)(1)",
    facts=[FactDraft("I took a photo of this bakery <image>.", [0]), FactDraft("Here is the florist <image>.", [1])],
    forbidden=["Ivy Bakery"],
)
GOOD = {
    "background": "Bakeries and florists line the high street near the station.",
    "entities": [{"name": "Ivy Bakery", "category": "bakery", "anaphor": "this bakery"}],
    "question": "Quick one. Put these in order: (1) the bakery; (2) the florist. "
    "Answer with the numbers in parentheses, earliest first.",
    "answer": "(2)(1)",
    "evidence_facts": ["Oh, I took a photo of this bakery <image>.", "And here is the florist <image>."],
}


def test_format_instruction():
    assert format_instruction(DRAFT.question) == ""  # no question mark: nothing to keep
    assert format_instruction("When was it? Answer in YYYY/MM/DD.") == "Answer in YYYY/MM/DD."
    assert format_instruction("How many were there?") == ""


@pytest.mark.parametrize(
    "change,error",
    [
        ({"answer": "(1)(2)"}, "answer must be exactly"),
        ({"evidence_facts": ["Oh, I took a photo of this bakery.", "And here is the florist <image>."]}, "<image> tag"),
        ({"evidence_facts": ["I took a photo of Ivy Bakery <image>.", "Here is the florist <image>."]}, "forbidden"),
        ({"evidence_facts": ["Here is the florist <image>."]}, "needs 2 sentences"),
        ({"question": "Put these in order: (2) the florist; (1) the bakery."}, "labels"),
        ({"background": "I love Ivy Bakery."}, "background"),
        (
            {"evidence_facts": ["This bakery <image> had a sign saying OPEN 24.", "Here is the florist <image>."]},
            "only the image",
        ),
    ],
)
def test_check_triple_rejects(change, error):
    assert check_triple(GOOD, DRAFT, ["OPEN 24"]) == []
    errs = check_triple({**GOOD, **change}, DRAFT, ["OPEN 24"])
    assert any(error in e for e in errs), errs


def test_check_triple_keeps_the_format_instruction():
    d = Draft(question="When did I go? Answer in YYYY/MM/DD.", answer="2025/05/20", facts=[])
    v = {**GOOD, "question": "When did I go there?", "answer": "2025/05/20", "evidence_facts": []}
    assert any("must end with 'Answer in YYYY/MM/DD.'" in e for e in check_triple(v, d, []))
    assert check_triple({**v, "question": "So, when did I go? Answer in YYYY/MM/DD."}, d, []) == []


def test_a_failed_run_resumes_from_the_cache_sending_only_what_is_missing(tmp_path):
    """A session whose requests fail (server errors) fails the run, naming it; the other sessions'
    answers are cached, so the next run sends only the failed session's requests."""
    from memlens.core.reqcache import RequestCache
    from tests.support.fake_openai import faults_by_key

    def build(server, cache):
        ep = Endpoint(base_url=server.base_url, model="sim")
        eng = LLMEngine({r: ep for r in ("user", "assistant", "leakage_checker")}, cache=cache, max_retries=0)
        sim = Simulator(eng, WriterConfig(turns=(8, 12), max_regenerations=0), progress=False)
        w = sim.writer(RejectionLog(), [])
        ss = {}
        for i, sub in enumerate(("herb pots", "broken sprinkler")):
            s = w.write(random.Random(i), "haystack", TOPIC, sub, [])
            ss[s.session_id] = s
        return sim, w, ss

    cache = RequestCache(tmp_path / "c.sqlite")
    with FakeOpenAIServer(responder=ScriptedLLM(), faults=faults_by_key({"broken sprinkler": ["500"] * 50})) as srv:
        sim, w, ss = build(srv, cache)
        bad = next(k for k, s in sim.specs.items() if s.subtopic == "broken sprinkler")
        with pytest.raises(DataError, match=rf"1 of 2 simulated sessions failed.*{bad}|{bad}"):
            sim.finish(ss, w.pending_logs)
        good_requests = srv.request_count - 1  # the failed session stopped at its first request
    with FakeOpenAIServer(responder=ScriptedLLM()) as srv:
        sim, w, ss = build(srv, cache)
        out = sim.finish(ss, w.pending_logs)
        assert all(len(s.turns) >= 8 for s in out.values())
        sent = srv.request_count
        bodies = srv.requests
    assert sent == len(out[bad].turns) and all("broken sprinkler" in json.dumps(b) for b in bodies)
    assert good_requests == len(next(s for k, s in out.items() if k != bad).turns)


def test_template_generator_fills_from_a_corpus(tmp_path):
    from memlens.construction.generate.backends import TemplateGenerator
    from tests.support.settings import settings

    p = tmp_path / "u.jsonl"
    p.write_text(
        json.dumps({"data": ["How do I repot a basil plant without hurting it?", "Water it first, then ease it out."]})
        + "\n"
    )
    gen = TemplateGenerator(settings(generator={"filler": {"path": str(p)}}, data={"seed": 1}))
    s = gen.writer(WriterConfig(), RejectionLog(), []).write_filler(random.Random(0), 6)
    assert (
        s.kind == "filler"
        and s.turns[0].content.startswith("How do I repot")
        and gen.manifest()["filler_corpus"]["kept"] == 1
    )
    plain = TemplateGenerator(settings(generator={"filler": None}, data={"seed": 1}))
    assert (
        plain.manifest() == {}
        and "repot" not in plain.writer(WriterConfig(), RejectionLog(), []).write_filler(random.Random(0), 6).text
    )
