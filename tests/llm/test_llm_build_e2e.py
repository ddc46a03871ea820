"""A tiny benchmark built with ``generator=llm`` against the stand-in server (scripted roles, a
child process): it passes the validate gates, fills with a made-up ShareGPT/UltraChat corpus,
accounts tokens in the manifest, and a re-run sends 0 requests and writes identical bytes."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import make_project, run_stage
from tests.support.scripted_llm import ScriptedServer, llm_overrides

pytestmark = pytest.mark.slow

SUBJECTS = [
    "sourdough",
    "tomato seedlings",
    "a rowing machine",
    "watercolour paper",
    "a bike chain",
    "houseplants",
    "a sewing machine",
    "cold brew coffee",
    "a compost bin",
    "hiking boots",
]
ASKS = [
    "How do I look after",
    "What is the best way to choose",
    "Can you explain how to clean",
    "What should a beginner know about",
    "How can I store",
    "Is it worth buying",
]
REPLIES = [
    "Start small and keep notes on what works for you.",
    "Check the label first and follow the basics.",
    "Most people find that a simple routine is enough.",
    "It depends on how often you plan to use it.",
]


def corpus(d):
    """60 made-up conversations of varied length, half ShareGPT (.json), half UltraChat (.jsonl)."""
    d.mkdir()
    convs = []
    for i, (a, s) in enumerate((a, s) for a in ASKS for s in SUBJECTS):
        turns = [f"{a} {s} at home?"]
        for j in range(1 + i % 5):  # 2 to 10 turns, replies of 40 to 300 words
            reply = " ".join(REPLIES[(i + j + k) % 4] for k in range(4 + (i * 7 + j) % 40))
            turns += [
                f"{reply} With {s}, patience matters more than gear.",
                f"And what about {SUBJECTS[(i + j + 3) % 10]}?",
            ]
        convs.append(turns[:-1] if len(turns) % 2 else turns)
    share = [
        {"id": i, "conversations": [{"from": "human" if j % 2 == 0 else "gpt", "value": t} for j, t in enumerate(c)]}
        for i, c in enumerate(convs[:30])
    ]
    (d / "sharegpt.json").write_text(json.dumps(share))
    (d / "ultrachat.jsonl").write_text(
        "".join(json.dumps({"id": i, "data": c}) + "\n" for i, c in enumerate(convs[30:]))
    )
    return d


def test_llm_build_validates_and_reruns_for_free(tiny_project, tmp_path):
    root = make_project(tmp_path / "llm")
    for d in ("ontology", "images", "filtered"):
        shutil.copytree(tiny_project / "data" / d, root / "data" / d)
    small = [
        "data.scale=tiny",
        "images.workers=1",
        "data.lengths=[32k]",
        "data.scales.tiny.haystack_sessions=80",
        "data.scales.tiny.filler_sessions=40",
        f"+generator.filler.path={corpus(tmp_path / 'corpus')}",
    ]
    with ScriptedServer(bad_first_qa=True) as srv:
        ov = [*small, *llm_overrides(srv.base_url)]
        assert run_stage(root, "generate", *ov) == 0
        first = srv.stats()
        gen = root / "data" / "generated"
        snap = {p.name: p.read_bytes() for p in gen.iterdir()}
        assert run_stage(root, "generate", *ov) == 0  # re-run: everything from the request cache
        assert srv.stats()["requests"] == first["requests"]
        for st in ("assemble", "validate", "evaluate", "judge", "report"):
            # the scripted stand-in writes the same canned turns again and again: its sentence repetition is
            # reported (checked below) but cannot be the gate here; every other gate applies
            extra = ["validate.advisory=[repetition]"] if st == "validate" else []
            assert run_stage(root, st, *ov, "model=refuse", *extra) == 0, st
        validity = json.loads((root / "reports" / "validity.json").read_text())
        advisory = {k for k, g in validity["gates"].items() if g.get("advisory") and not g["pass"]}
        assert advisory <= {k for k in validity["gates"] if k.startswith("repetition/")}
    assert {p.name: p.read_bytes() for p in gen.iterdir()} == snap  # byte-identical, manifest included
    tasks = first["tasks"]
    assert {"qa", "text_only", "user_turn", "assistant_turn", "leak_check"} <= set(tasks)
    m = json.loads((gen / "manifest.json").read_text())
    llm = m["llm"]
    assert llm["prompt_version"] == "llmgen-v1" and llm["models"]["user"]["model"] == "gpt-5.1"
    total = llm["usage"]["total"]
    assert total["answers"] >= first["requests"] and total["repairs"] > 0 and total["failures"] == 0
    assert total["prompt_tokens"] > 0 and total["completion_tokens"] > 0 and total["cost_usd"] > 0
    assert m["filler_corpus"]["kept"] == 60 and m["sessions"]["filler"] == 40
    # what each run sent is recorded outside DVC: the re-run sent nothing
    runs = [json.loads(x) for x in (root / ".memlens_cache" / "llm_runs.jsonl").read_text().splitlines()]
    assert runs[0]["run"]["total"]["requests"] == first["requests"] and runs[1]["run"]["total"]["requests"] == 0
    validity = json.loads((root / "reports" / "validity.json").read_text())
    assert all(g["pass"] or g["advisory"] for g in validity["gates"].values()), validity["gates"]
    questions = [json.loads(x) for x in (gen / "questions.jsonl").read_text().splitlines()]
    assert all(q["question"].startswith("Quick question. ") for q in questions)  # the writer's wording
    assert all("draft_question" in q["details"] and q["details"]["background"] for q in questions)
    sessions = [json.loads(x) for x in (gen / "sessions.jsonl").read_text().splitlines()]
    filler = [s for s in sessions if s["kind"] == "filler"]
    assert filler and all(any(w in s["turns"][0]["content"] for w in SUBJECTS) for s in filler)
    sim = [s for s in sessions if s["kind"] != "filler"]
    assert all(not t["content"].startswith("(pending") for s in sim for t in s["turns"])
    n_img = sum(len(t["images"]) for s in sim for t in s["turns"])
    assert 1.0 <= n_img / len(sim) <= 3.0 and 8 <= sum(len(s["turns"]) for s in sim) / len(sim) <= 12
    # the build's models and token accounting reach MLflow with the evaluation
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    exp = next(e for e in client.search_experiments() if e.name.startswith("memlens-"))
    parent = next(r for r in client.search_runs([exp.experiment_id]) if r.info.run_name == "refuse")
    p = parent.data.params
    assert p["build.generator"] == "llm" and p["build.models.assistant"] == "gemini-3-pro-preview"
    assert int(p["build.usage.prompt_tokens"]) == total["prompt_tokens"] and p["build.prompt_version"] == "llmgen-v1"
