"""A scripted responder for :class:`tests.support.fake_openai.FakeOpenAIServer` that plays the
construction roles of the ``llm`` generator.

It reads the task from the ``[memlens:<task> ...]`` line of the system prompt and the task's inputs
from its JSON block, and answers the way the prompt asks, deterministically (a function of the
request body, including its ``seed``):

* ``qa``: the schema's JSON object, built from the draft (the question with a lead-in, the facts
  with a lead-in keeping their ``<image>`` tags, the answer verbatim); with ``bad_first_qa`` the first
  answer of each question is invalid (not JSON, or a wrong answer) and only the repair request,
  which carries the validation errors, gets a valid one;
* ``user_turn`` / ``assistant_turn``: prose of the requested length built from the topic words,
  containing the required mention sentence verbatim, the assistant's ending with a question;
* ``leak_check``: ``reveals`` is true when a hidden fact occurs in the message text (a real check
  of the text it is given); ``text_only``: never confident.

It is a stand-in for a model, not a model: it proves that the pipeline parses, validates, repairs,
caches and accounts real HTTP answers.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

_INPUT = re.compile(r"INPUT\n```json\n(.*?)\n```", re.S)
_FILL = (
    "I have been reading a little about it in the evenings",
    "A friend of mine keeps asking me about the same thing",
    "There is a lot of advice out there and most of it sounds the same",
    "I would like to get this sorted before the weekend",
    "It is not urgent but it has been on my mind for a while",
    "The last time I looked into it I gave up halfway through",
    "My neighbour had a similar question a few weeks ago",
    "I want a simple plan that I can actually follow",
)
_ADVICE = (
    "A good place to start is to write down what you already know and what you still need to find out",
    "Many people find it helps to compare two or three options side by side before deciding",
    "It is worth checking the small print, because the details often matter more than the headline",
    "Planning a little ahead usually saves both time and money later on",
    "If you keep short notes as you go, it becomes much easier to spot patterns over time",
    "Local guides and community forums are often more practical than general articles",
    "Setting a modest budget first keeps the choices manageable and the process calm",
    "It can also help to ask someone who has done this recently what surprised them most",
    "Breaking the task into small steps makes it far less overwhelming",
    "Timing matters too, since prices and availability change through the year",
)


def _h(*parts: Any) -> int:
    return int(hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12], 16)


def _inputs(text: str) -> dict:
    m = _INPUT.search(text)
    return json.loads(m.group(1)) if m else {}


def _reveals(text: str, fact: str) -> bool:
    """A fact with a digit or several words occurs (any case, whole words); a one-word fact occurs
    with its own capitalisation (a name, not the common word)."""
    flags = re.I if (" " in fact.strip() or any(c.isdigit() for c in fact)) else 0
    return re.search(r"(?<![\w])" + re.escape(fact.strip()) + r"(?![\w])", text, flags) is not None


def _words(s: str) -> int:
    return len(s.replace("<image>", " ").split())


def _prose(bank, seed: int, lo: int, hi: int, head: str, tail: str) -> str:
    parts = [head] if head else []
    i = 0
    while _words(" ".join([*parts, tail])) < lo and i < 200:
        parts.append(bank[(seed + i * 7) % len(bank)] + ".")
        i += 1
    out = " ".join([*parts, tail]).strip()
    words = out.split()
    if len(words) > hi:  # keep the head and the tail, drop middle sentences
        out = " ".join([head, tail]).strip()
    return out


class ScriptedLLM:
    """``responder(body)`` for the fake server (see the module docstring)."""

    def __init__(self, *, bad_first_qa: bool = False):
        self.bad_first_qa = bad_first_qa

    def __call__(self, body: dict | None) -> str:
        msgs = (body or {}).get("messages") or []
        system = msgs[0]["content"] if msgs and msgs[0].get("role") == "system" else ""
        task = system[len("[memlens:") :].split(" ", 1)[0] if system.startswith("[memlens:") else ""
        seed = _h(body.get("seed"), len(msgs), msgs[-1].get("content") if msgs else "")
        if task == "qa":
            return self._qa(msgs)
        if task == "user_turn":
            return self._user(_inputs(system), seed)
        if task == "assistant_turn":
            return self._assistant(_inputs(system), seed, msgs)
        if task == "leak_check":
            x = _inputs(msgs[-1]["content"])
            hit = [h for h in x.get("hidden_facts", []) if _reveals(str(x.get("message", "")), str(h))]
            return json.dumps({"reveals": bool(hit), "reason": f"mentions {hit}" if hit else "nothing hidden"})
        if task == "text_only":
            return json.dumps({"answer": "unknown", "confident": False})
        return "I am a scripted test model."

    def _qa(self, msgs) -> str:
        x = _inputs(msgs[1]["content"])
        repair = len(msgs) > 2
        if self.bad_first_qa and not repair:
            if _h(x.get("draft_question")) % 2:
                return "Sure! Here is the question you asked for."  # not JSON
            bad = self._qa_value(x)
            bad["answer"] = bad["answer"] + " (approximately)"
            return json.dumps(bad)
        return json.dumps(self._qa_value(x))

    @staticmethod
    def _qa_value(x: dict) -> dict:
        def lead(s: str) -> str:
            keep = s.startswith(("I ", "I'")) or s[:1].isdigit()
            return "Oh, and " + (s if keep else s[:1].lower() + s[1:])

        return {
            "background": f"Some notes on {x['subtopic']}: the thing in this photo <image> comes up often, "
            "much like the Eiffel Tower or Central Park come up in travel talk.",
            "entities": [
                {"name": f, "category": "thing", "anaphor": "the thing in my photo"} for f in x["forbidden"][:3]
            ],
            "question": "Quick question. " + x["draft_question"],
            "answer": x["answer"],
            "evidence_facts": [lead(f) for f in x["facts"]],
        }

    @staticmethod
    def _user(x: dict, seed: int) -> str:
        lo, hi = x.get("words", [25, 90])
        lo, hi = max(lo, 12), min(hi, 400)
        head = f"I have a question about {x.get('subtopic', 'this')}."
        if x.get("mention"):
            head = f"{head} {x['mention']}"
        tail = f"What should I keep in mind about {str(x.get('topic', 'it')).lower()}?"
        return _prose(_FILL, seed, lo, hi, head, tail)

    def _assistant(self, x: dict, seed: int, msgs) -> str:
        lo, hi = x.get("words", [150, 250])
        head = "Thanks for sharing that." + (" That photo is a helpful reference." if x.get("photo") else "")
        tail = f"Would you like a few more practical tips on {x.get('subtopic', 'this')}?"
        return _prose(_ADVICE, seed, lo, hi, head, tail)


def task_counts(requests) -> dict[str, int]:
    """Requests per construction task in a server's request log."""
    out: dict[str, int] = {}
    for b in requests:
        s = ((b or {}).get("messages") or [{}])[0].get("content", "")
        t = s[len("[memlens:") :].split(" ", 1)[0] if isinstance(s, str) and s.startswith("[memlens:") else "other"
        out[t] = out.get(t, 0) + 1
    return out


def _serve(conn, kwargs: dict, bad_first_qa: bool) -> None:  # runs in the child process
    from tests.support.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer(responder=ScriptedLLM(bad_first_qa=bad_first_qa), **kwargs).start()
    conn.send(server.port)
    while True:
        cmd = conn.recv()
        if cmd == "stats":
            conn.send({"requests": server.request_count, "tasks": task_counts(server.requests)})
        else:
            server.stop()
            conn.send("stopped")
            return


class ScriptedServer:
    """The fake server with a :class:`ScriptedLLM` responder in a child process (so the client's
    process keeps its own CPU, like a real endpoint); :meth:`stats` gives the chat requests received
    and their count per task."""

    def __init__(self, *, bad_first_qa: bool = False, **kwargs) -> None:
        self.kwargs = kwargs
        self.bad_first_qa = bad_first_qa

    def __enter__(self) -> ScriptedServer:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self.kwargs, self.bad_first_qa), daemon=True)
        self._proc.start()
        self.port = self._conn.recv()
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict:
        self._conn.send("stats")
        return self._conn.recv()

    def __exit__(self, *exc) -> None:
        self._conn.send("stop")
        self._conn.recv()
        self._proc.join(timeout=10)


def llm_overrides(base_url: str) -> list[str]:
    """Hydra overrides pointing every role of ``generator=llm`` at ``base_url`` (no key)."""
    ov = ["generator=llm", "generator.llm.progress=false"]
    for r in ("question_writer", "user", "assistant", "leakage_checker"):
        ov += [f"generator.llm.{r}.base_url={base_url}", f"generator.llm.{r}.api_key_env=null"]
    return ov
