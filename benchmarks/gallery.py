"""Render a gallery of every synthetic image family (plain and with photo effects) for eyeballing.

    .venv/bin/python benchmarks/gallery.py [--out benchmarks/out/gallery] [--seed 0]

Writes <family>[-<kind>]-plain.<ext> / -photo.<ext> with the spec beside each image (.json), and one PNG
contact sheet per family (sheet-<family>.png) that any image viewer can open.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from PIL import Image

from memlens.construction.images.synthetic import FAMILIES, render_bytes

KINDS = {
    "named_sign": ("kind", ["shop_sign", "book_cover", "product_box", "street_sign", "license_plate"]),
    "ticket": ("kind", ["boarding_pass", "event_ticket"]),
    "clock": ("style", ["analog", "digital"]),
    "app_screenshot": (
        "kind",
        ["order_confirmation", "fitness_tracker", "weather", "booking_confirmation", "streaming_bill"],
    ),
    "object_scene": ("setting", ["table", "shelf"]),
}


def contact_sheet(paths: list[Path], out: Path, height: int = 420) -> None:
    tiles = []
    for p in paths:
        im = Image.open(p).convert("RGB")
        tiles.append(im.resize((max(1, round(im.width * height / im.height)), height), Image.Resampling.LANCZOS))
    per_row = 4
    rows = [tiles[i : i + per_row] for i in range(0, len(tiles), per_row)]
    width = max(sum(t.width for t in r) + 10 * (len(r) - 1) for r in rows)
    sheet = Image.new("RGB", (width, len(rows) * (height + 10) - 10), (255, 255, 255))
    for ri, r in enumerate(rows):
        x = 0
        for t in r:
            sheet.paste(t, (x, ri * (height + 10)))
            x += t.width + 10
    sheet.save(out, format="PNG")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(__file__).parent / "out" / "gallery"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for name, fam in sorted(FAMILIES.items()):
        key, kinds = KINDS.get(name, (None, [None]))
        written = []
        for _ki, kind in enumerate(kinds):
            for photo in (False, True):
                rng = random.Random(f"gallery:{args.seed}:{name}:{kind}")
                c = {key: kind} if key else {}
                spec = fam.sample(rng, photo=photo, **c)
                data, ext = render_bytes(spec)
                stem = f"{name}{'-' + kind if kind else ''}-{'photo' if photo else 'plain'}"
                (out / f"{stem}.{ext}").write_bytes(data)
                (out / f"{stem}.json").write_text(json.dumps(spec, indent=1, sort_keys=True, ensure_ascii=False))
                written.append(out / f"{stem}.{ext}")
                n += 1
        contact_sheet(written, out / f"sheet-{name}.png")
        print(f"{name:16s} {len(written)} images -> sheet-{name}.png")
    print(f"{n} images in {out}")


if __name__ == "__main__":
    main()
