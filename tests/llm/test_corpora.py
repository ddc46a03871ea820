"""Filler from ShareGPT- and UltraChat-format files: normalisation, filters, dedupe, errors, draws."""

from __future__ import annotations

import json
import random

import pytest

from memlens.construction.text.corpora import CorpusFiller, FillerCorpus, is_english, normalise
from memlens.construction.text.leakage import PhraseIndex
from memlens.construction.text.validators import RejectionLog
from memlens.core.errors import DataError

EN_Q = "How do I keep my basil plant alive on a windowsill during the winter months?"
EN_A = "Basil likes warmth and light, so keep it away from cold glass and water it when the top of the soil is dry."


def sharegpt(tmp_path):
    recs = [
        {
            "id": "a",
            "conversations": [
                {"from": "system", "value": "You are helpful."},
                {"from": "human", "value": EN_Q},
                {"from": "human", "value": "It is a small pot."},
                {"from": "gpt", "value": EN_A + " <image> "},
                {"from": "human", "value": "Thanks, that is useful to know for the rest of the year."},
            ],
        },
        {
            "id": "dup",
            "conversations": [
                {"from": "human", "value": "  " + EN_Q.upper() + "   IT IS A SMALL POT."},
                {"from": "gpt", "value": EN_A},
            ],
        },
        {
            "id": "fr",
            "conversations": [
                {
                    "from": "human",
                    "value": "Comment est-ce que je garde mon basilic en vie pendant l'hiver sur le rebord?",
                },
                {
                    "from": "gpt",
                    "value": "Le basilic aime la chaleur et la lumière, gardez-le loin de la vitre froide.",
                },
            ],
        },
        {
            "id": "zh",
            "conversations": [
                {"from": "human", "value": "冬天怎么养罗勒？"},
                {"from": "gpt", "value": "放在温暖明亮的地方。"},
            ],
        },
        {"id": "gpt-first", "conversations": [{"from": "gpt", "value": "Hello there, how can I help you today?"}]},
    ]
    p = tmp_path / "sharegpt.json"
    p.write_text(json.dumps(recs))
    return p


def ultrachat(tmp_path):
    lines = [
        {
            "id": 1,
            "data": [
                "What is a good way to learn to juggle with three balls at home?",
                "Start with one ball, toss it in an arc from hand to hand, then add the second and third.",
            ],
        },
        {
            "prompt": "x",
            "messages": [
                {"role": "user", "content": "Can you suggest a quick dinner that uses chickpeas and spinach?"},
                {
                    "role": "assistant",
                    "content": "Try a chickpea and spinach curry: fry onion and garlic, add spices and simmer.",
                },
                {"role": "user", "content": "Is it good for the freezer as well, or should I eat it fresh?"},
                {"role": "assistant", "content": "It freezes well for up to three months in an airtight container."},
            ],
        },
        {"id": 3, "data": ["Hi", "Hello! " + "word " * 700]},
    ]
    p = tmp_path / "ultrachat.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return p


def test_sharegpt_normalised_filtered_and_deduplicated(tmp_path):
    c = FillerCorpus.load(path=str(sharegpt(tmp_path)))
    assert c.stats == {"records": 5, "kept": 1, "too_short": 1, "turn_length": 0, "language": 2, "duplicate": 1}
    (conv,) = c.conversations
    assert [r for r, _ in conv] == ["user", "assistant"]  # system dropped, cut to whole pairs
    assert conv[0][1] == EN_Q + " It is a small pot."  # consecutive user turns joined
    assert "<image>" not in conv[1][1] and conv[1][1] == EN_A


def test_ultrachat_both_layouts_and_length_filter(tmp_path):
    c = FillerCorpus.load(path=str(ultrachat(tmp_path)), max_words=300)
    assert c.stats["kept"] == 2 and c.stats["turn_length"] == 1
    assert sorted(len(x) for x in c.conversations) == [2, 4]
    cut = FillerCorpus.load(path=str(ultrachat(tmp_path)), max_turns=2, max_words=300)
    assert all(len(x) == 2 for x in cut.conversations)


def test_a_folder_reads_both_formats_and_order_does_not_matter(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    sharegpt(d), ultrachat(d)
    c = FillerCorpus.load(path=str(d), max_words=300)
    assert c.stats["kept"] == 3
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.jsonl").write_text((d / "ultrachat.jsonl").read_text())
    (other / "a.json").write_text((d / "sharegpt.json").read_text())
    assert FillerCorpus.load(path=str(other), max_words=300).conversations == c.conversations


@pytest.mark.parametrize(
    "content,match",
    [
        ('{"conversations": [{"from": "human"}]}\n', r"x.jsonl:1: conversations\[0\] needs"),
        ('{"id": 1}\n', "x.jsonl:1: not a ShareGPT"),
        ('{"data": ["a", 3]}\n', "must hold strings"),
        ('{"conversations": [{"from": "robot", "value": "hi"}]}\n', "unknown speaker 'robot'"),
        ("{not json\n", "x.jsonl"),
    ],
)
def test_bad_records_name_the_file_and_line(tmp_path, content, match):
    p = tmp_path / "x.jsonl"
    p.write_text(content)
    with pytest.raises(DataError, match=match):
        FillerCorpus.load(path=str(p))


def test_source_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        FillerCorpus.load(path=str(tmp_path / "missing.json"))
    with pytest.raises(DataError, match="exactly one"):
        FillerCorpus.load()
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"no \.json or \.jsonl"):
        FillerCorpus.load(path=str(tmp_path / "empty"))


def test_language_heuristic():
    assert is_english([EN_Q, EN_A])
    assert not is_english(["Le basilic aime la chaleur et la lumière du soleil en hiver."])
    assert not is_english(["冬天怎么养罗勒？"])


def test_normalise_drops_a_leading_assistant_turn():
    assert normalise([("gpt", "hi"), ("human", "q"), ("gpt", "a")]) == [("user", "q"), ("assistant", "a")]


def test_filler_draws_are_seeded_without_replacement_and_skip_forbidden(tmp_path):
    c = FillerCorpus.load(path=str(ultrachat(tmp_path)), max_words=300)
    log = RejectionLog()
    a = CorpusFiller(c, seed=1)
    s1 = a.session(random.Random(0), 12, PhraseIndex([]), log)
    s2 = a.session(random.Random(0), 12, PhraseIndex([]), log)
    assert s1.session_id != s2.session_id and s1.kind == "filler"
    b = CorpusFiller(c, seed=1)
    assert b.session(random.Random(0), 12, PhraseIndex([]), log).session_id == s1.session_id
    with pytest.raises(DataError, match="2 usable conversations"):
        a.session(random.Random(0), 12, PhraseIndex([]), log)
    # a conversation naming a forbidden string is skipped (and counted)
    order = CorpusFiller(c, seed=1).order
    first, second = (" ".join(t for _, t in c.conversations[i]).lower().split() for i in order)
    word = next(w for w in first if w.isalpha() and len(w) > 4 and w not in second)
    g = CorpusFiller(c, seed=1)
    s = g.session(random.Random(0), 12, PhraseIndex([word]), log)
    assert g.skipped == 1 and s.session_id == s2.session_id


def test_a_hugging_face_dataset_is_read_through_datasets(monkeypatch):
    """The ``hf_dataset`` path (no network here: ``datasets.load_dataset`` is replaced by a stand-in
    returning rows in the ultrachat_200k layout)."""
    import datasets

    calls = []

    def fake_load(name, split):
        calls.append((name, split))
        return [
            {"prompt": "p", "messages": [{"role": "user", "content": EN_Q}, {"role": "assistant", "content": EN_A}]}
        ]

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    c = FillerCorpus.load(hf_dataset="HuggingFaceH4/ultrachat_200k", hf_split="train_sft")
    assert calls == [("HuggingFaceH4/ultrachat_200k", "train_sft")] and c.conversations == [
        [("user", EN_Q), ("assistant", EN_A)]
    ]

    def broken(name, split):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", broken)
    with pytest.raises(DataError, match=r"'HuggingFaceH4/ultrachat_200k' \(train_sft\): cannot load it \(no network\)"):
        FillerCorpus.load(hf_dataset="HuggingFaceH4/ultrachat_200k", hf_split="train_sft")
