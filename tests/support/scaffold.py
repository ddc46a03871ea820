"""One throwaway component of each kind, written into a copy of the project with exactly the files
``docs/architecture.md`` ("Where to add things") names for it.

:func:`add` writes one kind's files into ``root`` and returns the paths it touched (relative to
``root``); the contract test (``tests/test_components.py``) and the edit-matrix benchmark
(``benchmarks/edit_matrix.py``) use it. Each component is the smallest that works: it validates,
lists, builds offline and (for systems) answers.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path


def name_of(kind: str) -> str:
    """A throwaway component's module and registry name (``<name>``)."""
    return f"zz_{kind}"


#: the question type a throwaway question type adds to the official vocabulary
QTYPE = f"{name_of('question_type')}_type"


def option_of(kind: str) -> str:
    """A throwaway component's conf/ option (``<option>``)."""
    return f"zz-{kind.replace('_', '-')}"


#: kind -> {path pattern (as docs/architecture.md writes it): text}; in a text ``zz_new`` is the
#: component's name and ``zz-new`` its option (:func:`name_of`, :func:`option_of`). A text starting
#: with "edit:" is an edit of an existing file (see :func:`_edit`).
FILES: dict[str, dict[str, str]] = {
    "model": {
        "docs/architecture.md": "edit:module_row",
        "src/memlens/eval/systems/<name>.py": '''
            """A throwaway backend: answers with a fixed text."""

            from __future__ import annotations

            from memlens.core.registry import component
            from memlens.core.settings import configured
            from memlens.eval.systems.base import Model, ModelOutput, SystemSettings


            class ZzNewSettings(SystemSettings):
                """``model`` with ``_target_: memlens.eval.systems.zz_new.ZzNewModel``."""

                answer: str = "Insufficient information"  # what it always answers


            @configured
            @component("model", "zz_new")
            class ZzNewModel(Model):
                """A throwaway backend that answers with a fixed text."""

                kind = "baseline"
                Config = ZzNewSettings

                def __init__(self, name: str, *, answer: str, kind: str | None):
                    super().__init__(name, kind, options={"answer": answer})
                    self.answer = answer

                def generate(self, item, mode: str = "standard") -> ModelOutput:
                    return ModelOutput(text=self.answer)
            ''',
        "conf/model/<option>.yaml": """
            # A throwaway system of the throwaway backend.
            name: zz-new
            _target_: memlens.eval.systems.zz_new.ZzNewModel
            kind: baseline
            answer: Insufficient information   # what it always answers
            """,
    },
    "system": {
        "conf/model/<option>.yaml": """
            # A throwaway LVLM behind an OpenAI-compatible API (an existing backend).
            name: zz-new
            _target_: memlens.eval.systems.openai_model.OpenAICompatibleModel
            kind: lvlm
            hf_id: null
            context_window: 131072
            thinking: false
            max_new_tokens: 2048
            base_url: "https://api.example.invalid/v1"
            model: zz-new
            api_key_env: ZZ_NEW_API_KEY
            layout: ${oc.select:eval.layout,messages}
            """
    },
    "agent": {
        "docs/architecture.md": "edit:module_row",
        "src/memlens/eval/agents/<name>.py": '''
            """A throwaway memory agent: remembers nothing, answers from nothing."""

            from __future__ import annotations

            from memlens.core.registry import component
            from memlens.core.settings import configured
            from memlens.eval.agents.runtime import AgentAnswer, AgentSettings, Memory, MemoryAgent


            class ZzNewAgentSettings(AgentSettings):
                """``model`` with ``_target_: memlens.eval.agents.zz_new.ZzNewAgent``."""

                reply: str = "Insufficient information"  # what it answers


            class _Nothing(Memory):
                async def ingest(self, session) -> None:
                    self.items += 1

                async def answer(self, question: str, question_date: str) -> AgentAnswer:
                    return AgentAnswer(self.agent.reply, [], {}, {})


            @configured
            @component("agent", "zz_new")
            class ZzNewAgent(MemoryAgent):
                """A throwaway memory agent that keeps nothing."""

                Config = ZzNewAgentSettings
                PROMPTS = {"none": "no prompt"}

                def __init__(self, name: str = "zz-new", *, reply: str, **common):
                    super().__init__(name, **common)
                    self.reply = reply

                def new_memory(self, ctx):
                    memory = _Nothing(ctx)
                    memory.agent = self
                    return memory
            ''',
        "conf/model/<option>.yaml": """
            # A throwaway memory agent.
            name: zz-new
            _target_: memlens.eval.agents.zz_new.ZzNewAgent
            kind: agent
            reply: Insufficient information
            """,
    },
    "judge": {
        "docs/architecture.md": "edit:module_row",
        "src/memlens/eval/judge/<name>.py": '''
            """A throwaway judge: every answer is wrong."""

            from __future__ import annotations

            from memlens.core.registry import component
            from memlens.core.settings import Targeted, configured
            from memlens.eval.judge.judges import verdict_for


            class ZzNewJudgeSettings(Targeted):
                """``judge`` with ``_target_: memlens.eval.judge.zz_new.ZzNewJudge``."""

                name: str
                verdict: bool = False  # what every prediction gets


            @configured
            @component("judge", "zz_new")
            class ZzNewJudge:
                """A throwaway judge that gives every prediction the same verdict."""

                Config = ZzNewJudgeSettings

                def __init__(self, name: str, *, verdict: bool):
                    self.name, self.verdict = name, verdict

                def judge_many(self, pairs):
                    return [verdict_for(self.name, q, p, correct=self.verdict, reason="zz") for q, p in pairs]
            ''',
        "conf/judge/<option>.yaml": """
            # A throwaway judge.
            name: zz-new
            _target_: memlens.eval.judge.zz_new.ZzNewJudge
            verdict: false
            """,
    },
    "image_source": {
        "docs/architecture.md": "edit:module_row",
        "src/memlens/construction/images/<name>.py": '''
            """A throwaway image source: the synthetic renderer under another name."""

            from __future__ import annotations

            from memlens.construction.images.sources import SourceSettings, SyntheticSource
            from memlens.core.registry import component
            from memlens.core.settings import configured


            class ZzNewSourceSettings(SourceSettings):
                """``images`` with ``_target_: memlens.construction.images.zz_new.ZzNewSource``."""

                name: str = "zz-new"


            @configured
            @component("image_source", "zz_new")
            class ZzNewSource(SyntheticSource):
                """A throwaway image source (renders like the synthetic one)."""

                name = "zz-new"
                Config = ZzNewSourceSettings

                def __init__(self, *, name: str, **_):
                    super().__init__(name=name, photo_effect_rate=0.0)
            ''',
        "conf/images/<option>.yaml": """
            # A throwaway image source.
            name: zz-new
            _target_: memlens.construction.images.zz_new.ZzNewSource
            haystack_per_session: 2.0
            workers: 0
            """,
    },
    "adapter": {
        "docs/architecture.md": "edit:module_row",
        "src/memlens/eval/memory/<name>.py": '''
            """A throwaway input adapter: every image becomes one word."""

            from __future__ import annotations

            from memlens.core.registry import component


            @component("adapter", "zz_new")
            class ZzNewAdapter:
                """A throwaway adapter that writes ``[zz]`` for every image."""

                id = "zz_new/v1"
                upper_bound = False

                def __init__(self) -> None:
                    self.stats = {"calls": 0, "hits": 0}

                @classmethod
                def create(cls, **options):
                    return cls()

                def describe_images(self, images):
                    return ["[zz]" for _ in images]
            ''',
    },
    "retriever": {
        "docs/architecture.md": "edit:module_row",
        "src/memlens/eval/memory/<name>.py": '''
            """A throwaway retriever: the sessions in history order."""

            from __future__ import annotations

            import numpy as np

            from memlens.core.registry import component
            from memlens.eval.memory.retrieval import RetrieverBase


            @component("retriever", "zz_new")
            class ZzNewRetriever(RetrieverBase):
                """A throwaway retriever that ranks the sessions in history order."""

                id = "zz_new/v1"

                def index(self, docs) -> None:
                    self._set_docs(docs)

                def search(self, query, k, *, before=None):
                    return self._top(-np.arange(len(self.docs), dtype=float), k, before)
            ''',
    },
    "filter_channel": {
        "docs/architecture.md": "edit:module_row",
        "src/memlens/construction/filter/<name>.py": '''
            """A throwaway relevance channel: every image scores 1."""

            from __future__ import annotations

            from memlens.construction.filter.channels import ChannelSettings
            from memlens.core.registry import component


            @component("filter_channel", "zz_new")
            class ZzNewChannel:
                """A throwaway channel that passes every image."""

                name = "zz_new"
                Config = ChannelSettings

                def __init__(self, threshold: float = 0.5, role: str = "secondary"):
                    self.threshold, self.role = threshold, role

                def score(self, path, rec, request) -> float:
                    return 1.0
            ''',
    },
    "generator": {
        "docs/architecture.md": "edit:module_row",
        "src/memlens/construction/generate/<name>.py": '''
            """A throwaway generator: the template generator under another name."""

            from __future__ import annotations

            from memlens.construction.generate.backends import TemplateGenerator
            from memlens.core.registry import component


            @component("generator", "zz_new")
            class ZzNewGenerator(TemplateGenerator):
                """A throwaway generator (writes like the template one)."""
            ''',
    },
    "question_type": {
        "docs/architecture.md": "edit:module_row",
        "src/memlens/construction/abilities/<name>.py": '''
            """A throwaway question type: how many objects an image shows."""

            from __future__ import annotations

            from memlens.construction.abilities.base import Ability, Draft, FactDraft, ImageRequest, Plan
            from memlens.core.registry import component


            @component("question_type", "zz_new_type")
            class ZzNewType(Ability):
                """A throwaway question type: the number of objects in one image."""

                question_type = "zz_new_type"
                variants = {"zz_count": ["plain"]}
                families = {"plain": ["object_scene"]}

                def plan(self, rng, topic, subtype, variant, plan_id, reserved):
                    req = ImageRequest("object_scene", {"count": 3})
                    return Plan(plan_id, self.question_type, subtype, variant, topic.topic_id, topic.title, [req])

                def build(self, rng, plan, truths):
                    n = len(truths[0].get("objects", []))
                    fact = FactDraft("Here is what was on my table. <image>", [0])
                    return Draft("How many objects were on my table?", str(n), [fact])
            ''',
        "src/memlens/core/constants.py": "edit:question_type_vocabulary",
        "src/memlens/core/tasks.py": "edit:question_type_route",
        "conf/data/default.yaml": "edit:question_type_counts",
    },
}


def _edit(root: Path, rel: str, what: str, kind: str) -> None:
    """The edits of existing files a component needs: its module's row in docs/architecture.md;
    for a question type its official strings, its judge route and its count at every scale."""
    path = root / rel
    text = path.read_text()
    if what == "module_row":
        modules = [
            p.replace("src/memlens/", "").replace("<name>", name_of(kind))
            for p in FILES[kind]
            if p.startswith("src/memlens/") and "<name>" in p
        ]
        rows = "".join(f"| `{m}` | a throwaway {kind.replace('_', ' ')} |\n" for m in modules)
        text = text.replace(
            "| module | what it holds |\n|---|---|\n", "| module | what it holds |\n|---|---|\n" + rows, 1
        )
    elif what == "question_type_vocabulary":
        text = text.replace(
            "QUESTION_TYPES: tuple[str, ...] = (IE, MSR, TR, KU, AR)",
            f'QUESTION_TYPES: tuple[str, ...] = (IE, MSR, TR, KU, "{QTYPE}", AR)',
        )
        text = text.replace(
            'TYPE_ABBREV: dict[str, str] = {IE: "IE",', f'TYPE_ABBREV: dict[str, str] = {{"{QTYPE}": "ZZ", IE: "IE",'
        )
        text = text.replace('    KU: ("",),\n', f'    KU: ("",),\n    "{QTYPE}": ("zz_count",),\n')
    elif what == "question_type_route":
        text = text.replace(
            '    ("knowledge_update", ""): KU_UPDATE,\n',
            f'    ("knowledge_update", ""): KU_UPDATE,\n    ("{QTYPE}", "zz_count"): MSR_COUNTING,\n',
        )
    elif what == "question_type_counts":
        text = re.sub(r"(\n(\s+)knowledge_update/: \d+\n)", rf"\1\2{QTYPE}/zz_count: 0\n", text)
    else:  # pragma: no cover - a kind this module does not know
        raise KeyError(what)
    if text == path.read_text():
        raise AssertionError(f"{rel}: the {what} edit changed nothing (the file's layout moved?)")
    path.write_text(text)


def paths(kind: str) -> list[str]:
    """The files one kind's component touches, as docs/architecture.md names them."""
    return sorted(FILES[kind])


def add(root: Path, kind: str, *, source_only: bool = False) -> list[str]:
    """Write one throwaway component of ``kind`` into the project copy ``root`` (``source_only``: its
    new modules under ``src/`` only); the paths touched, relative to ``root``."""
    touched = []
    for pattern, text in FILES[kind].items():
        if source_only and (not pattern.startswith("src/") or text.startswith("edit:")):
            continue
        rel = pattern.replace("<name>", name_of(kind)).replace("<option>", option_of(kind))
        if text.startswith("edit:"):
            _edit(root, rel, text[len("edit:") :], kind)
        else:
            path = root / rel
            if path.exists():
                raise FileExistsError(path)
            text = textwrap.dedent(text).lstrip().replace("zz_new", name_of(kind)).replace("zz-new", option_of(kind))
            path.write_text(text)
        touched.append(rel)
    return touched
