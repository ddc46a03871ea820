"""System cards: what the cross-system analyses know of each system besides its verdicts.

A card holds a system's kind (``lvlm``, ``agent``, ``baseline``, ``standin`` ...), its total and
active parameter counts in billions (``params_total_b`` / ``params_active_b`` of its model config:
the paper's roster table where it gives them, the public model card otherwise, null for API models
whose size is not published) and, for a memory agent, ``backbone_config``: the name of the LVLM
config whose direct answers it is compared with (the backbone-matched comparison).

The report stage writes the card of the system it reports next to that system's archived verdicts
(``<verdict archive>/<system>/card.json``), so the analyses know every system judged on a build
whatever the DVC workspace holds now; a system without a card there is looked up in
``conf/model/<system>.yaml``; otherwise its card is empty (no size, no backbone).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memlens.core.io import write_json

__all__ = ["SystemCard", "card_from_config", "write_card", "load_cards", "CARD_FILE"]

CARD_FILE = "card.json"


@dataclass(frozen=True)
class SystemCard:
    system: str
    kind: str = ""
    params_total_b: float | None = None
    params_active_b: float | None = None
    backbone_config: str | None = None
    source: str = "none"  # archive | conf | none

    @property
    def size_b(self) -> float | None:
        """The size the retention analysis ranks by: the total parameter count."""
        return self.params_total_b


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def card_from_config(model_cfg: dict, source: str = "archive") -> SystemCard:
    """The card of a composed (or raw YAML) model config."""
    kind = model_cfg.get("kind")
    backbone = model_cfg.get("backbone_config")
    return SystemCard(
        system=str(model_cfg.get("name", "")),
        kind=str(kind) if isinstance(kind, str) else "",
        params_total_b=_num(model_cfg.get("params_total_b")),
        params_active_b=_num(model_cfg.get("params_active_b")),
        backbone_config=str(backbone) if isinstance(backbone, str) and backbone else None,
        source=source,
    )


def write_card(archive: Path, card: SystemCard) -> Path:
    out = Path(archive) / card.system / CARD_FILE
    write_json(out, {k: v for k, v in asdict(card).items() if k != "source"})
    return out


def _read_card(path: Path, system: str) -> SystemCard | None:
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    return card_from_config({**raw, "name": system}, source="archive")


def _conf_card(conf_model_dir: Path, system: str) -> SystemCard | None:
    import yaml

    p = Path(conf_model_dir) / f"{system}.yaml"
    if not p.is_file():
        return None
    try:
        raw = yaml.safe_load(p.read_text())
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(raw, dict) or str(raw.get("name", system)) != system:
        return None
    return card_from_config(raw, source="conf")


def load_cards(verdicts_dir: Path | None, systems: list[str], conf_model_dir: Path | None) -> dict[str, SystemCard]:
    """The card of every system: archived card, else its ``conf/model`` file, else an empty card."""
    out = {}
    for s in systems:
        card = None
        if verdicts_dir is not None and (Path(verdicts_dir) / s / CARD_FILE).is_file():
            card = _read_card(Path(verdicts_dir) / s / CARD_FILE, s)
        if card is None and conf_model_dir is not None:
            card = _conf_card(conf_model_dir, s)
        out[s] = card or SystemCard(system=s)
    return out
