"""Outside a terminal, progress is printed as occasional plain lines, never as carriage-return frames."""

from __future__ import annotations

import io
import sys

from tqdm import tqdm

from memlens.core.progress import PlainProgressStream, plain_progress


def test_tqdm_frames_become_a_few_plain_lines():
    out = io.StringIO()
    stream = PlainProgressStream(out, interval_s=3600)
    bar = tqdm(total=500, desc="evaluate", file=stream, mininterval=0, miniters=1)
    for _ in range(500):
        bar.update(1)
    stream.write("INFO memlens: an ordinary log line\n")
    bar.close()
    stream.close_bars()
    text = out.getvalue()
    assert "\r" not in text
    lines = [x for x in text.splitlines() if x.startswith("evaluate")]
    assert 1 <= len(lines) <= 3 and "500/500" in lines[-1]
    assert "INFO memlens: an ordinary log line" in text


def test_the_cli_wraps_stderr_only_outside_a_terminal(monkeypatch):
    fake = io.StringIO()
    monkeypatch.setattr(sys, "stderr", fake)
    with plain_progress():
        assert isinstance(sys.stderr, PlainProgressStream)
    assert sys.stderr is fake
