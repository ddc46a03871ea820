"""validate stage: each validity gate fails when its defect is planted, and only then.

The gate functions run on hand-made records; the stage itself runs on a copy of the tiny benchmark
with one planted defect per test, with the adversaries replaced by neutral figures (they are tested
on constructed benchmarks in tests/validate/).
"""

from __future__ import annotations

import shutil

import pytest
from omegaconf import OmegaConf

from memlens.construction.validate import stage as V
from memlens.core.compose import load_config, validate_config
from memlens.core.config import Paths
from memlens.core.errors import GateError
from memlens.core.io import iter_jsonl, read_json, write_jsonl
from memlens.core.schema import AR, IE, Evidence, ImageRecord, Instance, Question, Session, Turn

GATES = (
    "text_leakage",
    "answerable_with_images",
    "answerable_text_only",
    "length_within_tolerance",
    "repetition/32k",
    "repetition/frequent_sentences",
)
DATE = "2024/05/31 (Fri) 07:58"


def sess(sid: str, text: str, kind: str = "haystack") -> Session:
    return Session(session_id=sid, kind=kind, topic_id="t", turns=[Turn(role="user", content=text)])


def quest(
    qid: str,
    answer: str,
    *,
    qtype: str = IE,
    essential: bool = True,
    forbidden=(),
    derivation=None,
    image_ids=(),
    evidence=(),
) -> Question:
    return Question(
        question_id=qid,
        question_type=qtype,
        question_subtype="",
        question=f"{qid}?",
        answer=answer,
        question_date=DATE,
        image_essential=essential,
        evidence=[Evidence(session_id=s, date="2024/05/01 (Wed) 10:00", fact="") for s in evidence],
        details={"forbidden": list(forbidden), "derivation": derivation, "image_ids": list(image_ids)},
    )


def inst(qid: str, sids: list[str], answer_sids=(), total: int = 32768) -> Instance:
    return Instance(
        question_id=qid,
        length="32k",
        target_tokens=32768,
        session_ids=sids,
        dates=[DATE] * len(sids),
        answer_session_ids=list(answer_sids),
        total_tokens=total,
        text_tokens=total,
        image_tokens=0,
        n_images=0,
    )


def img(i: int, truth: dict) -> ImageRecord:
    return ImageRecord(
        sha256=f"{i:064x}",
        family="named_sign",
        role="evidence",
        width=100,
        height=100,
        format="png",
        source="test",
        truth=truth,
    )


# ------------------------------------------------------------------------------------- gate functions
def test_text_leakage_finds_forbidden_strings_token_bounded():
    qs = {
        q.question_id: q
        for q in [
            quest("q1", "Larkspur Books", forbidden=["Larkspur Books", "$23.40", "Yes"]),
            quest("q2", "Oak Tree", essential=False, forbidden=["Oak Tree"]),  # text-answerable: not checked
            quest("q3", "Insufficient information", qtype=AR, essential=False, forbidden=["Dana's reading nook"]),
        ]
    }
    sessions = {
        s.session_id: s
        for s in [
            sess("h1", "We went to larkspur books, twice."),
            sess("h2", "The Larkspur Bookshop is new."),
            sess("h3", "It came to 23.40 in the end."),
            sess("h4", "Yes, I agree."),
            sess("h5", "The oak tree fell."),
            sess("h6", "My friend Dana's reading nook is tiny."),
            Session(
                session_id="h7",
                kind="haystack",
                topic_id="t",
                turns=[Turn(role="user", content="Nothing here <image>.", images=["0" * 64])],
            ),
        ]
    }
    instances = {
        "32k": [inst("q1", ["h1", "h2", "h3", "h4", "h7"]), inst("q2", ["h5"]), inst("q3", ["h6"])],
        "64k": [inst("q1", ["h2", "h4"])],
    }
    res = V.text_leakage(qs, sessions, instances)
    found = {(r["question_id"], r["length"], r["session_id"], r["string"]) for r in res["examples"]}
    assert found == {
        ("q1", "32k", "h1", "Larkspur Books"),
        ("q1", "32k", "h3", "$23.40"),
        ("q3", "32k", "h6", "Dana's reading nook"),
    }
    assert res["leaks"] == 3 and res["instances_checked"] == 3  # q1 at both lengths and q3


def test_answerability_with_and_without_images():
    a, b, c = img(1, {"text": "Larkspur Books"}), img(2, {"total": "$23.40"}), img(3, {"text": "Elm Road"})
    images = {r.sha256: r for r in (a, b, c)}
    get = lambda path: {"op": "get", "img": 0, "path": [path]}  # noqa: E731
    sessions = {
        s.session_id: s
        for s in [sess("e1", "Look at this."), sess("e2", "That was 23.40 well spent."), sess("e3", "Here it is.")]
    }
    qs = {
        q.question_id: q
        for q in [
            quest("ok", "Larkspur Books", derivation=get("text"), image_ids=[a.sha256], evidence=["e1"]),
            quest("wrong_reference", "Oak Books", derivation=get("text"), image_ids=[a.sha256], evidence=["e1"]),
            quest("text_says_it", "$23.40", derivation=get("total"), image_ids=[b.sha256], evidence=["e2"]),
            quest("const_only", "Blue", derivation={"op": "const", "value": "Blue"}, evidence=["e3"]),
            quest("truth_lacks_field", "Elm Road", derivation=get("name"), image_ids=[c.sha256], evidence=["e3"]),
            quest("refusal", "Insufficient information", qtype=AR, essential=False),
        ]
    }
    res = V.answerability(qs, sessions, images)
    assert res["answerable"] == 5
    assert res["derivable_with_images"] == 3  # ok, text_says_it, const_only
    failed = {f["question_id"]: f for f in res["failures"]}
    assert set(failed) == {"wrong_reference", "truth_lacks_field"}
    assert failed["wrong_reference"]["derived"] == "Larkspur Books"
    assert failed["truth_lacks_field"]["derived"] is None and "KeyError" in failed["truth_lacks_field"]["error"]
    assert res["derivable_text_only"] == 2  # the evidence text holds 23.40; a constant needs no image
    assert res["rate_text_only"] == pytest.approx(2 / 5)


def test_composition_counts_and_worst_length_error():
    qs = {q.question_id: q for q in [quest("a", "x"), quest("b", "y"), quest("c", "z", qtype=AR, essential=False)]}
    res = V.composition(qs, {"32k": [inst("a", ["s"], total=32768), inst("b", ["s", "t"], total=33096)]})
    assert res["questions"] == 3 and res["by_type"] == {AR: 1, IE: 2}
    ln = res["lengths"]["32k"]
    assert (ln["instances"], ln["tokens_min"], ln["tokens_max"]) == (2, 32768, 33096)
    assert ln["max_rel_error"] == pytest.approx((33096 - 32768) / 32768, abs=1e-5) and ln["sessions_mean"] == 1.5


def test_closed_answers_majority_and_leave_one_out():
    """Balanced A/B: the majority's share is one half and the leave-one-out majority is never
    right (each question's own vote is removed); a skewed Yes/No: the leave-one-out majority is
    right on the majority's questions. Open answers and refusals are not listed."""
    qs = [quest(f"ab{i}", a) for i, a in enumerate("ABAB")]
    qs += [quest(f"yn{i}", a) for i, a in enumerate(["Yes", "Yes", "Yes", "No"])]
    qs += [quest("open", "Harbor"), quest("ar", "Yes", qtype=AR, essential=False)]
    res = V.closed_answers({q.question_id: q for q in qs})
    assert set(res) == {f"{IE}//ab", f"{IE}//yesno"}
    ab, yn = res[f"{IE}//ab"], res[f"{IE}//yesno"]
    assert ab["n"] == 4 and ab["answers"] == {"A": 2, "B": 2} and ab["majority_share"] == 0.5
    assert ab["loo_majority_accuracy"] == 0.0 and ab["chance"] == 0.5
    assert yn["majority_share"] == 0.75 and yn["loo_majority_accuracy"] == 0.75


# ------------------------------------------------------------------------------------- the stage
@pytest.fixture(scope="module")
def validate_inputs(tiny_project, tmp_path_factory):
    """What validate reads, copied once from the tiny benchmark (no image files needed)."""
    root = tmp_path_factory.mktemp("validate-inputs")
    shutil.copytree(tiny_project / "data" / "generated", root / "data" / "generated")
    shutil.copytree(tiny_project / "data" / "instances", root / "data" / "instances")
    (root / "data" / "images").mkdir(parents=True)
    shutil.copy(tiny_project / "data" / "images" / "index.jsonl", root / "data" / "images" / "index.jsonl")
    return root


@pytest.fixture(scope="module")
def cfg(tiny_project):
    return load_config(["data.scale=tiny"], root=tiny_project)


@pytest.fixture()
def proj(validate_inputs, tmp_path):
    dest = tmp_path / "proj"
    shutil.copytree(validate_inputs, dest)
    return dest


NEUTRAL = {
    "text_only": {"chance": {}, "lengths": {}},
    "detectors": {},
    "repetition": {
        "min_words": 5,
        "frequent_uses": 100,
        "sentence_occurrences": 100,
        "distinct_sentences": 100,
        "frequent_share": 0.0,
        "top_count": 1,
        "top_sentences": [],
        "lengths": {
            "32k": {"histories": 25, "repeat_share_mean": 0.0, "repeat_share_median": 0.0, "repeat_share_max": 0.0}
        },
    },
    "timing": {},
}


@pytest.fixture()
def neutral_classifier(monkeypatch):
    """The adversaries replaced by figures that pass (the other gates are under test)."""
    monkeypatch.setattr(V, "run_all", lambda *a, **k: {k: dict(v) for k, v in NEUTRAL.items()})


def rows(path):
    return list(iter_jsonl(path))


def rewrite(path, fn):
    out = [fn(r) or r for r in rows(path)]
    write_jsonl(path, out)


def run_validate(cfg, root, **vcfg):
    c = validate_config(OmegaConf.merge(cfg, {"validate": vcfg}) if vcfg else cfg)
    try:
        V.run(c, Paths(root))
        err = None
    except GateError as exc:
        err = str(exc)
    return err, read_json(root / "reports" / "validity.json")


def failing(report) -> set[str]:
    return {k for k, v in report["gates"].items() if not v["pass"]}


def first_question(root, pred):
    return next(q for q in rows(root / "data" / "generated" / "questions.jsonl") if pred(q))


def plant_leak(root) -> tuple[dict, str]:
    q = first_question(root, lambda q: q["image_essential"] and q["question_type"] == IE)
    inst32 = next(i for i in rows(root / "data" / "instances" / "32k.jsonl") if i["question_id"] == q["question_id"])
    hay = next(s for s in inst32["session_ids"] if s not in inst32["answer_session_ids"])

    def leak(s):
        if s["session_id"] == hay:
            s["turns"][0]["content"] += f" By the way, it was {q['answer']}."

    rewrite(root / "data" / "generated" / "sessions.jsonl", leak)
    return q, hay


def test_unchanged_benchmark_passes_every_gate(cfg, proj, neutral_classifier):
    err, rep = run_validate(cfg, proj)
    assert err is None and failing(rep) == set()
    assert set(rep["gates"]) == set(GATES)
    md = (proj / "reports" / "validity.md").read_text()
    assert all(f"| {g} |" in md for g in GATES) and "**NO**" not in md


def test_answer_in_a_haystack_session_fails_the_leakage_gate(cfg, proj, neutral_classifier):
    q, hay = plant_leak(proj)
    err, rep = run_validate(cfg, proj)
    assert failing(rep) == {"text_leakage"} and "text_leakage" in err
    ex = rep["text_leakage"]["examples"]
    assert {(e["question_id"], e["session_id"]) for e in ex} == {(q["question_id"], hay)}
    assert "**NO**" in (proj / "reports" / "validity.md").read_text()


def test_wrong_reference_fails_the_with_images_gate(cfg, proj, neutral_classifier):
    q = first_question(proj, lambda q: q["question_type"] != AR)
    rewrite(
        proj / "data" / "generated" / "questions.jsonl",
        lambda r: r.update(answer="Nothing the image shows") if r["question_id"] == q["question_id"] else None,
    )
    err, rep = run_validate(cfg, proj)
    assert failing(rep) == {"answerable_with_images"} and "answerable_with_images" in err
    assert [f["question_id"] for f in rep["answerability"]["failures"]] == [q["question_id"]]


def test_image_truth_without_the_fact_fails_the_with_images_gate(cfg, proj, neutral_classifier):
    q = first_question(proj, lambda q: q["question_type"] != AR and q["details"]["image_ids"])
    ids = set(q["details"]["image_ids"])
    rewrite(
        proj / "data" / "images" / "index.jsonl",
        lambda r: r["image"].update(truth={}) if r["image"]["sha256"] in ids else None,
    )
    _err, rep = run_validate(cfg, proj)
    assert failing(rep) == {"answerable_with_images"}
    assert q["question_id"] in {f["question_id"] for f in rep["answerability"]["failures"]}


def test_text_derivable_answer_fails_the_text_only_gate(cfg, proj, neutral_classifier):
    q = first_question(proj, lambda q: q["question_type"] != AR)
    rewrite(
        proj / "data" / "generated" / "questions.jsonl",
        lambda r: (
            r["details"].update(derivation={"op": "const", "value": r["answer"]})
            if r["question_id"] == q["question_id"]
            else None
        ),
    )
    err, rep = run_validate(cfg, proj)
    assert failing(rep) == {"answerable_text_only"} and "answerable_text_only" in err
    assert rep["answerability"]["derivable_text_only"] == 1
    # a looser threshold admits it
    err, rep = run_validate(cfg, proj, max_text_only_rate=0.5)
    assert err is None and failing(rep) == set()


def test_instance_off_its_target_fails_the_length_gate(cfg, proj, neutral_classifier):
    path = proj / "data" / "instances" / "64k.jsonl"
    first = rows(path)[0]["question_id"]
    rewrite(
        path, lambda r: r.update(total_tokens=int(r["target_tokens"] * 1.05)) if r["question_id"] == first else None
    )
    err, rep = run_validate(cfg, proj)
    assert failing(rep) == {"length_within_tolerance"} and "length_within_tolerance" in err
    assert rep["gates"]["length_within_tolerance"]["value"] == pytest.approx(0.05, abs=1e-4)


def test_warn_only_reports_failed_gates_without_failing(cfg, proj, neutral_classifier):
    plant_leak(proj)
    err, rep = run_validate(cfg, proj, warn_only=True)
    assert err is None and failing(rep) == {"text_leakage"}


def test_repetition_fails_by_default_and_is_only_reported_when_advisory(cfg, proj, monkeypatch):
    figs = {k: dict(v) for k, v in NEUTRAL.items()}
    figs["repetition"] = {**NEUTRAL["repetition"], "lengths": {"32k": {**NEUTRAL["repetition"]["lengths"]["32k"]}}}
    figs["repetition"]["lengths"]["32k"]["repeat_share_mean"] = 0.4
    monkeypatch.setattr(V, "run_all", lambda *a, **k: {k: dict(v) for k, v in figs.items()})
    err, rep = run_validate(cfg, proj)
    assert err is not None and "repetition/32k" in err
    assert rep["metrics"]["validity/repetition/32k"] == 0.4 and rep["metrics"]["validity/repetition/32k/pass"] == 0.0
    err, rep = run_validate(cfg, proj, advisory=["repetition"])
    assert err is None and failing(rep) == {"repetition/32k"} and rep["gates"]["repetition/32k"]["advisory"]
    assert "**NO** (advisory)" in (proj / "reports" / "validity.md").read_text()
