"""Agents run by their own upstream code (MemOS, M2A): export their inputs, import their answers.

MemOS and M2A are large systems with their own runners; the paper ran them on converted inputs.
This module writes those inputs from the benchmark and brings the runners' answers back as the
predictions of a named system, which the judge and the reports then treat like any other.

Export (role-stripped like every agent input, :mod:`memlens.eval.agents.view`: neutral session
ids ``S001``... in date order, no evidence flags, images by content hash)::

    python -m memlens.eval.agents.exchange export --format longmemeval --out exports/memos
    python -m memlens.eval.agents.exchange export --format locomo --out exports/m2a [--adapter ocr]

``longmemeval`` (MemOS): ``<length>.json``, a list of LongMemEval-style items ``{question_id,
question_type: "memlens", question, question_date, answer: "", haystack_session_ids,
haystack_dates, haystack_sessions: [[{role, content}]]}``; images become the adapter's text
(default ``markers``: ``[image]``); no ``answer_session_ids``/``has_answer``. ``locomo`` (M2A):
``<length>.json``, a list of LoCoMo-style samples ``{sample_id, conversation: {speaker_a: "User",
speaker_b: "Assistant", session_0_date_time, session_0: [{speaker, dia_id: "S0:1", text,
img_url: ["images/<sha256>.<ext>"], blip_caption}], ...}, qa: [{question, question_date,
answer: "", evidence: [], category: 0}]}``, the images copied to ``images/``. Every id is
``<question_id>@<length>``. ``manifest.json`` lists the files, counts and the adapter id.

Import: the runner's output is a JSONL file or a JSON list of records, each with the id
(``question_id`` or ``sample_id``, as exported) and the answer (``hypothesis``, ``answer``,
``prediction`` or ``response``). :class:`ImportedAnswers` (``conf/model/memos.yaml``,
``m2a.yaml``) serves them as a system: an id the benchmark does not have, a duplicate, a record
without an answer, or a question evaluated without an answer in the file stops the stage with a
message naming the file and the ids; nothing is recorded then. The file's SHA-256 is part of the
system identity (a new answer file is a new set of answers).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from memlens.core.errors import DataError, MemLensError
from memlens.core.io import canonical_json, sha256_bytes, write_json
from memlens.core.items import EvalItem
from memlens.core.registry import component
from memlens.core.settings import PositiveFloat, configured, operational
from memlens.eval.agents.view import AgentView, ImageStore, build_view, render_turn
from memlens.eval.systems.base import Model, ModelOutput, ResultCallback, SystemSettings

__all__ = ["FORMATS", "ImportedAnswers", "export_inputs", "load_answers", "main"]

FORMATS = ("longmemeval", "locomo")
ID_KEYS = ("question_id", "sample_id")
ANSWER_KEYS = ("hypothesis", "answer", "prediction", "response")


def exchange_id(question_id: str, length: str) -> str:
    return f"{question_id}@{length}"


# ------------------------------------------------------------------------------------------ export
def _texts(view: AgentView, adapter) -> dict[str, str]:
    images = list({im.sha256: im for s in view.sessions for im in s.images}.values())
    return dict(zip((im.sha256 for im in images), adapter.describe_images(images))) if images else {}


def longmemeval_item(view: AgentView, xid: str, texts: dict[str, str]) -> dict:
    def text_of(im):
        return texts.get(im.sha256, "[image]")

    return {
        "question_id": xid,
        "question_type": "memlens",
        "question": view.question,
        "question_date": view.question_date,
        "answer": "",
        "haystack_session_ids": [s.session_id for s in view.sessions],
        "haystack_dates": [s.date for s in view.sessions],
        "haystack_sessions": [
            [{"role": t.role, "content": render_turn(t, text_of)} for t in s.turns] for s in view.sessions
        ],
    }


def locomo_sample(view: AgentView, xid: str, texts: dict[str, str], out: Path) -> dict:
    conv: dict[str, Any] = {"speaker_a": "User", "speaker_b": "Assistant"}
    for n, s in enumerate(view.sessions):
        conv[f"session_{n}_date_time"] = s.date
        turns = []
        for t in s.turns:
            rels = []
            for im in t.images:
                rel = f"images/{im.path.name}"
                dst = out / rel
                if not dst.is_file():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(im.path, dst)
                rels.append(rel)
            turn = {
                "speaker": "User" if t.role == "user" else "Assistant",
                "dia_id": f"S{n}:{t.turn_id + 1}",
                "text": render_turn(t, lambda _im: "").strip(),
            }
            if rels:
                turn["img_url"] = rels
                turn["blip_caption"] = " ".join(texts.get(im.sha256, "[image]") for im in t.images)
            turns.append(turn)
        conv[f"session_{n}"] = turns
    qa = [{"question": view.question, "question_date": view.question_date, "answer": "", "evidence": [], "category": 0}]
    return {"sample_id": xid, "conversation": conv, "qa": qa}


def export_inputs(
    items_by_length: dict[str, Iterable[EvalItem]], fmt: str, out: Path, adapter, images: ImageStore
) -> dict:
    """Write the inputs of ``fmt`` for every item under ``out``; returns the manifest."""
    if fmt not in FORMATS:
        raise MemLensError(f"unknown export format {fmt!r} ({' | '.join(FORMATS)})")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for length, items in items_by_length.items():
        rows = []
        for item in items:
            view = build_view(item, images)
            texts = _texts(view, adapter) if fmt == "longmemeval" or adapter.id != "markers/v1" else {}
            xid = exchange_id(item.question_id, length)
            rows.append(
                longmemeval_item(view, xid, texts) if fmt == "longmemeval" else locomo_sample(view, xid, texts, out)
            )
        rows.sort(key=lambda r: r.get("question_id") or r.get("sample_id"))
        path = out / f"{length}.json"
        path.write_text("[\n" + ",\n".join(canonical_json(r) for r in rows) + "\n]\n", encoding="utf-8")
        files[length] = {"file": path.name, "items": len(rows)}
    manifest = {
        "format": fmt,
        "adapter": adapter.id,
        "lengths": files,
        "ids": "<question_id>@<length>",
        "answers": "JSONL or JSON list of {question_id|sample_id, hypothesis|answer|prediction|response}",
    }
    write_json(out / "manifest.json", manifest)
    return manifest


# ------------------------------------------------------------------------------------------ import
def load_answers(path: Path) -> dict[str, str]:
    """``id -> answer`` of an upstream answer file (JSONL or a JSON list); errors name the record."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: answer file not found (the upstream runner's output; see docs/agents.md)")
    text = path.read_text(encoding="utf-8")
    records: list[tuple[str, Any]] = []
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise DataError(f"{path}: not valid JSON: {exc}") from None
        records = [(f"{path}[{i}]", r) for i, r in enumerate(data)]
    else:
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append((f"{path}:{n}", json.loads(line)))
            except ValueError as exc:
                raise DataError(f"{path}:{n}: not valid JSON: {exc}") from None
    out: dict[str, str] = {}
    for where, rec in records:
        if not isinstance(rec, dict):
            raise DataError(f"{where}: expected an object with an id and an answer")
        rid = next((rec[k] for k in ID_KEYS if k in rec), None)
        if not isinstance(rid, str) or not rid:
            raise DataError(f"{where}: no id ({' or '.join(ID_KEYS)})")
        ans = next((rec[k] for k in ANSWER_KEYS if rec.get(k) is not None), None)
        if not isinstance(ans, (str, int, float)) or isinstance(ans, bool):
            raise DataError(f"{where}: {rid}: no answer ({', '.join(ANSWER_KEYS)})")
        if rid in out:
            raise DataError(f"{where}: {rid} answered twice")
        out[rid] = str(ans)
    return out


class ImportedSettings(SystemSettings):
    """``model`` with ``_target_: memlens.eval.agents.exchange.ImportedAnswers``: the answers an
    upstream runner (MemOS, M2A) wrote, imported (``answers``: the file, relative to the project)."""

    answers: str = "exports/answers.jsonl"
    upstream: Literal["memos", "m2a"] = "memos"
    backbone: str | None = None
    notes: str | None = operational(None)
    params_total_b: PositiveFloat | None = operational(None)  # the backbone's (the report's system card)
    params_active_b: PositiveFloat | None = operational(None)
    backbone_config: str | None = operational(None)  # the backbone's model config (backbone-matched comparison)


@configured
@component("agent", "imported")
class ImportedAnswers(Model):
    """The answers of an upstream agent runner as a system (see the module docstring)."""

    kind = "agent"
    default_subset = "agent_subset_195"
    Config = ImportedSettings

    def __init__(
        self,
        name: str = "imported",
        *,
        answers: str,
        upstream: str,
        backbone: str | None,
        notes: str | None,
        kind: str | None,
        params_total_b: float | None,
        params_active_b: float | None,
        backbone_config: str | None,
    ):
        super().__init__(name, kind)
        self.options.update(
            dict(
                answers=answers,
                upstream=upstream,
                backbone=backbone,
                params_total_b=params_total_b,
                params_active_b=params_active_b,
                backbone_config=backbone_config,
            )
        )
        self.answers_file = Path(answers)
        self.upstream = upstream
        self._answers: dict[str, str] | None = None
        self._sha: str | None = None

    def attach(self, paths: Any, benchmark: Any) -> None:
        if not self.answers_file.is_absolute():
            self.answers_file = Path(paths.root) / self.answers_file
        answers = load_answers(self.answers_file)
        known_q = set(benchmark.questions)
        known_len = set(benchmark.lengths())
        bad = []
        for rid in answers:
            qid, _, length = rid.rpartition("@")
            if not qid or qid not in known_q or length not in known_len:
                bad.append(rid)
        if bad:
            raise DataError(
                f"{self.answers_file}: {len(bad)} id(s) not in the benchmark (expected <question_id>@<length>, "
                f"lengths {sorted(known_len)}): {', '.join(sorted(bad)[:5])}{' ...' if len(bad) > 5 else ''}"
            )
        self._answers = answers
        self._sha = sha256_bytes(self.answers_file.read_bytes())

    def identity_extra(self) -> dict:
        if self._sha is None:
            raise MemLensError(f"{self.name}: the answer file was not read (Model.attach)")
        return {"answers_sha256": self._sha}

    def generate(self, item: EvalItem, mode: str = "standard") -> ModelOutput:
        out: list[ModelOutput] = []
        self.run([item], mode, lambda _it, o: out.append(o))
        return out[0]

    def run(self, items: Iterable[EvalItem], mode: str, on_result: ResultCallback) -> None:
        if self._answers is None:
            raise MemLensError(f"{self.name}: the answer file was not read (Model.attach)")
        items = list(items)
        missing = [exchange_id(it.question_id, it.length) for it in items]
        missing = [x for x in missing if x not in self._answers]
        if missing:
            raise DataError(
                f"{self.answers_file}: no answer for {len(missing)} of {len(items)} evaluated question(s): "
                f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} (nothing was recorded)"
            )
        for it in items:
            text = self._answers[exchange_id(it.question_id, it.length)]
            on_result(it, ModelOutput(text=text, meta={"upstream": self.upstream}))


if __name__ == "__main__":  # pragma: no cover - the command: memlens.eval.agents.exchange_cli
    from memlens.eval.agents.exchange_cli import main

    raise SystemExit(main())
