"""Procedural image families: determinism, exact ground truth, honoured constraints, legible-looking pixels."""

from __future__ import annotations

import calendar
import datetime as dt
import io
import json
import math
import os
import random
import subprocess
import sys
from decimal import Decimal

import numpy as np
import pytest
from PIL import Image

from memlens.construction.images.synthetic import (
    FAMILIES,
    Family,
    apply_photo_effects,
    get_family,
    render_bytes,
    sample_photo_effects,
)
from memlens.construction.images.synthetic.formats import CURRENCIES, parse_date
from memlens.construction.images.synthetic.palette import COLORS

NAMES = sorted(FAMILIES)
EXPECTED = {
    "object_scene",
    "receipt",
    "price_tag",
    "named_sign",
    "ticket",
    "clock",
    "calendar_page",
    "chat_screenshot",
    "app_screenshot",
}
KINDS = {
    "named_sign": ["shop_sign", "book_cover", "product_box", "street_sign", "license_plate"],
    "ticket": ["boarding_pass", "event_ticket"],
    "clock": ["analog", "digital"],
    "app_screenshot": ["order_confirmation", "fitness_tracker", "weather", "booking_confirmation", "streaming_bill"],
}


def sample(name, seed=0, **c):
    return get_family(name).sample(random.Random(seed), **c)


def decode(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im.convert("RGB")


def roundtrip(spec):
    return json.loads(json.dumps(spec, sort_keys=True))


# --------------------------------------------------------------------------------------- registry
def test_registry_has_all_families():
    assert set(FAMILIES) >= EXPECTED
    for name, fam in FAMILIES.items():
        assert isinstance(fam, Family)
        assert fam.name == name
        assert fam.track in ("identification", "experience", "document")


def test_get_family_unknown_lists_known_names():
    with pytest.raises(KeyError) as e:
        get_family("polaroid")
    assert "receipt" in str(e.value) and "object_scene" in str(e.value)


# --------------------------------------------------------------------------------------- generic
@pytest.mark.parametrize("name", NAMES)
def test_sample_is_deterministic_and_json(name):
    for seed in (0, 1, 2):
        a, b = sample(name, seed), sample(name, seed)
        assert a == b
        assert roundtrip(a) == a  # JSON-serializable with no tuples or other lossy types
        assert a["family"] == name
        assert isinstance(a["texts"], list) and all(isinstance(t, str) for t in a["texts"])
    assert sample(name, 0) != sample(name, 1)


@pytest.mark.parametrize("name", NAMES)
def test_render_bytes_deterministic_sizes_and_pixels(name):
    for photo in (False, True):
        spec = sample(name, 3, photo=photo)
        data, ext = render_bytes(spec)
        again, ext2 = render_bytes(roundtrip(spec))  # a stored (JSON) spec gives the same bytes
        assert data == again and ext == ext2
        fam = get_family(name)
        assert ext == ("jpg" if (photo or fam.photo_like) else "png")
        im = decode(data)
        w, h = spec["size"]
        assert im.size == (w, h)
        assert 600 <= max(w, h) <= 1200 and min(w, h) >= 300
        arr = np.asarray(im, dtype=np.float32)
        assert arr.std() > 20, "image looks blank"
        assert arr.mean() > 30


@pytest.mark.parametrize("name", NAMES)
def test_photo_flag_does_not_change_content(name):
    clean = sample(name, 5, photo=False)
    photo = sample(name, 5, photo=True)
    assert clean["photo"] is None and isinstance(photo["photo"], dict)
    assert {k: v for k, v in clean.items() if k != "photo"} == {k: v for k, v in photo.items() if k != "photo"}
    a = np.asarray(get_family(name).render(clean), dtype=np.int16)
    b = np.asarray(get_family(name).render(photo), dtype=np.int16)
    assert a.shape == b.shape and np.abs(a - b).mean() > 2


@pytest.mark.parametrize("name,kind", [(n, k) for n, ks in KINDS.items() for k in ks])
def test_every_kind_renders(name, kind):
    key = "style" if name == "clock" else "kind"
    spec = sample(name, 11, **{key: kind}, photo=False)
    assert spec["kind"] == kind
    data, _ = render_bytes(spec)
    assert np.asarray(decode(data), dtype=np.float32).std() > 20


def test_apply_photo_effects_deterministic_rgba_and_size():
    rng = random.Random(4)
    base = Image.new("RGBA", (400, 600), (0, 0, 0, 0))
    base.paste((250, 250, 250, 255), (40, 40, 360, 560))
    for mode in ("document", "scene"):
        eff = sample_photo_effects(rng, mode=mode)
        a, b = apply_photo_effects(base, eff), apply_photo_effects(base, dict(eff))
        assert a.mode == "RGB" and a.size == base.size
        assert a.tobytes() == b.tobytes()
    assert apply_photo_effects(base.convert("RGB"), None).size == base.size


# --------------------------------------------------------------------------------------- object_scene
def _overlap(a, b):
    return not (a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1])


@pytest.mark.parametrize("seed", range(6))
def test_object_scene_counts_and_no_overlap(seed):
    want = {"red mug": 3, "blue mug": 2, "apple": 2}
    spec = sample("object_scene", seed, counts=want)
    objs = spec["objects"]
    assert spec["counts"]["red mug"] == 3 and spec["counts"]["blue mug"] == 2
    assert spec["counts_by_kind"]["apple"] == 2
    assert sum(1 for o in objs if o["kind"] == "mug" and o["color"] == "red") == 3
    assert spec["total_objects"] == len(objs) == sum(spec["counts"].values()) == sum(spec["counts_by_kind"].values())
    for i, a in enumerate(objs):
        w, h = spec["size"]
        x0, y0, x1, y1 = a["bbox"]
        assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
        for b in objs[i + 1 :]:
            assert not _overlap(a["bbox"], b["bbox"]), (a["id"], b["id"])
    by_id = {o["id"]: o for o in objs}
    for s, rel, o in spec["relations"]:
        a, b = by_id[s]["bbox"], by_id[o]["bbox"]
        assert (a[2] < b[0]) if rel == "left_of" else (a[3] < b[1])


def test_object_scene_exact_objects_and_colours_visible():
    objs = [{"kind": "ball", "color": c, "size": "large"} for c in ("red", "blue", "yellow", "green")]
    spec = sample("object_scene", 1, objects=objs, photo=False)
    assert spec["counts"] == {"blue ball": 1, "green ball": 1, "red ball": 1, "yellow ball": 1}
    img = np.asarray(get_family("object_scene").render(spec), dtype=np.float32)
    for o in spec["objects"]:
        x0, y0, x1, y1 = o["bbox"]
        px = img[(y0 + y1) // 2 + 4, (x0 + x1) // 2]
        assert np.linalg.norm(px - np.array(COLORS[o["color"]])) < 40, o


def test_object_scene_rejects_impossible_constraints():
    with pytest.raises(ValueError):
        sample("object_scene", 0, counts={"purple unicorn": 1})
    with pytest.raises(ValueError):
        sample("object_scene", 0, counts={"bottle": 30})


# --------------------------------------------------------------------------------------- receipt
def test_receipt_constraints_from_brief():
    spec = sample(
        "receipt",
        0,
        store="Luna Bakery",
        items=[("Sourdough loaf", 1, 6.50)],
        currency="EUR",
        date="2024/05/31",
        time="08:12",
    )
    assert spec["store"] == "Luna Bakery" and spec["currency"] == "EUR"
    assert spec["items"] == [
        {
            "name": "Sourdough loaf",
            "qty": 1,
            "unit_price": "6.50",
            "line_total": "6.50",
            "unit_price_printed": "6,50",
            "line_total_printed": "6,50",
        }
    ]
    assert spec["date"] == "2024/05/31" and spec["time"] == "08:12"
    assert any("Sourdough loaf" in t and "6,50" in t for t in spec["texts"])
    assert any(spec["total_printed"] in t for t in spec["texts"])


@pytest.mark.parametrize("seed", range(12))
def test_receipt_totals_exact(seed):
    spec = sample("receipt", seed)
    q = Decimal(1).scaleb(-CURRENCIES[spec["currency"]]["decimals"])
    lines = [Decimal(it["unit_price"]) * it["qty"] for it in spec["items"]]
    assert [Decimal(it["line_total"]) for it in spec["items"]] == lines
    sub = Decimal(spec["subtotal"])
    assert sub == sum(lines)
    assert Decimal(spec["tax"]) == (sub * Decimal(spec["tax_rate"])).quantize(q, rounding="ROUND_HALF_UP")
    assert Decimal(spec["total"]) == sub + Decimal(spec["tax"])
    assert Decimal(spec["total"]).as_tuple().exponent == q.as_tuple().exponent
    if spec["payment"]["tendered"] is not None:
        assert Decimal(spec["payment"]["tendered"]) - Decimal(spec["payment"]["change"]) == Decimal(spec["total"])
    parse_date(spec["date"])
    assert spec["date_printed"] in " ".join(spec["texts"])
    assert max(len(ln["text"]) for ln in spec["lines"]) <= spec["cols"]


def test_receipt_jpy_has_no_decimals():
    spec = sample("receipt", 2, currency="JPY")
    assert "." not in spec["total"] and spec["total_printed"].startswith("¥")


# --------------------------------------------------------------------------------------- price_tag
def test_price_tag_sale_and_unit_price():
    spec = sample(
        "price_tag",
        0,
        product="Rolled Oats",
        size_text="500 g",
        unit_qty="0.5",
        unit_label="kg",
        price="2.49",
        was_price="3.29",
        currency="USD",
    )
    assert spec["price_printed"] == "$2.49" and spec["was_printed"] == "$3.29"
    assert spec["discount_pct"] == round((3.29 - 2.49) / 3.29 * 100)
    assert spec["unit_price"] == "4.98" and spec["unit_printed"] == "$4.98 / kg"
    assert "$2.49" in spec["texts"]
    for seed in range(8):
        s = sample("price_tag", seed)
        if s["on_sale"]:
            assert Decimal(s["was_price"]) > Decimal(s["price"])


# --------------------------------------------------------------------------------------- named_sign
@pytest.mark.parametrize(
    "kind,text",
    [
        ("shop_sign", "Luna Bakery"),
        ("book_cover", "The Salt Archive"),
        ("product_box", "Crunchy Granola"),
        ("street_sign", "Harbor Lane"),
        ("license_plate", "GR8FUL"),
    ],
)
def test_named_sign_text_constraint(kind, text):
    spec = sample("named_sign", 3, kind=kind, text=text)
    assert spec["text"] == text and text in spec["texts"]


def test_named_sign_rejects_too_long_text():
    with pytest.raises(ValueError):
        sample("named_sign", 0, kind="license_plate", text="WAYTOOLONGPLATE")


# --------------------------------------------------------------------------------------- ticket
@pytest.mark.parametrize("seed", range(5))
def test_boarding_pass_times(seed):
    spec = sample("ticket", seed, kind="boarding_pass")
    bh, bm = map(int, spec["boarding_time"].split(":"))
    dh, dm = map(int, spec["departure_time"].split(":"))
    assert 20 <= ((dh * 60 + dm) - (bh * 60 + bm)) % 1440 <= 60
    assert spec["from_code"] != spec["to_code"]
    for k in ("flight", "gate", "seat", "from_code", "to_code", "date_printed", "booking_ref"):
        assert spec[k] in spec["texts"]


def test_ticket_constraints():
    spec = sample(
        "ticket",
        1,
        kind="boarding_pass",
        passenger="Emma Stone",
        flight="UA 837",
        from_code="SFO",
        to_code="CPH",
        date="2024/05/31",
        departure_time="14:35",
        gate="B22",
        seat="24C",
    )
    assert spec["passenger_printed"] == "STONE/EMMA" and spec["to_city"] == "Copenhagen"
    assert (spec["date"], spec["departure_time"], spec["gate"], spec["seat"]) == ("2024/05/31", "14:35", "B22", "24C")
    ev = sample("ticket", 1, kind="event_ticket", event="Swan Lake", date="2025/01/04", start_time="19:30", price=85)
    assert ev["event"] == "Swan Lake" and ev["start_time"] == "19:30" and ev["price"] == "85.00"


# --------------------------------------------------------------------------------------- clock
@pytest.mark.parametrize("t", ["10:25", "03:00", "16:48", "23:59", "00:07"])
def test_analog_clock_hand_angles_and_pixels(t):
    spec = sample("clock", 0, time=t, style="analog", second=None, photo=False)
    h, m = map(int, t.split(":"))
    assert spec["time"] == t
    assert spec["hour_angle_deg"] == (h % 12) * 30 + m * 0.5
    assert spec["minute_angle_deg"] == m * 6
    assert spec["time_on_face"] == f"{h % 12 or 12}:{m:02d}"
    img = np.asarray(get_family("clock").render(spec).convert("L"), dtype=np.float32)
    w, hh = spec["size"]
    r = min(w, hh) * 0.42 * 0.9

    def lum(angle, frac):
        a = math.radians(angle)
        return img[int(round(hh / 2 - frac * r * math.cos(a))), int(round(w / 2 + frac * r * math.sin(a)))]

    assert lum(spec["minute_angle_deg"], 0.62) < 90  # the minute hand is there
    assert lum(spec["hour_angle_deg"], 0.38) < 90  # the hour hand is there
    # the minute hand does not reach 0.62 r in the opposite direction
    assert (
        lum(spec["minute_angle_deg"] + 180, 0.62) > 150
        or abs((spec["hour_angle_deg"] - spec["minute_angle_deg"] - 180) % 360) < 20
    )


def test_digital_clock_display():
    s12 = sample("clock", 0, time="20:07", style="digital", hour_format=12)
    assert (s12["display"], s12["am_pm"], s12["time"]) == ("8:07", "PM", "20:07")
    s24 = sample("clock", 0, time="09:41", style="digital", hour_format=24, date="2024/05/31")
    assert (s24["display"], s24["am_pm"], s24["date"], s24["date_printed"]) == (
        "09:41",
        None,
        "2024/05/31",
        "FRI 31 MAY",
    )


# --------------------------------------------------------------------------------------- calendar
@pytest.mark.parametrize("seed", range(6))
def test_calendar_marked_dates_in_month(seed):
    spec = sample("calendar_page", seed)
    y, m = spec["year"], spec["month"]
    assert spec["days_in_month"] == calendar.monthrange(y, m)[1]
    assert spec["marked"]
    for mk in spec["marked"]:
        d = parse_date(mk["date"])
        assert (d.year, d.month, d.day) == (y, m, mk["day"])
        col, _ = spec["cells"][str(mk["day"])]
        wd = d.weekday() if spec["week_start"] == "monday" else (d.weekday() + 1) % 7
        assert col == wd
        if mk["label"]:
            assert mk["label"] in spec["texts"]
    assert spec["title"] in spec["texts"]


def test_calendar_constraints():
    spec = sample("calendar_page", 0, marked=["2024/03/14"], labels=["Dentist 10:30"])
    assert (spec["year"], spec["month"]) == (2024, 3)
    assert spec["marked"][0]["date"] == "2024/03/14" and spec["marked"][0]["label"] == "Dentist 10:30"
    with pytest.raises(ValueError):
        sample("calendar_page", 0, year=2024, month=2, marked=["2024/03/14"])
    with pytest.raises(ValueError):
        sample("calendar_page", 0, year=2023, month=2, marked=[29])


# --------------------------------------------------------------------------------------- chat
def test_chat_messages_constraint_and_order():
    msgs = [
        {"text": "Flight UA 837 departs 14:35", "time": "13:50"},
        {"text": "Gate B22, boarding at 13:55", "from_me": True, "time": "13:52"},
        {"text": "Seat 24C, confirmation QX7P2L", "time": "13:53"},
    ]
    spec = sample("chat_screenshot", 0, messages=msgs, contact="Nora", me="Sam", date="2024/05/31")
    assert [m["text"] for m in spec["messages"]] == [m["text"] for m in msgs]
    assert [m["from_me"] for m in spec["messages"]] == [False, True, False]
    assert spec["messages"][0]["sender"] == "Nora" and spec["messages"][1]["sender"] == "Sam"
    assert spec["date"] == "2024/05/31"
    for m in msgs:
        assert m["text"] in spec["texts"]
    with pytest.raises(ValueError):
        sample("chat_screenshot", 0, messages=[{"text": "word " * 120}] * 6)


@pytest.mark.parametrize("seed", range(6))
def test_chat_scripted_facts(seed):
    spec = sample("chat_screenshot", seed)
    assert 3 <= len(spec["messages"]) <= 6
    times = [m["time"] for m in spec["messages"]]
    assert times == sorted(times) or times[0] > times[-1]  # ascending (or wrapped past midnight)
    joined = " ".join(m["text"] for m in spec["messages"])
    for k, v in spec["facts"].items():
        if k != "meet_time_24h":
            assert v in joined


# --------------------------------------------------------------------------------------- app
def test_app_screens_exact_values():
    b = sample(
        "app_screenshot",
        0,
        kind="booking_confirmation",
        check_in="2024/05/30",
        check_out="2024/06/02",
        hotel="Hotel Aurora",
    )
    assert b["nights"] == 3 and ["Nights", "3"] in b["fields"] and b["hotel"] in b["texts"]
    o = sample(
        "app_screenshot",
        1,
        kind="order_confirmation",
        items=[("Yoga mat", 2, "19.99"), ("USB-C cable", 1, 8.5)],
        shipping="4.99",
        currency="USD",
    )
    assert Decimal(o["subtotal"]) == Decimal("48.48") and Decimal(o["total"]) == Decimal("53.47")
    assert ["Total", "$53.47"] in o["fields"]
    s = sample("app_screenshot", 2, kind="streaming_bill", billing_date="2024/01/31")
    assert s["next_billing_date"] == "2024/02/29"
    f = sample("app_screenshot", 3, kind="fitness_tracker", steps=8432, date="2024/05/31")
    assert ["Steps", "8,432"] in f["fields"] and f["week"][-1] == {"day": "2024/05/31", "steps": 8432}
    w = sample("app_screenshot", 4, kind="weather", city="Oslo", temp=12)
    assert w["unit"] == "C" and w["low"] <= 12 <= w["high"] and "12°C" in w["texts"]


@pytest.mark.parametrize("kind", KINDS["app_screenshot"])
def test_app_fields_are_drawn_strings(kind):
    spec = sample("app_screenshot", 7, kind=kind)
    drawn = set(spec["texts"])
    for _, value in spec["fields"]:
        assert value in drawn or any(value in t for t in drawn), value


def test_dates_are_canonical():
    for name in NAMES:
        spec = sample(name, 9)
        for key in ("date", "check_in", "check_out", "delivery_date", "billing_date"):
            if spec.get(key):
                assert isinstance(parse_date(spec[key]), dt.date)
                assert len(spec[key]) == 10 and spec[key][4] == "/" and spec[key][7] == "/"


# --------------------------------------------------------------------------------------- reproducibility
_HASH_SCRIPT = """
import hashlib, json, random
from memlens.construction.images.synthetic import get_family, render_bytes
h = hashlib.sha256()
for name in ("object_scene", "receipt", "chat_screenshot"):
    s = get_family(name).sample(random.Random(7), photo=True)
    h.update(json.dumps(s, sort_keys=True).encode()); h.update(render_bytes(s)[0])
print(h.hexdigest())
"""


def test_bytes_identical_across_processes_and_hash_seeds():
    outs = set()
    for hs in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hs}
        r = subprocess.run([sys.executable, "-c", _HASH_SCRIPT], env=env, capture_output=True, text=True, check=True)
        outs.add(r.stdout.strip())
    assert len(outs) == 1


def test_missing_fonts_fall_back_to_default(monkeypatch, tmp_path):
    from memlens.construction.images.synthetic import fonts

    monkeypatch.setattr(fonts, "FONT_DIR", tmp_path)
    fonts.font.cache_clear()
    try:
        spec = sample("receipt", 1, currency="USD", photo=False)
        data, ext = render_bytes(spec)
        assert ext == "png" and np.asarray(decode(data), dtype=np.float32).std() > 20
        assert fonts.font_fingerprint()["DejaVuSans.ttf"] == "missing"
    finally:
        fonts.font.cache_clear()


def test_render_environment_lists_versions():
    """The recorded encoder settings are the ones the encoder uses: re-encoding with them gives the
    same bytes (the recorded quality is not just a number that happens to be in the manifest)."""
    import io

    from PIL import Image

    from memlens.construction.images.synthetic import encode_image, render_environment

    env = render_environment()
    assert env["pillow"] == Image.__version__ and "DejaVuSansMono.ttf" in env["fonts"]
    img = Image.radial_gradient("L").convert("RGB").resize((96, 64))
    jpg, ext = encode_image(img, photo_like=True)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=env["jpeg_quality"], subsampling=2, optimize=False, progressive=False)
    assert ext == "jpg" and jpg == buf.getvalue()
    png, ext = encode_image(img, photo_like=False)
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=env["png_compress_level"], optimize=False)
    assert ext == "png" and png == buf.getvalue()
