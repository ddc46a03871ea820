"""object_scene: a tabletop or shelf with simple drawn objects of named colours and sizes.

Ground truth (spec keys):
  setting            "table" | "shelf"
  objects            [{id, kind, color, size, label, bbox [x0,y0,x1,y1], center [x,y], row, facing}],
                     sorted by row (top/back first) then left to right; bboxes never overlap (>= 12 px gap)
  rows               [{index, name, baseline_y, objects_left_to_right: [ids]}]; row 0 is the top shelf, or
                     the back of the table (on a table, image-plane "above" means "behind")
  counts             {"red mug": 3, ...}  per (colour, kind)        counts_by_kind {"mug": 5}
  counts_by_color    {"red": 4}             counts_by_size_kind {"large mug": 2}     total_objects
  relations          [[a, "left_of", b], [a, "above", b], ...] in the image plane, listed only when the
                     separation is clear (robust to the small rotations of photo effects)
  wall_color, surface_color  RGB of the background
Constraints: counts={"red mug": 3, "blue mug": 2, "apple": 2, "small green ball": 1} (exact counts in
the final scene; extras never change a constrained count), objects=[{"kind","color","size"}] (exact list,
no extras), kinds=[...], colors=[...] (palettes for sampled objects), extra=int (number of unconstrained
objects), n_objects=int (total when no counts/objects; at most 20 objects in all), setting="table"|"shelf", size=[w, h].
Coordinates are those of the clean render (photo effects move them slightly).
"""

from __future__ import annotations

import math
import random
from collections import Counter

from PIL import Image, ImageDraw

from .base import FamilyBase, register
from .palette import COLORS, dist, mix, outline_for, shade

KINDS = ("mug", "cup", "book", "apple", "ball", "bottle", "plant pot", "candle", "vase", "gift box")
KIND_PLURALS = {
    "mug": "mugs",
    "cup": "cups",
    "book": "books",
    "apple": "apples",
    "ball": "balls",
    "bottle": "bottles",
    "plant pot": "plant pots",
    "candle": "candles",
    "vase": "vases",
    "gift box": "gift boxes",
}
_SINGULAR = {v: k for k, v in KIND_PLURALS.items()}
# (width, height) of a large object on a 960-px-wide canvas
KIND_DIMS = {
    "mug": (112, 100),
    "cup": (124, 76),
    "book": (96, 138),
    "apple": (84, 96),
    "ball": (96, 96),
    "bottle": (54, 168),
    "plant pot": (108, 150),
    "candle": (46, 126),
    "vase": (84, 150),
    "gift box": (108, 104),
}
KIND_COLORS = {"apple": ("red", "green", "yellow")}
SIZES = {"large": 1.0, "small": 0.66}
SCENE_SIZES = [(960, 720), (1024, 768), (1000, 750), (880, 660), (1080, 810)]
WALLS = [(214, 222, 228), (226, 214, 196), (205, 218, 200), (232, 222, 210), (200, 204, 220)]
SURFACES = [
    (176, 132, 92),
    (150, 108, 72),
    (206, 178, 140),
    (160, 160, 162),
    (74, 80, 90),
    (226, 224, 218),
    (120, 136, 128),
]
GAP = 12
MAX_OBJECTS = 20


def parse_label(key: str) -> tuple[str | None, str | None, str]:
    """'small red mugs' -> ('small', 'red', 'mug'); 'apple' -> (None, None, 'apple')."""
    words = key.strip().lower().split()
    size = color = None
    if words and words[0] in SIZES:
        size = words.pop(0)
    if words and words[0] in COLORS:
        color = words.pop(0)
    kind = " ".join(words)
    kind = _SINGULAR.get(kind, kind)
    if kind not in KINDS:
        raise ValueError(f"unknown object {key!r}: kinds are {', '.join(KINDS)}; colours {', '.join(COLORS)}")
    return size, color, kind


def _matches(obj, size, color, kind) -> bool:
    return obj["kind"] == kind and (color is None or obj["color"] == color) and (size is None or obj["size"] == size)


class ObjectScene(FamilyBase):
    name = "object_scene"
    track = "experience"
    tracks = ("identification", "experience")
    photo_prob = 0.6
    photo_mode = "scene"
    photo_like = True

    # ------------------------------------------------------------------------------ sampling
    def _sample(self, rng: random.Random, **c) -> dict:
        unknown = set(c) - {"counts", "objects", "kinds", "colors", "extra", "n_objects", "setting", "size"}
        if unknown:
            raise TypeError(f"object_scene: unknown constraints {sorted(unknown)}")
        kinds = list(c.get("kinds") or KINDS)
        colors = list(c.get("colors") or COLORS)
        for k in kinds:
            if k not in KINDS:
                raise ValueError(f"unknown kind {k!r}")
        for col in colors:
            if col not in COLORS:
                raise ValueError(f"unknown colour {col!r}")

        def random_obj(kind=None, color=None, size=None):
            kind = kind or rng.choice(kinds)
            if color is None:
                pal = [x for x in colors if x in KIND_COLORS.get(kind, COLORS)] or colors
                color = rng.choice(pal)
            return {"kind": kind, "color": color, "size": size or rng.choice(["large", "large", "small"])}

        items: list[dict] = []
        if c.get("objects"):
            for o in c["objects"]:
                if isinstance(o, str):
                    s, col, k = parse_label(o)
                    o = {"kind": k, "color": col, "size": s}
                items.append(random_obj(o.get("kind"), o.get("color"), o.get("size")))
        else:
            keys = [(parse_label(k), int(n)) for k, n in (c.get("counts") or {}).items()]
            if any(n < 0 for _, n in keys):
                raise ValueError("counts must be >= 0")

            def fits(ob):  # adding `ob` overshoots no constrained count
                return all(
                    sum(_matches(o, s, col, k) for o in items) < n for (s, col, k), n in keys if _matches(ob, s, col, k)
                )

            # most specific keys first ('small red mug' before 'red mug' before 'mug')
            for (s, col, k), n in sorted(keys, key=lambda t: -sum(x is not None for x in t[0][:2])):
                tries = 0
                while sum(_matches(o, s, col, k) for o in items) < n and tries < 1000:
                    tries += 1
                    ob = random_obj(k, col or rng.choice(colors), s)
                    if fits(ob):
                        items.append(ob)
            for (s, col, k), n in keys:
                got = sum(_matches(o, s, col, k) for o in items)
                if got != n:
                    raise ValueError(f"counts constraint {(s, col, k)} cannot be met (got {got}, want {n})")
            if keys:
                extra = c.get("extra")
                extra = min(rng.randint(0, 4), max(0, 16 - len(items))) if extra is None else int(extra)
            else:
                n_total = c.get("n_objects")
                extra = rng.randint(4, 10) if n_total is None else int(n_total)
            tries = 0
            added = 0
            while added < extra and tries < 500:
                tries += 1
                ob = random_obj()
                if any(_matches(ob, s, col, k) for (s, col, k), _ in keys):
                    continue
                items.append(ob)
                added += 1
            if added < extra:
                raise ValueError("could not add unconstrained objects without changing constrained counts")
        if not items:
            raise ValueError("object_scene needs at least one object")
        if len(items) > MAX_OBJECTS:
            raise ValueError(f"object_scene holds at most {MAX_OBJECTS} objects")
        rng.shuffle(items)

        setting = c.get("setting") or rng.choice(["table", "shelf"])
        if setting not in ("table", "shelf"):
            raise ValueError("setting must be 'table' or 'shelf'")
        W, H = tuple(c["size"]) if c.get("size") else rng.choice(SCENE_SIZES)
        objs, rows = self._layout(rng, items, setting, W, H)

        # background colours that contrast with every object
        used = [COLORS[o["color"]] for o in objs]
        walls = WALLS[:]
        rng.shuffle(walls)
        surfaces = SURFACES[:]
        rng.shuffle(surfaces)
        wall = max(walls, key=lambda w: min(min(dist(w, u) for u in used), 70))
        surface = max(surfaces, key=lambda s: min(min(dist(s, u) for u in used), 70) + min(dist(s, wall), 60))

        counts = Counter(f"{o['color']} {o['kind']}" for o in objs)
        spec = {
            "size": [W, H],
            "seed": rng.getrandbits(32),
            "kind": setting,
            "setting": setting,
            "wall_color": list(wall),
            "surface_color": list(surface),
            "objects": objs,
            "rows": rows,
            "total_objects": len(objs),
            "counts": dict(sorted(counts.items())),
            "counts_by_kind": dict(sorted(Counter(o["kind"] for o in objs).items())),
            "counts_by_color": dict(sorted(Counter(o["color"] for o in objs).items())),
            "counts_by_size_kind": dict(sorted(Counter(f"{o['size']} {o['kind']}" for o in objs).items())),
            "relations": self._relations(objs),
            "texts": [],
        }
        return spec

    def _layout(self, rng, items, setting, W, H):
        n = len(items)
        base_scale = W / 960 * 1.3 * (1.45 if n <= 4 else 1.2 if n <= 7 else 1.0)  # few objects: closer view
        if setting == "table":
            n_rows = 1 if n <= 4 else 2 if n <= 9 else 3
        else:
            n_rows = 2 if n <= 7 else 3
        margin_x = int(W * 0.07)
        top_margin = int(H * 0.08)
        for attempt in range(40):
            scale = base_scale * (0.97**attempt)
            if setting == "table":
                table_top = int(H * 0.36)
                lo, hi = table_top + int(H * 0.16), H - int(H * 0.07)
                baselines = (
                    [int(lo + (hi - lo) * (i / max(1, n_rows - 1))) for i in range(n_rows)]
                    if n_rows > 1
                    else [int(H * 0.80)]
                )
            else:
                spacing = (H - top_margin - int(H * 0.04)) / n_rows
                baselines = [int(top_margin + spacing * (i + 1)) for i in range(n_rows)]
            placed: list[dict] = []
            ok = True
            for it in items:
                bw, bh = KIND_DIMS[it["kind"]]
                f = SIZES[it["size"]] * scale
                w, h = max(8, int(round(bw * f))), max(8, int(round(bh * f)))
                done = False
                for _ in range(120):
                    r = rng.randrange(n_rows)
                    if setting == "shelf" and r == 0 and baselines[0] - h < top_margin // 2:
                        continue
                    if setting == "shelf" and r > 0 and baselines[r] - h < baselines[r - 1] + GAP:
                        continue
                    if margin_x > W - margin_x - w:
                        break
                    x0 = rng.randint(margin_x, W - margin_x - w)
                    y1 = baselines[r]
                    box = (x0, y1 - h, x0 + w, y1)
                    if box[1] < top_margin // 2:
                        continue
                    if any(
                        not (
                            box[2] + GAP <= p["bbox"][0]
                            or p["bbox"][2] + GAP <= box[0]
                            or box[3] + GAP <= p["bbox"][1]
                            or p["bbox"][3] + GAP <= box[1]
                        )
                        for p in placed
                    ):
                        continue
                    placed.append({**it, "bbox": list(box), "row": r})
                    done = True
                    break
                if not done:
                    ok = False
                    break
            if ok:
                break
        else:
            raise ValueError(f"could not lay out {n} objects without overlap on a {W}x{H} {setting}")
        placed.sort(key=lambda o: (o["row"], o["bbox"][0]))
        out = []
        for i, o in enumerate(placed, 1):
            x0, y0, x1, y1 = o["bbox"]
            out.append(
                {
                    "id": f"o{i}",
                    "kind": o["kind"],
                    "color": o["color"],
                    "size": o["size"],
                    "label": f"{o['size']} {o['color']} {o['kind']}",
                    "bbox": [x0, y0, x1, y1],
                    "center": [(x0 + x1) // 2, (y0 + y1) // 2],
                    "row": o["row"],
                    "facing": rng.choice(["left", "right"]),
                }
            )
        names = {
            "table": ["back of the table", "middle of the table", "front of the table"],
            "shelf": ["top shelf", "middle shelf", "bottom shelf"],
        }[setting]
        if n_rows == 2:
            names = [names[0], names[2]]
        elif n_rows == 1:
            names = ["table"]
        rows = [
            {
                "index": r,
                "name": names[r],
                "baseline_y": baselines[r],
                "objects_left_to_right": [o["id"] for o in out if o["row"] == r],
            }
            for r in range(n_rows)
        ]
        return out, rows

    @staticmethod
    def _relations(objs):
        rel = []
        for a in objs:
            for b in objs:
                if a is b:
                    continue
                _ax0, _ay0, ax1, ay1 = a["bbox"]
                bx0, by0, _bx1, _by1 = b["bbox"]
                if ax1 + max(10, 0.08 * abs(a["center"][1] - b["center"][1])) <= bx0:
                    rel.append([a["id"], "left_of", b["id"]])
                if ay1 + max(10, 0.08 * abs(a["center"][0] - b["center"][0])) <= by0:
                    rel.append([a["id"], "above", b["id"]])
        return rel

    # ------------------------------------------------------------------------------ drawing
    def _draw(self, spec: dict) -> Image.Image:
        S = 2
        W, H = spec["size"]
        wall, surf = tuple(spec["wall_color"]), tuple(spec["surface_color"])
        img = Image.new("RGB", (W * S, H * S), wall)
        d = ImageDraw.Draw(img)
        jr = random.Random(spec["seed"])
        # subtle wall gradient
        for i in range(0, H * S, 8):
            t = i / (H * S)
            d.rectangle([0, i, W * S, i + 8], fill=mix(wall, shade(wall, 0.9), t * 0.6))
        if spec["setting"] == "table":
            top = int(H * 0.36) * S
            d.rectangle([0, top, W * S, H * S], fill=surf)
            d.rectangle([0, top, W * S, top + 6 * S], fill=shade(surf, 1.15))
            # wood grain / texture lines
            for _ in range(18):
                y = jr.randint(top + 10 * S, H * S)
                d.line([0, y, W * S, y + jr.randint(-20, 20)], fill=shade(surf, 0.94), width=S)
        else:
            # back panel and shelves
            board = surf
            side = int(W * 0.035) * S
            d.rectangle([0, 0, side, H * S], fill=shade(board, 0.8))
            d.rectangle([W * S - side, 0, W * S, H * S], fill=shade(board, 0.8))
            d.rectangle([side, 0, side + 6 * S, H * S], fill=shade(board, 0.62))
            d.rectangle([W * S - side - 6 * S, 0, W * S - side, H * S], fill=shade(board, 0.62))
            for row in spec["rows"]:
                y = row["baseline_y"] * S
                d.rectangle(
                    [side, y - int(H * 0.018) * S, W * S - side, y + int(H * 0.004) * S], fill=shade(board, 1.12)
                )
                d.rectangle([0, y + int(H * 0.004) * S, W * S, y + int(H * 0.036) * S], fill=board)
                d.line([0, y + int(H * 0.036) * S, W * S, y + int(H * 0.036) * S], fill=shade(board, 0.6), width=2 * S)
        # shadows first, then objects back to front
        objs = sorted(spec["objects"], key=lambda o: (o["bbox"][3], o["bbox"][0]))
        for o in objs:
            x0, _y0, x1, y1 = (v * S for v in o["bbox"])
            w = x1 - x0
            base = surf if spec["setting"] == "table" else wall
            d.ellipse([x0 - w * 0.06, y1 - w * 0.07, x1 + w * 0.10, y1 + w * 0.07], fill=shade(base, 0.8))
        for o in objs:
            box = tuple(v * S for v in o["bbox"])
            DRAW[o["kind"]](d, box, COLORS[o["color"]], o["facing"] == "left", S)
        return img.reduce(S)


# -------------------------------------------------------------------------------------- shapes
def _lw(box, S):
    return max(S * 2, int((box[2] - box[0]) * 0.035))


def _mirror(box, pts, flip):
    if not flip:
        return pts
    x0, x1 = box[0], box[2]
    return [(x0 + x1 - x, y) for x, y in pts]


def _mbox(box, b, flip):
    """Mirror an axis-aligned sub-box horizontally within `box` when flip."""
    if not flip:
        return b
    x0, x1 = box[0], box[2]
    return [x0 + x1 - b[2], b[1], x0 + x1 - b[0], b[3]]


def draw_mug(d, box, c, flip, S):
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    o, lw = outline_for(c), _lw(box, S)
    hb = _mbox(box, [x0 + 0.56 * w, y0 + 0.2 * h, x1 - 0.01 * w, y0 + 0.74 * h], flip)
    d.ellipse(hb, outline=o, width=int(0.085 * w) + 2 * lw)
    d.ellipse([hb[0] + lw, hb[1] + lw, hb[2] - lw, hb[3] - lw], outline=c, width=int(0.085 * w))
    d.ellipse(
        [
            hb[0] + int(0.085 * w) + lw,
            hb[1] + int(0.085 * w) + lw,
            hb[2] - int(0.085 * w) - lw,
            hb[3] - int(0.085 * w) - lw,
        ],
        outline=o,
        width=max(1, lw // 2),
    )
    body = _mbox(box, [x0, y0 + 0.05 * h, x0 + 0.76 * w, y1], flip)
    d.rounded_rectangle(body, radius=int(0.1 * w), fill=c, outline=o, width=lw)
    d.ellipse([body[0] + lw, body[1], body[2] - lw, body[1] + 0.14 * h], fill=shade(c, 0.55), outline=o, width=lw)
    hl = [body[0] + 0.12 * w, body[1] + 0.22 * h, body[0] + 0.2 * w, body[3] - 0.15 * h]
    d.rounded_rectangle(hl, radius=int(0.04 * w), fill=shade(c, 1.35))


def draw_cup(d, box, c, flip, S):
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    o, lw = outline_for(c), _lw(box, S)
    d.ellipse([x0, y1 - 0.22 * h, x1, y1], fill=shade(c, 1.2), outline=o, width=lw)
    hb = _mbox(box, [x0 + 0.62 * w, y0 + 0.16 * h, x0 + 0.9 * w, y0 + 0.62 * h], flip)
    d.ellipse(hb, outline=o, width=int(0.08 * w) + 2 * lw)
    d.ellipse([hb[0] + lw, hb[1] + lw, hb[2] - lw, hb[3] - lw], outline=c, width=int(0.08 * w))
    pts = _mirror(
        box,
        [
            (x0 + 0.1 * w, y0 + 0.08 * h),
            (x0 + 0.76 * w, y0 + 0.08 * h),
            (x0 + 0.62 * w, y1 - 0.12 * h),
            (x0 + 0.24 * w, y1 - 0.12 * h),
        ],
        flip,
    )
    d.polygon(pts, fill=c, outline=o, width=lw)
    rim = _mbox(box, [x0 + 0.1 * w, y0, x0 + 0.76 * w, y0 + 0.16 * h], flip)
    d.ellipse(rim, fill=shade(c, 0.55), outline=o, width=lw)


def draw_book(d, box, c, flip, S):
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    o, lw = outline_for(c), _lw(box, S)
    pages = _mbox(box, [x1 - 0.16 * w, y0 + 0.03 * h, x1, y1 - 0.01 * h], flip)
    d.rectangle(pages, fill=(240, 232, 212), outline=(150, 140, 120), width=max(S, lw // 2))
    for i in range(1, 6):
        xx = pages[0] + (pages[2] - pages[0]) * i / 6
        d.line([xx, pages[1] + lw, xx, pages[3] - lw], fill=(200, 190, 170), width=S)
    cover = _mbox(box, [x0, y0, x1 - 0.12 * w, y1], flip)
    d.rectangle(cover, fill=c, outline=o, width=lw)
    spine = _mbox(box, [x0, y0, x0 + 0.14 * w, y1], flip)
    d.rectangle(spine, fill=shade(c, 0.72), outline=o, width=lw)
    for fy in (0.12, 0.84):
        d.rectangle([cover[0] + lw, y0 + fy * h, cover[2] - lw, y0 + (fy + 0.04) * h], fill=shade(c, 1.35))
    plate = [cover[0] + 0.26 * w, y0 + 0.28 * h, cover[2] - 0.12 * w, y0 + 0.46 * h]
    if flip:
        plate = [cover[0] + 0.12 * w, y0 + 0.28 * h, cover[2] - 0.26 * w, y0 + 0.46 * h]
    d.rectangle(plate, fill=shade(c, 1.45), outline=shade(c, 0.7), width=S)


def draw_apple(d, box, c, flip, S):
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    o, lw = outline_for(c), _lw(box, S)
    top = y0 + 0.16 * h
    d.ellipse([x0, top, x0 + 0.6 * w, y1], fill=c, outline=o, width=lw)
    d.ellipse([x0 + 0.4 * w, top, x1, y1], fill=c, outline=o, width=lw)
    d.ellipse([x0 + 0.1 * w + lw, top + lw + 0.05 * h, x1 - 0.1 * w - lw, y1 - lw], fill=c)
    d.ellipse([x0 + 0.16 * w, top + 0.16 * h, x0 + 0.3 * w, top + 0.36 * h], fill=shade(c, 1.4))
    cx = (x0 + x1) / 2
    d.line([cx, top + 0.1 * h, cx + (-1 if flip else 1) * 0.06 * w, y0], fill=(92, 60, 30), width=max(S, int(0.06 * w)))
    sgn = -1 if flip else 1
    leaf = _leaf((cx + sgn * 0.04 * w, y0 + 0.1 * h), (cx + sgn * 0.34 * w, y0 + 0.02 * h), 0.13 * w)
    d.polygon(leaf, fill=(62, 140, 50), outline=(30, 80, 30), width=S)


def draw_ball(d, box, c, flip, S):
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    o, lw = outline_for(c), _lw(box, S)
    d.ellipse(box, fill=c, outline=o, width=lw)
    seam = shade(c, 0.6) if c != COLORS["black"] else (200, 200, 200)
    sw = max(S, int(0.035 * w))
    d.arc([x0 - 0.55 * w, y0 + 0.05 * h, x0 + 0.42 * w, y1 - 0.05 * h], -58, 58, fill=seam, width=sw)
    d.arc([x1 - 0.42 * w, y0 + 0.05 * h, x1 + 0.55 * w, y1 - 0.05 * h], 122, 238, fill=seam, width=sw)
    d.ellipse([x0 + 0.22 * w, y0 + 0.16 * h, x0 + 0.38 * w, y0 + 0.3 * h], fill=shade(c, 1.45))


def draw_bottle(d, box, c, flip, S):
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    o, lw = outline_for(c), _lw(box, S)
    d.rectangle([x0 + 0.32 * w, y0 + 0.07 * h, x1 - 0.32 * w, y0 + 0.26 * h], fill=c, outline=o, width=lw)
    d.polygon(
        [(x0, y0 + 0.42 * h), (x0 + 0.3 * w, y0 + 0.24 * h), (x1 - 0.3 * w, y0 + 0.24 * h), (x1, y0 + 0.42 * h)],
        fill=c,
        outline=o,
        width=lw,
    )
    d.rounded_rectangle([x0, y0 + 0.4 * h, x1, y1], radius=int(0.12 * w), fill=c, outline=o, width=lw)
    d.rectangle([x0 + lw, y0 + 0.39 * h, x1 - lw, y0 + 0.44 * h], fill=c)
    d.rounded_rectangle(
        [x0 + 0.26 * w, y0, x1 - 0.26 * w, y0 + 0.09 * h],
        radius=int(0.05 * w),
        fill=shade(c, 0.45),
        outline=o,
        width=max(S, lw // 2),
    )
    d.rectangle([x0 + lw, y0 + 0.56 * h, x1 - lw, y0 + 0.78 * h], fill=shade(c, 1.55))
    d.line([x0 + 0.2 * w, y0 + 0.58 * h, x1 - 0.2 * w, y0 + 0.58 * h], fill=shade(c, 0.8), width=S)
    hx = x1 - 0.28 * w if flip else x0 + 0.2 * w
    d.rectangle([hx, y0 + 0.46 * h, hx + 0.08 * w, y0 + 0.54 * h], fill=shade(c, 1.4))
    d.rectangle([hx, y0 + 0.82 * h, hx + 0.08 * w, y1 - 0.06 * h], fill=shade(c, 1.4))


def _leaf(base, tip, width, n=8):
    bx, by = base
    tx, ty = tip
    L = math.hypot(tx - bx, ty - by) or 1
    nx, ny = -(ty - by) / L, (tx - bx) / L
    left, right = [], []
    for i in range(n + 1):
        t = i / n
        half = width * math.sin(math.pi * t) * 0.5
        px, py = bx + (tx - bx) * t, by + (ty - by) * t
        left.append((px + nx * half, py + ny * half))
        right.append((px - nx * half, py - ny * half))
    return left + right[::-1]


def draw_plant_pot(d, box, c, flip, S):
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    o, lw = outline_for(c), _lw(box, S)
    cx, base_y = (x0 + x1) / 2, y0 + 0.56 * h
    green, dark = (46, 128, 58), (24, 76, 34)
    sgn = -1 if flip else 1
    for ang, length in ((-62, 0.46), (-30, 0.52), (0, 0.55), (28, 0.5), (60, 0.44), (-12, 0.4), (14, 0.42)):
        a = math.radians(ang * sgn)
        tip = (cx + math.sin(a) * length * h * 0.8, base_y - math.cos(a) * length * h)
        tip = (min(max(tip[0], x0 + 0.05 * w), x1 - 0.05 * w), max(tip[1], y0))
        d.polygon(_leaf((cx, base_y), tip, 0.22 * w), fill=green, outline=dark, width=S)
        d.line([cx, base_y, (cx + tip[0]) / 2, (base_y + tip[1]) / 2], fill=dark, width=S)
    d.polygon(
        [(x0 + 0.06 * w, y0 + 0.6 * h), (x1 - 0.06 * w, y0 + 0.6 * h), (x1 - 0.2 * w, y1), (x0 + 0.2 * w, y1)],
        fill=c,
        outline=o,
        width=lw,
    )
    d.rectangle([x0, y0 + 0.54 * h, x1, y0 + 0.65 * h], fill=shade(c, 0.85), outline=o, width=lw)


def draw_candle(d, box, c, flip, S):
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    o, lw = outline_for(c), _lw(box, S)
    cx = (x0 + x1) / 2
    fl = [(cx, y0), (cx + 0.2 * w, y0 + 0.17 * h), (cx, y0 + 0.26 * h), (cx - 0.2 * w, y0 + 0.17 * h)]
    d.polygon(fl, fill=(250, 160, 40), outline=(220, 110, 20), width=S)
    d.polygon(
        [(cx, y0 + 0.08 * h), (cx + 0.09 * w, y0 + 0.18 * h), (cx, y0 + 0.24 * h), (cx - 0.09 * w, y0 + 0.18 * h)],
        fill=(255, 236, 150),
    )
    d.line([cx, y0 + 0.22 * h, cx, y0 + 0.31 * h], fill=(40, 40, 40), width=max(S, int(0.05 * w)))
    d.rectangle([x0 + 0.08 * w, y0 + 0.32 * h, x1 - 0.08 * w, y1], fill=c, outline=o, width=lw)
    d.ellipse([x0 + 0.08 * w, y0 + 0.28 * h, x1 - 0.08 * w, y0 + 0.36 * h], fill=shade(c, 1.3), outline=o, width=lw)
    hx = x0 + 0.62 * w if flip else x0 + 0.22 * w
    d.rectangle([hx, y0 + 0.42 * h, hx + 0.12 * w, y1 - 0.08 * h], fill=shade(c, 1.3))


def draw_vase(d, box, c, flip, S):
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    o, lw = outline_for(c), _lw(box, S)
    cx = (x0 + x1) / 2
    prof = [(0.0, 0.34), (0.06, 0.28), (0.2, 0.2), (0.38, 0.38), (0.6, 0.5), (0.82, 0.44), (1.0, 0.3)]
    pts_r, pts_l = [], []
    for i in range(len(prof) - 1):
        (t0, r0), (t1, r1) = prof[i], prof[i + 1]
        for k in range(6):
            u = k / 6
            s = (1 - math.cos(math.pi * u)) / 2
            t, r = t0 + (t1 - t0) * u, r0 + (r1 - r0) * s
            pts_r.append((cx + r * w, y0 + t * h))
            pts_l.append((cx - r * w, y0 + t * h))
    pts_r.append((cx + prof[-1][1] * w, y1))
    pts_l.append((cx - prof[-1][1] * w, y1))
    d.polygon(pts_r + pts_l[::-1], fill=c, outline=o, width=lw)
    d.ellipse([cx - 0.34 * w, y0 - 0.02 * h, cx + 0.34 * w, y0 + 0.06 * h], fill=shade(c, 0.55), outline=o, width=lw)
    d.line(
        [cx - 0.47 * w, y0 + 0.55 * h, cx + 0.47 * w, y0 + 0.55 * h], fill=shade(c, 1.4), width=max(S, int(0.05 * h))
    )
    d.line(
        [cx - 0.45 * w, y0 + 0.66 * h, cx + 0.45 * w, y0 + 0.66 * h], fill=shade(c, 1.4), width=max(S, int(0.02 * h))
    )


def draw_gift_box(d, box, c, flip, S):
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    o, lw = outline_for(c), _lw(box, S)
    rib = shade(c, 1.55) if c != COLORS["white"] else (200, 200, 204)
    cx = (x0 + x1) / 2
    d.ellipse([cx - 0.3 * w, y0, cx, y0 + 0.22 * h], fill=rib, outline=o, width=max(S, lw // 2))
    d.ellipse([cx, y0, cx + 0.3 * w, y0 + 0.22 * h], fill=rib, outline=o, width=max(S, lw // 2))
    d.rectangle([x0 + 0.05 * w, y0 + 0.3 * h, x1 - 0.05 * w, y1], fill=c, outline=o, width=lw)
    d.rectangle([x0, y0 + 0.18 * h, x1, y0 + 0.34 * h], fill=shade(c, 0.82), outline=o, width=lw)
    d.rectangle([cx - 0.07 * w, y0 + 0.18 * h + lw, cx + 0.07 * w, y1 - lw], fill=rib)


DRAW = {
    "mug": draw_mug,
    "cup": draw_cup,
    "book": draw_book,
    "apple": draw_apple,
    "ball": draw_ball,
    "bottle": draw_bottle,
    "plant pot": draw_plant_pot,
    "candle": draw_candle,
    "vase": draw_vase,
    "gift box": draw_gift_box,
}

FAMILY = register(ObjectScene())
