"""chat_screenshot: a phone messaging app screenshot with 3-6 bubbles.

Ground truth (spec keys):
  style "green" | "blue" | "purple" (app look), title (contact or group name), is_group, participants,
  me (the phone owner's name), status_time (clock in the status bar), date_label (separator pill),
  date "YYYY/MM/DD" | null (when the label is a date), topic (script name),
  facts {slot: value} (e.g. place, meet_time, activity, day, flight, gate, code, price), and
  messages [{sender, from_me, time "HH:MM", text}] in display order; texts: every drawn string
Constraints: messages ([{sender?, from_me, text, time?}]), title, is_group, style, date ("YYYY/MM/DD"), topic,
any fact slot (place=, meet_time=, activity=, day=, ...), me, contact.
"""

from __future__ import annotations

import random

from PIL import Image, ImageDraw

from . import vocab
from .base import FamilyBase, register
from .common import digits
from .fonts import font, wrap_text
from .formats import (
    add_minutes,
    canon_date,
    canon_time,
    format_date,
    format_time,
    parse_date,
    parse_time,
    parse_time_any,
    random_date,
)
from .palette import ink_for, mix
from .phone import PHONE_SIZE, home_indicator, status_bar

STYLES = {
    "green": {"header": (18, 94, 84), "bg": (236, 229, 221), "out": (217, 250, 200), "in": (255, 255, 255)},
    "blue": {"header": (246, 246, 248), "bg": (255, 255, 255), "out": (20, 120, 250), "in": (233, 233, 236)},
    "purple": {"header": (94, 60, 170), "bg": (244, 242, 250), "out": (120, 86, 220), "in": (255, 255, 255)},
}
NAME_COLORS = [(200, 60, 60), (30, 120, 200), (40, 140, 80), (170, 80, 170), (210, 120, 20)]

# (topic, [(speaker, template)]) speaker 0 = contact (or rotating group members), 1 = me
SCRIPTS = {
    "meetup": [
        (0, "Are we still on for {activity} {day}?"),
        (1, "Yes! {place} at {meet_time}?"),
        (0, "Perfect, see you there"),
        (1, "I'll book a table for {n_people}"),
        (0, "Great, thanks! I'll be wearing my {color} jacket"),
        (1, "Haha ok, see you soon"),
    ],
    "pickup": [
        (0, "What time does your flight land?"),
        (1, "Flight {flight} lands at {meet_time}"),
        (0, "I'll pick you up at Terminal {terminal}"),
        (1, "Thank you!! I'll text when I get my bag"),
        (0, "Parking is at level {level}, look for the {color} car"),
    ],
    "door_code": [
        (1, "Hi! I'm outside the building"),
        (0, "The door code is {code}"),
        (0, "Apartment {apt}, {floor_n} floor"),
        (1, "Got it, coming up"),
        (0, "Door's open, bring the {item} if you can"),
    ],
    "price_check": [
        (0, "How much was the {item} at {place}?"),
        (1, "It was {price}"),
        (0, "Oh that's a good deal"),
        (1, "They have a sale until {day}"),
        (0, "Nice, I'll go there after work at {meet_time}"),
    ],
    "reschedule": [
        (0, "Hey, can we move {activity} to {day}?"),
        (1, "Sure, what time works for you?"),
        (0, "How about {meet_time} at {place}?"),
        (1, "Works for me. See you {day}!"),
    ],
}
ITEMS = ["coffee grinder", "yoga mat", "blender", "board game", "desk lamp", "rice cooker", "speaker", "plant stand"]
FLOORS = ["2nd", "3rd", "4th", "5th", "6th"]
HOURS = {
    "lunch": (11, 13),
    "dinner": (18, 20),
    "coffee": (8, 16),
    "brunch": (10, 12),
    "drinks": (17, 21),
    "the movie": (17, 21),
    "the concert": (18, 20),
    "board games": (15, 20),
    "the farmers market": (8, 12),
}


class ChatScreenshot(FamilyBase):
    name = "chat_screenshot"
    track = "document"
    tracks = ("document", "experience")
    photo_prob = 0.0
    photo_mode = "document"
    takes_user = True

    def _sample(self, rng: random.Random, **c) -> dict:
        style = c.pop("style", None) or rng.choice(sorted(STYLES))
        if style not in STYLES:
            raise ValueError(f"unknown chat style {style!r}")
        user = c.pop("user", None)  # the history's user ("First Last"): the phone's owner unless given
        me = c.pop("me", None) or (str(user).split(" ")[0] if user else rng.choice(vocab.FIRST_NAMES))
        d = parse_date(c.pop("date")) if c.get("date") else random_date(rng)
        title = c.pop("title", None)
        contact = c.pop("contact", None)
        topic = c.pop("topic", None) or rng.choice(sorted(SCRIPTS))
        given = c.pop("messages", None)
        if topic not in SCRIPTS:
            raise ValueError(f"unknown chat topic {topic!r}; topics: {', '.join(sorted(SCRIPTS))}")
        h, m = (rng.randint(8, 20), rng.randrange(60))
        activity = c.get("activity") or rng.choice(vocab.ACTIVITIES)
        lo, hi = HOURS.get(activity, (9, 21))
        meet = (rng.randint(lo, hi), rng.choice([0, 15, 30, 45]))
        facts = {
            "activity": activity,
            "place": rng.choice(vocab.PLACES),
            "day": rng.choice(["tomorrow", "on Friday", "on Saturday", "tonight", "next Tuesday", "on Sunday"]),
            "meet_time": format_time(*meet, twelve=rng.random() < 0.4, pad=False),
            "n_people": str(rng.randint(2, 6)),
            "color": rng.choice(["red", "blue", "green", "yellow", "black"]),
            "flight": f"{rng.choice(vocab.AIRLINES)[1]} {rng.randint(12, 2999)}",
            "terminal": str(rng.randint(1, 5)),
            "level": str(rng.randint(1, 4)),
            "code": digits(rng, 4) + rng.choice(["", "#", "*"]),
            "apt": f"{rng.randint(1, 6)}{rng.choice('ABCD')}",
            "floor_n": rng.choice(FLOORS),
            "item": rng.choice(ITEMS),
            "price": rng.choice(["$", "€", "£"]) + f"{rng.randint(12, 240)}.{rng.choice([0, 49, 99, 50]):02d}",
        }
        is_group = c.pop("is_group", None)
        for k in list(c):
            if k in facts:
                facts[k] = str(c.pop(k))
        if c:
            raise TypeError(f"chat_screenshot: unknown constraints {sorted(c)}")
        if is_group is None:
            # a chat with a given contact is a one-to-one chat with them
            is_group = contact is None and (title is not None or (given is None and rng.random() < 0.3))
        members = rng.sample([n for n in vocab.FIRST_NAMES if n != me], 3)
        contact = contact or members[0]
        if is_group:
            title = title or rng.choice(
                ["Weekend plans", "Flatmates", "Climbing crew", "Family", "Book club", "Road trip!", "Team lunch"]
            )
        else:
            title = title or contact
        messages = []
        t = h * 60 + m
        if given is not None:
            for _i, msg in enumerate(given):
                from_me = bool(msg.get("from_me", False))
                sender = msg.get("sender") or (me if from_me else contact)
                if msg.get("time"):
                    tt = parse_time(msg["time"])
                else:
                    tt = divmod(t % 1440, 60)
                    t += rng.randint(0, 6)
                messages.append(
                    {"sender": sender, "from_me": from_me, "time": canon_time(*tt), "text": str(msg["text"])}
                )
            if not 1 <= len(messages) <= 8:
                raise ValueError("chat_screenshot shows 1-8 messages")
            used = {}
        else:
            script = SCRIPTS[topic]
            n = rng.randint(min(4, len(script)), len(script))
            used = {}
            for who, tmpl in script[:n]:
                text = tmpl.format(**facts)
                for k in facts:
                    if "{" + k + "}" in tmpl:
                        used[k] = facts[k]
                from_me = who == 1
                sender = me if from_me else (rng.choice(members) if is_group else contact)
                messages.append(
                    {"sender": sender, "from_me": from_me, "time": canon_time(*divmod(t % 1440, 60)), "text": text}
                )
                t += rng.randint(0, 7)
        if "meet_time" in used:
            used["meet_time_24h"] = canon_time(*parse_time_any(used["meet_time"]))
        last_t = parse_time(messages[-1]["time"])
        status = format_time(*add_minutes(*last_t, rng.randint(0, 20)), pad=False)
        label_kind = rng.choice(["today", "date", "date"])
        date_label = (
            "Today"
            if label_kind == "today"
            else format_date(d, rng.choice(["Wkd, Mon D", "Weekday, Month D", "D Month YYYY"]))
        )
        participants = sorted({msg["sender"] for msg in messages} | {me} | (set(members) if is_group else set()))
        texts = [status, title] + [date_label]
        for msg in messages:
            if is_group and not msg["from_me"]:
                texts.append(msg["sender"])
            texts += [msg["text"], msg["time"]]
        texts.append("Message")
        spec = {
            "size": list(PHONE_SIZE),
            "seed": rng.getrandbits(32),
            "kind": "chat",
            "style": style,
            "title": title,
            "is_group": is_group,
            "participants": participants,
            "me": me,
            "status_time": status,
            "date_label": date_label,
            "date": canon_date(d),
            "date_shown": label_kind != "today",
            "topic": topic if given is None else "custom",
            "facts": used,
            "messages": messages,
            "texts": texts,
            # what the conversation may say about this chat: the contact a 1:1 chat is with
            "named_in_text": [] if is_group else [title],
        }
        _, total = self._layout(spec, PHONE_SIZE[0], 13)
        if total > PHONE_SIZE[1] - 74 - 12 - (38 + 66 + 16):
            raise ValueError("chat messages do not fit on one screen; use fewer or shorter messages")
        return spec

    def _draw(self, spec: dict) -> Image.Image:
        W, H = spec["size"]
        st = STYLES[spec["style"]]
        img = Image.new("RGB", (W, H), st["bg"])
        d = ImageDraw.Draw(img)
        hdr = st["header"]
        status_bar(d, W, spec["status_time"], hdr)
        hh = 38 + 66
        d.rectangle([0, 38, W, hh], fill=hdr)
        hink = ink_for(hdr)
        accent = st["out"] if spec["style"] == "blue" else hink
        d.text((18, 38 + 33), "\u2039", font=font("sans", 44), fill=accent, anchor="lm")
        av = (50, 38 + 11, 94, 38 + 55)
        jr = random.Random(spec["seed"])
        d.ellipse(av, fill=jr.choice(NAME_COLORS))
        initials = "".join(p[0] for p in spec["title"].split()[:2]).upper()
        d.text(
            ((av[0] + av[2]) / 2, (av[1] + av[3]) / 2),
            initials,
            font=font("sans-bold", 17),
            fill=(255, 255, 255),
            anchor="mm",
        )
        d.text((108, 38 + 24), spec["title"], font=font("sans-bold", 21), fill=hink, anchor="lm")
        sub = f"{len(spec['participants'])} members" if spec["is_group"] else "online"
        d.text((108, 38 + 48), sub, font=font("sans", 14), fill=mix(hdr, hink, 0.7), anchor="lm")
        if spec["style"] == "blue":
            d.line([0, hh, W, hh], fill=(210, 210, 214), width=1)
        # input bar
        ib = H - 74
        d.rectangle([0, ib, W, H], fill=mix(st["bg"], (255, 255, 255), 0.5))
        d.rounded_rectangle([16, ib + 12, W - 70, ib + 50], radius=19, fill=(255, 255, 255), outline=(210, 210, 214))
        d.text((34, ib + 31), "Message", font=font("sans", 17), fill=(150, 150, 156), anchor="lm")
        d.ellipse([W - 58, ib + 10, W - 16, ib + 52], fill=st["out"] if spec["style"] != "green" else (18, 140, 110))
        d.polygon([(W - 45, ib + 21), (W - 25, ib + 31), (W - 45, ib + 41), (W - 41, ib + 31)], fill=(255, 255, 255))
        home_indicator(d, W, H)
        # messages, laid out bottom-aligned like a real chat; shrink font until everything fits
        top, bottom = hh + 16, ib - 12
        for size in (21, 20, 19, 18, 17, 16, 15, 14, 13):
            blocks, total = self._layout(spec, W, size)
            if total <= bottom - top:
                break
        y = max(top, bottom - total)
        # date pill
        fpill = font("sans-bold", 14)
        pw = fpill.getlength(spec["date_label"]) + 28
        d.rounded_rectangle(
            [W / 2 - pw / 2, y, W / 2 + pw / 2, y + 28], radius=14, fill=mix(st["bg"], (120, 120, 130), 0.18)
        )
        d.text((W / 2, y + 14), spec["date_label"], font=fpill, fill=(80, 80, 88), anchor="mm")
        y += 40
        names = {}
        for msg, blk in zip(spec["messages"], blocks):
            f, lines, lh, bw, bh, show_name = blk
            out = msg["from_me"]
            fill = st["out"] if out else st["in"]
            ink = (255, 255, 255) if out and spec["style"] == "blue" else ink_for(fill)
            x0 = W - 14 - bw if out else 14
            d.rounded_rectangle(
                [x0, y, x0 + bw, y + bh],
                radius=16,
                fill=fill,
                outline=None if out or spec["style"] != "purple" else (226, 224, 236),
            )
            ty = y + 9
            if show_name:
                col = names.setdefault(msg["sender"], NAME_COLORS[len(names) % len(NAME_COLORS)])
                d.text((x0 + 14, ty), msg["sender"], font=font("sans-bold", size - 4), fill=col)
                ty += size
            for ln in lines:
                d.text((x0 + 14, ty), ln, font=f, fill=ink)
                ty += lh
            ft = font("sans", max(11, size - 6))
            tcol = mix(fill, ink, 0.55)
            d.text(
                (x0 + bw - 12, y + bh - 7),
                msg["time"] + ("  \u2713\u2713" if out and spec["style"] == "green" else ""),
                font=ft,
                fill=tcol if not (out and spec["style"] == "green") else (80, 140, 200),
                anchor="rd",
            )
            y += bh + 10
        return img

    @staticmethod
    def _layout(spec, W, size):
        f = font("sans", size)
        ft = font("sans", max(11, size - 6))
        blocks = []
        total = 40
        maxw = int(W * 0.72)
        for msg in spec["messages"]:
            lines = wrap_text(f, msg["text"], maxw - 28)
            asc, desc = f.getmetrics()
            lh = int((asc + desc) * 1.12)
            show_name = spec["is_group"] and not msg["from_me"]
            tw = ft.getlength(msg["time"] + "  \u2713\u2713") + 30
            widest = max(f.getlength(ln) for ln in lines)
            last = f.getlength(lines[-1])
            # time sits on its own row unless it fits next to the last line
            extra_row = last + tw > maxw - 14
            bw = min(
                maxw,
                max(
                    widest + 28,
                    (last + tw + 14) if not extra_row else widest + 28,
                    tw + 20,
                    (font("sans-bold", size - 4).getlength(msg["sender"]) + 28) if show_name else 0,
                ),
            )
            bh = 18 + lh * len(lines) + (size if show_name else 0) + (ft.size + 4 if extra_row else 0)
            blocks.append((f, lines, lh, bw, bh, show_name))
            total += bh + 10
        return blocks, total


FAMILY = register(ChatScreenshot())
