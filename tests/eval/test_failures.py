"""Every failed item's reason reaches the console: a table of failure reasons at the end of evaluate,
"after retries" only when a retry happened, exit statuses that say what happened; agents run the
same endpoint preflight as models."""

from __future__ import annotations

import socket
import time

from memlens.cli import main
from memlens.eval.failures import reason_of, render, summarize
from tests.conftest import TINY
from tests.evaluate.eval_support import openai_overrides
from tests.support.fake_openai import FakeOpenAIServer


def test_reasons_group_what_varies_per_item():
    a = "ImageError: image /p/data/images/objects/ab12cd34ef56.png (item q_1): missing file"
    b = "ImageError: image /q/other/99aa88bb77cc.png (item q_2): missing file"
    c = "APIConnectionError: Connection error. (caused by ReadTimeout: DeadlineExceeded: no complete answer within deadline_s=3 s)"
    assert reason_of(a) == reason_of(b) != reason_of(c)
    assert "DeadlineExceeded" in reason_of(c)
    groups = summarize([("q_1@32k", a), ("q_2@32k", b), ("q_3@64k", c)])
    assert [(g.count, g.example) for g in groups] == [(2, "q_1@32k"), (1, "q_3@64k")]
    table = render(groups, "evaluate x: why items failed")
    assert "3 failed item(s), 2 reason(s)" in table and "e.g. q_1@32k: ImageError" in table


def test_evaluate_lists_why_items_failed_and_says_no_retry_happened(tiny_copy, capsys):
    root = tiny_copy
    with FakeOpenAIServer(faults=lambda i, body: "400") as server:
        ov = openai_overrides(server, "model.max_retries=2", "eval.lengths=[32k]")
        assert main(["evaluate", "--root", str(root), *TINY, *ov]) == 1
    err = capsys.readouterr().err
    assert "why items failed: 25 failed item(s), 1 reason(s)" in err
    assert "BadRequestError" in err and "e.g. q_" in err
    assert "at once, none could be retried" in err and "after retries" not in err


def test_retried_failures_say_after_retries(tiny_copy, capsys):
    root = tiny_copy
    with FakeOpenAIServer(faults=lambda i, body: "503") as server:
        ov = openai_overrides(server, "model.max_retries=1", "eval.lengths=[32k]", "eval.max_items=3")
        assert main(["evaluate", "--root", str(root), *TINY, *ov]) == 1
    err = capsys.readouterr().err
    assert "3 of 3 requests failed (after retries" in err and "InternalServerError" in err


def test_a_missing_image_is_named_as_the_reason(tiny_copy, capsys):
    root = tiny_copy
    victim = sorted((root / "data" / "images" / "objects").iterdir())[0]
    victim.unlink()
    with FakeOpenAIServer() as server:
        ov = openai_overrides(server, "eval.lengths=[32k]", "eval.max_failure_rate=1.0")
        assert main(["evaluate", "--root", str(root), *TINY, *ov]) == 0
    err = capsys.readouterr().err
    if "why items failed" in err:  # the image is in some history (the crawl keeps spares too)
        assert "missing file" in err and "e.g. q_" in err


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_an_agent_with_a_down_endpoint_stops_before_any_question(tiny_copy, capsys):
    root = tiny_copy
    t0 = time.monotonic()
    status = main(
        [
            "evaluate",
            "--root",
            str(root),
            *TINY,
            "model=memory-t1",
            f"model.base_url={_closed_port()}",
            "eval.lengths=[32k]",
        ]
    )
    assert status == 2 and time.monotonic() - t0 < 30
    assert "cannot reach the server" in capsys.readouterr().err
    assert not (root / "data" / "predictions" / "memory-t1").exists()
