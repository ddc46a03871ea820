"""crawl stage: plan every question's evidence images and fetch them, plus the haystack image pool.

"Fetch" means: ask the configured image source (``conf/images/``). The offline default
(``images=synthetic``) does not crawl anything: it *renders* each requested image with Pillow and
records exactly what it shows; ``images=directory`` serves a folder of the user's own images;
``images=icrawler`` crawls the web for the requests it serves (``fetch_all``: all at once, cached by
URL outside DVC) and the others are rendered; its rows carry a ``candidate`` number.

Plans come from the question-type modules (:mod:`memlens.construction.abilities`), so each image is requested
for a purpose (its constraints say what it must show). Images are stored once by SHA-256 in
``data/images/objects/``; ``data/images/index.jsonl`` holds one record per image (hash, family,
size, role, source, exact ground truth, the plan and request it serves) and ``plans.jsonl`` the
plans. Rendering runs in a process pool; every random choice derives from (seed, item key).
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from PIL import Image
from tqdm import tqdm

from memlens.construction.abilities import ability_for, balance
from memlens.construction.abilities.base import ImageRequest, Plan
from memlens.construction.crawl.plans import SHAPE_KEYS, choose_topic
from memlens.construction.images.persona import persona_for, with_user
from memlens.construction.ontology.stage import load_topics
from memlens.core.config import Paths, section
from memlens.core.errors import ConfigError
from memlens.core.io import write_jsonl
from memlens.core.registry import build_target
from memlens.core.schema import ImageRecord, Topic
from memlens.core.settings import Settings, as_settings
from memlens.core.store import ObjectStore, derive_rng, hash_tree, short_id, write_manifest

log = logging.getLogger(__name__)


def scale_counts(cfg) -> dict[tuple[str, str], int]:
    sc = cfg.data.scales[cfg.data.scale]
    out = {}
    for key, n in sc.counts.items():
        qtype, _, sub = str(key).partition("/")
        out[(qtype, sub)] = int(n)
    return out


def make_plans(cfg, topics: list[Topic]) -> list[Plan]:
    seed = int(cfg.data.seed)
    plans = []
    reserved: set[str] = set()
    for (qtype, sub), n in sorted(scale_counts(cfg).items()):
        ability = ability_for(qtype)
        variants = ability.variants.get(sub)
        if not variants:
            raise ConfigError(
                f"data.scales.{cfg.data.scale}.counts: {qtype}/{sub} is not a known subtype "
                f"(known: {', '.join(ability.variants)})"
            )
        spares = int(cfg.data.spare_fraction * n + 0.999) if n else 0
        classes = [ability.answer_classes(sub, v) for v in variants]
        if n and any(classes):
            # closed answers are balanced per class (abilities.balance): enough spares that every
            # class of every variant has a replacement
            spares = max(spares, len(variants) * max(len(c or ()) for c in classes))
        want = balance.wants(seed, qtype, sub, [classes[i % len(variants)] for i in range(n + spares)], n)
        for i in range(n + spares):  # spares replace plans whose images are rejected or whose build fails
            variant = variants[i % len(variants)]
            rng = derive_rng(seed, "plan", qtype, sub, i)
            topic = choose_topic(rng, topics, qtype, ability.families.get(variant, []))
            pid = short_id("p", seed, qtype, sub, i, n=10)
            extra = {} if want[i] is None else {"want": want[i]}
            plan = ability.plan(rng, topic, sub, variant, pid, reserved, **extra)
            plan.latent["_index"] = i
            plan.latent["_target"] = n
            if want[i] is not None:
                plan.latent["_want"] = want[i]
            plans.append(plan)
    return plans


def haystack_requests(
    cfg, topics: list[Topic], families: list[str], plans: list[Plan]
) -> list[tuple[str, ImageRequest]]:
    """The haystack image pool, drawn to match the evidence images: each request copies the family
    and the shape constraints (``SHAPE_KEYS``: renderer kind, style, photo effect, item count...) of
    an evidence request drawn at random, so family, size, format and renderer mix are one
    distribution for evidence and haystack images; never a value a question asks about. Its topic
    is the evidence image's topic or, half of the time, another whose families include the image's
    family (the haystack session that mentions it is written on that topic)."""
    sc = cfg.data.scales[cfg.data.scale]
    n_sessions = int(sc.haystack_sessions) + len(plans)
    n = int(round(n_sessions * float(cfg.images.haystack_per_session)))
    seed = int(cfg.data.seed)
    ev = [(p.topic_id, r) for p in plans for r in p.images if r.family in families]
    by_family: dict[str, list[Topic]] = {}
    for t in topics:
        for f in t.families:
            by_family.setdefault(f, []).append(t)
    out = []
    for i in range(n):
        rng = derive_rng(seed, "haystack-image", i)
        if ev:
            tid, src = ev[rng.randrange(len(ev))]
            fam = src.family
            cons = {k: src.constraints[k] for k in SHAPE_KEYS if k in src.constraints}
            if isinstance(cons.get("photo"), dict):  # a photo-effect spec names a scene: keep only "a photo"
                cons["photo"] = True
            fit = by_family.get(fam)
            if fit and rng.random() < 0.5:  # else the evidence image's own topic (a related haystack)
                tid = fit[rng.randrange(len(fit))].topic_id
        else:
            t = topics[rng.randrange(len(topics))]
            fams = [f for f in t.families if f in families] or families
            fam, cons, tid = fams[rng.randrange(len(fams))], {}, t.topic_id
        out.append((tid, ImageRequest(fam, cons, role="haystack")))
    return out


def image_source(options: dict):
    """The image source the composed ``images`` section names (a component of kind ``image_source``)."""
    return build_target("image_source", options, section="images")


def _fetch_chunk(source_cfg: dict, chunk: list) -> list[tuple[bytes, str, dict]]:
    """Fetch a chunk of jobs in a worker process with a source instantiated for the chunk (no
    per-process global: everything the worker needs comes in its arguments)."""
    source = image_source(source_cfg)
    out = []
    for key, req_dict in chunk:
        data, ext, truth = source.fetch(ImageRequest(**req_dict), derive_rng(*key))
        out.append((data, ext, truth))
    return out


CHUNK = 8


def _results(cfg, source, jobs, meta, plans, topics, paths):
    """Per job, its candidates ``[(bytes, ext, truth, source name)]``, in job order. A source that
    crawls (``fetch_all``: the web) gets every request it serves at once (searches and dedupe see the
    whole crawl) while the other images are rendered in a process pool, one per job."""
    crawls = hasattr(source, "fetch_all")
    web = {i for i, (_, req) in enumerate(jobs) if source.serves(req)} if crawls else set()
    rest = [j for i, j in enumerate(jobs) if i not in web]
    workers = max(1, min(int(cfg.images.workers or os.cpu_count() or 1), 8))
    source_dict = section(cfg, "images")["images"]
    chunks = [rest[i : i + CHUNK] for i in range(0, len(rest), CHUNK)]
    name = source.rendered_name if crawls else source.name
    with ProcessPoolExecutor(workers) as pool:
        rendered = ([r] for rs in pool.map(partial(_fetch_chunk, source_dict), chunks) for r in rs)
        if not crawls:
            for data, ext, truth in (c[0] for c in rendered):
                yield [(data, ext, truth, name)]
            return
        by_id = {t.topic_id: t for t in topics}
        sub = {p.plan_id: p.subtopic for p in plans}
        crawled = source.fetch_all(
            [
                {"key": key, "request": req, "topic": by_id[m["topic_id"]], "subtopic": sub.get(m["plan_id"])}
                for i, ((key, req), m) in enumerate(zip(jobs, meta))
                if i in web
            ],
            paths.cache / "web",
        )
        for i in range(len(jobs)):
            if i in web:
                yield next(crawled)
            else:
                data, ext, truth = next(rendered)[0]
                yield [(data, ext, truth, name)]


def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    topics = load_topics(paths)
    source = image_source(section(cfg, "images")["images"])
    families = source.families()
    plans = make_plans(cfg, topics)
    seed = int(cfg.data.seed)
    user = persona_for(seed)  # one user per benchmark: the name on every pass, ticket and own chat

    def job(req: ImageRequest) -> dict:
        return {**req.__dict__, "constraints": with_user(req.family, req.constraints, user)}

    jobs, meta = [], []
    for p in plans:
        for k, req in enumerate(p.images):
            jobs.append(((seed, "image", p.plan_id, k), job(req)))
            meta.append({"plan_id": p.plan_id, "index": k, "topic_id": p.topic_id, "request": req.__dict__})
    for i, (tid, req) in enumerate(haystack_requests(cfg, topics, families, plans)):
        jobs.append(((seed, "haystack-image", i, "render"), job(req)))
        meta.append({"plan_id": None, "index": i, "topic_id": tid, "request": req.__dict__})
    store = ObjectStore(paths.images / "objects")
    rows = []
    for m, cands in tqdm(
        zip(meta, _results(cfg, source, jobs, meta, plans, topics, paths)),
        total=len(jobs),
        desc="crawl",
        unit="img",
        leave=False,
        mininterval=0.5,
    ):
        for c, (data, ext, truth, src) in enumerate(cands):
            sha = store.put(data, ext)
            with Image.open(store.path(sha, ext)) as im:
                w, h = im.size
            rec = ImageRecord(
                sha256=sha,
                family=m["request"]["family"],
                role=m["request"]["role"],
                width=w,
                height=h,
                format="jpeg" if ext == "jpg" else ext,
                source=src,
                topic_id=m["topic_id"],
                truth=truth,
            )
            row = {"image": rec.to_dict(), **{k: m[k] for k in ("plan_id", "index", "request")}}
            if hasattr(source, "fetch_all"):  # alternatives for one request: the filter keeps the best
                row["candidate"] = c
            rows.append(row)
    paths.images.mkdir(parents=True, exist_ok=True)
    write_jsonl(paths.images / "index.jsonl", rows)
    write_jsonl(paths.images / "plans.jsonl", [p.to_dict() for p in plans])
    n_ev = sum(r["image"]["role"] == "evidence" for r in rows)
    write_manifest(
        paths.images,
        "crawl",
        {**section(cfg, "images"), "seed": seed, "scale": str(cfg.data.scale)},
        hash_tree(paths.images),
        code=(__name__,),
        extra={"plans": len(plans), "evidence_images": n_ev, "haystack_images": len(rows) - n_ev, "families": families},
    )
    log.info("crawl: %d plans, %d evidence + %d haystack images", len(plans), n_ev, len(rows) - n_ev)
