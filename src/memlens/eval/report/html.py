"""The static report page ``reports/index.html``: tables inline, figures and files by relative link.

No JavaScript and no external resources; every ``src``/``href`` is relative to ``reports/``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1250px;
     padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ccc;padding-bottom:.2em}
h3{font-size:1.05em;margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0 1em;font-size:.82em}
th,td{border:1px solid #ddd;padding:.25em .5em}th{background:#f3f3f3;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.txt{text-align:left}
tr.hl td{background:#fff4d6}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.85em;color:#555}
.note{color:#555;font-size:.9em}.files a{margin-right:1em}
nav ul{columns:2;font-size:.92em}
.scroll{max-height:36em;overflow:auto;display:inline-block;max-width:100%}
"""


@dataclass
class Block:
    """A piece of a section: an ``<h3>`` title (optional), an explanatory note, a table's HTML,
    figures (relative paths with captions) and downloadable files (relative paths)."""

    title: str = ""
    note: str = ""
    table_html: str = ""
    figures: list[tuple[str, str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    scroll: bool = False


@dataclass
class Section:
    id: str
    title: str
    intro: str = ""
    blocks: list[Block] = field(default_factory=list)


def _block(b: Block) -> str:
    out = []
    if b.title:
        out.append(f"<h3>{html.escape(b.title)}</h3>")
    if b.note:
        out.append(f'<p class="note">{html.escape(b.note)}</p>')
    for src, caption in b.figures:
        out.append(
            f'<figure><a href="{html.escape(src)}"><img src="{html.escape(src)}" alt="{html.escape(caption)}">'
            f"</a><figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    if b.table_html:
        out.append(f'<div class="scroll">{b.table_html}</div>' if b.scroll else b.table_html)
    if b.files:
        links = " ".join(f'<a href="{html.escape(f)}">{html.escape(f)}</a>' for f in b.files)
        out.append(f'<p class="files">Files: {links}</p>')
    return "\n".join(out)


def render_page(title: str, intro: str, sections: list[Section]) -> str:
    toc = "\n".join(f'<li><a href="#{html.escape(s.id)}">{html.escape(s.title)}</a></li>' for s in sections)
    body = []
    for s in sections:
        body.append(f'<section id="{html.escape(s.id)}"><h2>{html.escape(s.title)}</h2>')
        if s.intro:
            body.append(f"<p>{html.escape(s.intro)}</p>")
        body += [_block(b) for b in s.blocks]
        body.append("</section>")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n<p>{html.escape(intro)}</p>\n<nav><ul>\n{toc}\n</ul></nav>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
