"""The prompt protocol: hand-written expected messages for a small item, per mode and layout."""

from __future__ import annotations

import pytest

from memlens.core.errors import ImageError
from memlens.core.items import EvalItem, HistorySession
from memlens.core.schema import Question, Turn
from memlens.eval.prompt import (
    INSTRUCTIONS,
    SYSTEM_PROMPT,
    ImageRef,
    build_messages,
    history_key,
    instruction_for,
    iter_images,
)
from memlens.eval.systems.base import MODES

SYS = (
    "Provide answers based on the given conversation history. If the question cannot be answered based on "
    'the given conversation, respond with "Insufficient information".'
)
D1, D2, D3 = "2024/05/01 (Wed) 10:00", "2024/05/03 (Fri) 09:30", "2024/05/07 (Tue) 18:05"
QDATE = "2024/05/31 (Fri) 07:58"


def _item(tmp_path, *, missing: str | None = None) -> EvalItem:
    files = {}
    for name in ("a", "b", "c"):
        p = tmp_path / f"{name}.png"
        p.write_bytes(b"not decoded by the prompt builder")
        files[name] = p
    q = Question(
        question_id="q_1",
        question_type="information_extraction",
        question_subtype="entity",
        question="What colour was the mug in <image>?",
        answer="red",
        question_date=QDATE,
    )
    s1 = HistorySession(
        "s1",
        D1,
        [Turn("user", "Look at my mug <image> and my cat <image>", ["a", "b"]), Turn("assistant", "  Nice mug!  ")],
    )
    s2 = HistorySession(
        "s2",
        D2,
        [  # starts with an assistant turn
            Turn("assistant", "Welcome back."),
            Turn("user", "<image>", ["c"]),
            Turn("user", "   "),
        ],
        is_evidence=True,
    )
    s3 = HistorySession("s3", D3, [Turn("user", "<image> second time", ["a"]), Turn("assistant", "Same mug.")])

    def resolve(image_id: str):
        if image_id == missing:
            raise ImageError(tmp_path / "gone.png", "missing file")
        return files[image_id]

    return EvalItem(q, "32k", [s1, s2, s3], resolve)


def T(text):
    return {"type": "text", "text": text}


def img(path):
    return {"type": "image_url", "image_url": {"url": str(path)}}


def Q(instruction):
    return {
        "role": "user",
        "content": [T(f"{instruction}\nQuestion Date: {QDATE}\nQuestion: What colour was the mug in <image>?\n")],
    }


def test_official_strings_are_verbatim():
    assert SYSTEM_PROMPT == SYS
    assert instruction_for("standard") == "Directly output the answer with no extra output."
    assert instruction_for("cot") == "Think step by step before providing your answer."
    assert instruction_for("reasoning") == (
        "First provide your reasoning inside [REASONING], then provide your final "
        "answer inside [ANSWER].\nFormat:\n[REASONING] your reasoning here\n"
        "[ANSWER] your answer here"
    )
    for mode in ("text_only", "no_context", "label_images", "oracle_evidence"):
        assert instruction_for(mode) == INSTRUCTIONS["standard"]
    with pytest.raises(ValueError, match="unknown mode"):
        instruction_for("bogus")


def test_standard_messages_exact(tmp_path):
    item = _item(tmp_path)
    a, b, c = (tmp_path / f"{n}.png" for n in "abc")
    expected = [
        {"role": "system", "content": [T(SYS)]},
        {
            "role": "user",
            "content": [T(f"=== Session 1 (Date: {D1}) ===\nLook at my mug "), img(a), T(" and my cat "), img(b)],
        },
        {"role": "assistant", "content": [T("Nice mug!")]},
        # the session starts with an assistant turn: its header sits in the assistant message
        {"role": "assistant", "content": [T(f"=== Session 2 (Date: {D2}) ===\nWelcome back.")]},
        # an image-only first block: no header here (not the session's first turn), image alone
        {"role": "user", "content": [img(c)]},
        # the whitespace-only turn produces no message at all; consecutive user turns are not merged
        {"role": "user", "content": [T(f"=== Session 3 (Date: {D3}) ==="), img(a), T(" second time")]},
        {"role": "assistant", "content": [T("Same mug.")]},
        Q(INSTRUCTIONS["standard"]),
    ]
    got = build_messages(item, "standard")
    assert got == expected
    refs = list(iter_images(got))
    assert [r.image_id for r in refs] == ["a", "b", "c", "a"] and all(isinstance(r, ImageRef) for r in refs)


@pytest.mark.parametrize("mode", ["cot", "reasoning"])
def test_instruction_modes_change_only_the_question(tmp_path, mode):
    item = _item(tmp_path)
    std, other = build_messages(item, "standard"), build_messages(item, mode)
    assert other[:-1] == std[:-1]
    assert other[-1] == Q(INSTRUCTIONS[mode])


def test_label_images_counter_runs_across_the_item(tmp_path):
    item = _item(tmp_path)
    a, b, c = (tmp_path / f"{n}.png" for n in "abc")
    got = build_messages(item, "label_images")
    assert got == build_messages(item, "standard", label_images=True)
    assert got[1]["content"] == [
        T(f"=== Session 1 (Date: {D1}) ===\nLook at my mug "),
        T("[Image 1]"),
        img(a),
        T(" and my cat "),
        T("[Image 2]"),
        img(b),
    ]
    assert got[4]["content"] == [T("[Image 3]"), img(c)]
    # a label block is text: the next session's header is prefixed to it
    assert got[5]["content"] == [T(f"=== Session 3 (Date: {D3}) ===\n[Image 4]"), img(a), T(" second time")]
    assert got[-1] == Q(INSTRUCTIONS["standard"])


def test_text_only_strips_images_keeps_headers(tmp_path):
    item = _item(tmp_path, missing="c")  # text_only never resolves images
    got = build_messages(item, "text_only")
    assert not list(iter_images(got))
    assert got == [
        {"role": "system", "content": [T(SYS)]},
        {"role": "user", "content": [T(f"=== Session 1 (Date: {D1}) ===\nLook at my mug  and my cat")]},
        {"role": "assistant", "content": [T("Nice mug!")]},
        {"role": "assistant", "content": [T(f"=== Session 2 (Date: {D2}) ===\nWelcome back.")]},
        {"role": "user", "content": [T(f"=== Session 3 (Date: {D3}) ===\nsecond time")]},
        {"role": "assistant", "content": [T("Same mug.")]},
        Q(INSTRUCTIONS["standard"]),
    ]


def test_no_context(tmp_path):
    item = _item(tmp_path, missing="a")
    assert build_messages(item, "no_context") == [{"role": "system", "content": [T(SYS)]}, Q(INSTRUCTIONS["standard"])]
    assert history_key(item, "no_context") == ()


def test_oracle_evidence_keeps_only_evidence_sessions_in_order(tmp_path):
    item = _item(tmp_path)
    item.sessions[2].is_evidence = True  # s2 and s3 are evidence, s1 is not
    c, a = tmp_path / "c.png", tmp_path / "a.png"
    got = build_messages(item, "oracle_evidence")
    assert got == [
        {"role": "system", "content": [T(SYS)]},
        {"role": "assistant", "content": [T(f"=== Session 1 (Date: {D2}) ===\nWelcome back.")]},
        {"role": "user", "content": [img(c)]},
        {"role": "user", "content": [T(f"=== Session 2 (Date: {D3}) ==="), img(a), T(" second time")]},
        {"role": "assistant", "content": [T("Same mug.")]},
        Q(INSTRUCTIONS["standard"]),
    ]
    assert history_key(item, "oracle_evidence") == ("s2", "s3")
    assert history_key(item, "standard") == ("s1", "s2", "s3")


def test_oracle_without_evidence_equals_no_context(tmp_path):
    item = _item(tmp_path)
    for s in item.sessions:
        s.is_evidence = False
    assert build_messages(item, "oracle_evidence") == build_messages(item, "no_context")


def test_legacy_layout_exact(tmp_path):
    item = _item(tmp_path)
    a, b, c = (tmp_path / f"{n}.png" for n in "abc")
    got = build_messages(item, "standard", layout="legacy")
    head = f"{SYS}\nConversation:\n\n=== Session 1 (Date: {D1}) ===\n[User]: Look at my mug "
    assert got == [
        {
            "role": "user",
            "content": [
                T(head),
                img(a),
                T(" and my cat "),
                img(b),
                T(f"\n[Assistant]: Nice mug!\n\n=== Session 2 (Date: {D2}) ===\n[Assistant]: Welcome back.\n[User]: "),
                img(c),
                T(f"\n[User]: \n\n=== Session 3 (Date: {D3}) ===\n[User]: "),
                img(a),
                T(
                    f" second time\n[Assistant]: Same mug.\n\n\n{INSTRUCTIONS['standard']}\nQuestion Date: {QDATE}\n"
                    "Question: What colour was the mug in <image>?\n"
                ),
            ],
        }
    ]


def test_legacy_labels_text_only_and_no_context(tmp_path):
    item = _item(tmp_path)
    labelled = build_messages(item, "label_images", layout="legacy")
    texts = "".join(b["text"] for b in labelled[0]["content"] if b["type"] == "text")
    assert "[User]: Look at my mug [Image 1] " in texts and " and my cat [Image 2] " in texts
    assert "[User]: [Image 3] " in texts and "[User]: [Image 4] " in texts
    assert len(list(iter_images(labelled))) == 4
    text_only = build_messages(item, "text_only", layout="legacy")
    assert (
        len(text_only[0]["content"]) == 1 and "<image>" not in text_only[0]["content"][0]["text"].split("Question:")[0]
    )
    assert "[User]: Look at my mug  and my cat\n" in text_only[0]["content"][0]["text"]
    nc = build_messages(item, "no_context", layout="legacy")
    assert nc == [
        {
            "role": "user",
            "content": [
                T(
                    f"{SYS}\nConversation:\n\n\n{INSTRUCTIONS['standard']}\n"
                    f"Question Date: {QDATE}\nQuestion: What colour was the mug in <image>?\n"
                )
            ],
        }
    ]


def test_system_prefix(tmp_path):
    item = _item(tmp_path)
    assert build_messages(item, "no_context", system_prefix="/no_think\n")[0] == {
        "role": "system",
        "content": [T("/no_think\n" + SYS)],
    }
    legacy = build_messages(item, "no_context", layout="legacy", system_prefix="/no_think\n")
    assert legacy[0]["content"][0]["text"].startswith("/no_think\n" + SYS)


def test_missing_image_is_an_error_not_a_silent_drop(tmp_path):
    item = _item(tmp_path, missing="b")
    for layout in ("messages", "legacy"):
        with pytest.raises(ImageError, match="missing"):
            build_messages(item, "standard", layout=layout)
    # modes that do not show the image are unaffected
    build_messages(item, "text_only")
    build_messages(item, "oracle_evidence")


def test_unknown_layout_and_mode(tmp_path):
    item = _item(tmp_path)
    with pytest.raises(ValueError, match="layout"):
        build_messages(item, "standard", layout="flat")
    with pytest.raises(ValueError, match="mode"):
        build_messages(item, "bogus")


def _for_mode(item: EvalItem, mode: str) -> EvalItem:
    """Mode ``caption`` needs the images' adapter texts on the item."""
    if mode != "caption":
        return item
    from memlens.eval.prompt import CaptionedItem

    texts = {i: f"[image; text read: {i}]" for i in item.image_ids}
    return CaptionedItem(item.question, item.length, item.sessions, item.resolve_image, image_texts=texts)


def test_every_mode_builds(tmp_path):
    item = _item(tmp_path)
    for mode in MODES:
        for layout in ("messages", "legacy"):
            msgs = build_messages(_for_mode(item, mode), mode, layout=layout)
            assert msgs[-1]["role"] == "user"
            assert msgs[-1]["content"][-1]["text"].endswith("Question: What colour was the mug in <image>?\n")


def test_built_benchmark_item(tiny_project):
    """On a real built item: one message per turn plus system and question; images in order."""
    from memlens.core.config import Paths
    from memlens.core.items import BuiltBenchmark

    bench = BuiltBenchmark(Paths(tiny_project))
    item = next(bench.items(bench.lengths()[0]))
    msgs = build_messages(item, "standard")
    n_turns = sum(1 for s in item.sessions for t in s.turns if t.content.strip() or t.images)
    assert len(msgs) == n_turns + 2
    assert [r.image_id for r in iter_images(msgs)] == item.image_ids
    headers = [
        b["text"].split("\n")[0]
        for m in msgs[1:-1]
        for b in m["content"][:1]
        if b["type"] == "text" and b["text"].startswith("=== Session ")
    ]
    assert headers == [f"=== Session {i} (Date: {s.date}) ===" for i, s in enumerate(item.sessions, 1)]


#: sha256 of the canonical rendering of `_item` in every mode and layout, per prompt protocol version.
#: When this test fails the rendered prompts changed: bump `PROMPT_PROTOCOL` (stored answers must not be
#: reused for a prompt they were not given) and record the new hash under the new version.
RENDERED = {"memlens-prompt-1": "252a4b06d34e2c4fe3fcecf110b3d740ecc3e49d755b567bc2869b63aae8c8f0"}
#: the modes whose rendering the hash above pins (a mode added later is pinned by its own hash, so
#: adding one cannot hide a change to these)
PINNED_MODES = ("standard", "cot", "reasoning", "text_only", "no_context", "label_images", "oracle_evidence")
ADDED_MODES = {"caption": "memlens-prompt-1"}


def test_prompt_protocol_version_pins_the_rendering(tmp_path):
    import hashlib
    import json

    from memlens.eval.prompt import PROMPT_PROTOCOL

    item = _item(tmp_path)
    rendered = []
    assert set(MODES) == set(PINNED_MODES) | set(ADDED_MODES), "pin a new mode's rendering"
    for layout in ("messages", "legacy"):
        for mode in PINNED_MODES:
            for label in (False, True):
                msgs = build_messages(item, mode, layout=layout, label_images=label)
                # image references are local paths of this run: keep their names only
                text = json.dumps(msgs, sort_keys=True).replace(str(tmp_path), "<tmp>")
                rendered.append([layout, mode, label, text])
    digest = hashlib.sha256(json.dumps(rendered).encode()).hexdigest()
    assert PROMPT_PROTOCOL in RENDERED, f"record the rendering of {PROMPT_PROTOCOL}: {digest}"
    assert digest == RENDERED[PROMPT_PROTOCOL], (
        f"the rendered prompts changed ({digest}): bump PROMPT_PROTOCOL and record the new hash"
    )


CAPTION_RENDERED = "7531834ec4fbbafe0352c0db68c9f4cf451b404d176c15ed815f4a03e2109eca"


def test_caption_mode_replaces_each_image_by_its_text_and_is_pinned(tmp_path):
    import hashlib
    import json

    item = _for_mode(_item(tmp_path), "caption")
    rendered = []
    for layout in ("messages", "legacy"):
        msgs = build_messages(item, "caption", layout=layout)
        text = json.dumps(msgs, sort_keys=True)
        assert "image_url" not in text and "<image>" not in text.split("Question:")[0]
        assert "Look at my mug [image; text read: a] and my cat [image; text read: b]" in text
        rendered.append(text.replace(str(tmp_path), "<tmp>"))
    digest = hashlib.sha256(json.dumps(rendered).encode()).hexdigest()
    assert digest == CAPTION_RENDERED, f"the caption rendering changed ({digest}): bump PROMPT_PROTOCOL"
    bare = _item(tmp_path)  # a plain item has no texts: a clear error, not a silent image drop
    with pytest.raises(ValueError, match="CaptionedItem"):
        build_messages(bare, "caption")
