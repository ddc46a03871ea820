"""Typed schema of the configuration: one pydantic model per config group, unknown keys rejected.

Every section of the composed configuration (``conf/`` or ``params.yaml``, see
:mod:`memlens.core.config`) is checked against a model here, with ``extra="forbid"`` and strict
types at every level, so a misspelled key (``model.concurency``, also when added with ``+``) or a
wrong type (``model.concurrency=abc``) ends the command with one message naming the key path and,
for unknown keys, the keys that section knows::

    unknown config key model.concurency (known: name, _target_, kind, ...)

Groups and their schemas:

====================  ==========================================================================
``data``              :class:`DataSettings` (with :class:`TokensSettings`, :class:`ScaleSettings`)
``images``            the image source, by ``_target_``: :data:`SOURCE_SCHEMAS`
``filter``            :class:`FilterSettings`
``generator``         :class:`GeneratorSettings` (selected by ``name``: ``template`` or ``llm``)
``model``             by ``_target_``: :data:`MODEL_SCHEMAS` (one schema per system class)
``eval``              :class:`EvalSettings`
``validate``          :class:`ValidateSettings` (optional: its defaults apply)
``judge``             by ``_target_``: :data:`JUDGE_SCHEMAS`
``tracking``          :class:`TrackingSettings`
``memory``            :class:`MemorySettings` (the ``diagnose`` stage; optional: its defaults apply)
``ontology``,         optional sections that are not in ``conf/`` (add them with ``+``):
``export``, ``report``  :class:`OntologySettings`, :class:`ExportSettings`, :class:`ReportSettings`
``selftest``          :class:`SelfTestSettings` (optional; ``memlens judge --selftest``)
``stages``            optional list of stage names (the sweep entry point)
====================  ==========================================================================

Sections with a ``_target_`` are validated against the schema of that class. The built-in classes
are mapped here by their import path (the core layer never imports the classes themselves); each
of those classes also exposes its schema as a ``Config`` class attribute. A class of your own (any
``_target_`` not in the mapping) is supported when it declares ``Config``: a pydantic model of its
constructor keywords (``extra="forbid"``; the key ``_target_`` is accepted as well).

Defaults: a key an option file leaves out gets the constructor's default, which is the default
written in the schema (``tests/test_settings.py`` checks that both agree). Validation only checks:
the stages keep reading the (unchanged) composed ``DictConfig``, so ``params.yaml`` and the config
dicts written into manifests are exactly the composition.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from memlens.core.errors import ConfigError

__all__ = [
    "Settings",
    "DataSettings",
    "TokensSettings",
    "ScaleSettings",
    "SyntheticSourceSettings",
    "DirectorySourceSettings",
    "IcrawlerSourceSettings",
    "FilterSettings",
    "ChannelSettings",
    "GeneratorSettings",
    "LLMGeneratorSettings",
    "LLMEndpointSettings",
    "FillerSettings",
    "EvalSettings",
    "ValidateSettings",
    "TrackingSettings",
    "MemorySettings",
    "OntologySettings",
    "ExportSettings",
    "ReportSettings",
    "LLMLabelSettings",
    "ResourcesSettings",
    "RefuseSettings",
    "StandinSettings",
    "ChanceSettings",
    "OpenAICompatibleSettings",
    "VLLMServerSettings",
    "TransformersSettings",
    "DeterministicJudgeSettings",
    "LLMJudgeSettings",
    "MODEL_SCHEMAS",
    "JUDGE_SCHEMAS",
    "SOURCE_SCHEMAS",
    "TARGET_SCHEMAS",
    "EVAL_MODES",
    "LAYOUTS",
    "validate_settings",
    "schema_for",
    "unknown_key_message",
    "known_keys",
]

#: eval.mode values (the same tuple as :data:`memlens.eval.systems.base.MODES`)
EVAL_MODES = ("standard", "cot", "reasoning", "text_only", "no_context", "label_images", "oracle_evidence", "caption")
#: eval.subset values: ``auto`` (the system's default: the agent subset for memory agents, every
#: question otherwise), ``all``, or ``agent_subset_195`` (the stratified agent subset of the export)
EVAL_SUBSETS = ("auto", "all", "agent_subset_195")
#: prompt layouts (the same tuple as :data:`memlens.eval.prompt.LAYOUTS`)
LAYOUTS = ("messages", "legacy")

MAX_MESSAGES = 12


class Section(BaseModel):
    """Base of every schema: unknown keys are errors, types are strict (``"4"`` is not an int,
    ``"false"`` is not a bool; an int is accepted where a float is expected)."""

    model_config = ConfigDict(extra="forbid", strict=True, protected_namespaces=(), frozen=True)


class Targeted(Section):
    """A section instantiated by Hydra: ``_target_`` names the class."""

    target: str = Field(alias="_target_")


# ------------------------------------------------------------------------------------ helpers
def _ordered_pair(v: list[int]) -> list[int]:
    if v[0] > v[1]:
        raise ValueError(f"[low, high] with low <= high, got {v}")
    return v


#: ``[low, high]`` (inclusive range of integers)
IntRange = Annotated[
    list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2), AfterValidator(_ordered_pair)
]
PositiveInt = Annotated[int, Field(ge=1)]
NonNegInt = Annotated[int, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]


def _one_of(check, what: str):
    def validate(v: Any) -> Any:
        if not check(v):
            raise ValueError(f"expected {what}, got {v!r}")
        return v

    return AfterValidator(validate)


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


#: a command: a string (split like a shell) or a list of arguments
Command = Annotated[
    Any, _one_of(lambda v: v is None or isinstance(v, str) or _is_str_list(v), "null, a string or a list of strings")
]
#: ``device_map`` of transformers: a name (``auto``) or a mapping of module -> device
DeviceMap = Annotated[Any, _one_of(lambda v: v is None or isinstance(v, (str, dict)), "null, a string or a mapping")]
#: environment values (converted to strings)
EnvValue = Annotated[
    Any, _one_of(lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool), "a string or a number")
]


def _safe_name(v: str) -> str:
    """A name that becomes a folder (``data/predictions/<name>/``): letters, digits, ``.``, ``_``, ``-``."""
    from memlens.core.store import name_problem

    why = name_problem(v)
    if why:
        raise ValueError(f"{v!r} {why}")
    return v


#: a system or judge name (:func:`memlens.core.store.name_problem`)
SafeName = Annotated[str, Field(min_length=1), AfterValidator(_safe_name)]


def _reject_api_key(section: str, data: Any) -> Any:
    """A literal API key is never accepted in the configuration (it would end up in params.yaml)."""
    if isinstance(data, Mapping) and "api_key" in data:
        raise ValueError(
            f"{section}.api_key is not accepted: put the key in an environment variable and name "
            f"it in {section}.api_key_env"
        )
    return data


# ------------------------------------------------------------------------------------ data
class TokensSettings(Section):
    """``data.tokens``: cross-modal token counting (:class:`memlens.construction.assemble.tokens.TokenCounter`)."""

    tokenizer: str  # minilm (bundled WordPiece) or a tokenizer.json path
    image_rule: Literal["mmlongbench", "fixed"]
    patch: PositiveInt
    max_side: PositiveInt
    fixed_per_image: NonNegInt


class CrossEvidenceSettings(Section):
    """``data.cross_evidence``: other questions' evidence sessions as haystack (see the assemble stage).
    ``window_days``: only questions asked at most this many days apart lend each other evidence
    sessions (which keep their own dates), or the ``min_lenders`` nearest in time when fewer are
    that close; ``window_days_by_length``: a wider window from those lengths on (the shorter
    histories are unchanged); ``balance``: how strongly each pick prefers sessions used
    in fewer histories of the length (0 = not at all)."""

    enabled: bool = True
    window_days: PositiveInt = 30
    window_days_by_length: dict[str, PositiveInt] | None = None  # wider windows from these lengths on
    min_lenders: NonNegInt = 12
    balance: NonNegFloat = 2.0


class ScaleSettings(Section):
    """``data.scales.<name>``: the composition of one scale."""

    lengths: list[str]
    counts: dict[str, NonNegInt]  # "<question_type>/<subtype>" -> questions ("<type>/" for types without subtypes)
    haystack_sessions: NonNegInt
    filler_sessions: NonNegInt


class DataSettings(Section):
    """``data``: benchmark construction. ``scale`` must name one of ``scales``; ``lengths`` empty = the
    scale's lengths."""

    scale: str
    seed: int
    lengths: list[str] = []
    length_tolerance: NonNegFloat
    spare_fraction: NonNegFloat = 0.1
    tokens: TokensSettings
    scales: dict[str, ScaleSettings]
    # sessions and images per history the assembly aims at, per length: [sessions, images]
    shape: dict[str, list[PositiveInt]] = {}
    cross_evidence: CrossEvidenceSettings = CrossEvidenceSettings()
    items: Literal["built", "official"] = "built"  # where evaluation items come from
    official_dir: str | None = None


# ------------------------------------------------------------------------------------ source
class _SourceCommon(Targeted):
    # read by the crawl stage, not by the source class
    haystack_per_session: NonNegFloat = 2.0  # haystack images per image-bearing session
    workers: NonNegInt = 0  # rendering processes; 0 = one per CPU core (at most 8)


class SyntheticSourceSettings(_SourceCommon):
    """``images`` with ``_target_: memlens.construction.images.sources.SyntheticSource`` (offline renderers)."""

    name: str = "synthetic"
    photo_effect_rate: Fraction = 0.5


class DirectorySourceSettings(_SourceCommon):
    """``images`` with ``_target_: memlens.construction.images.sources.DirectorySource`` (your own images,
    ``root/<family>/*.jpg|png``)."""

    name: str = "directory"
    root: str


class IcrawlerSourceSettings(_SourceCommon):
    """``images`` with ``_target_: memlens.construction.images.web.icrawler_source.IcrawlerSource`` (web images
    through icrawler's engines or a URL list, a safe downloader and a URL-keyed cache; see
    ``conf/images/icrawler.yaml``)."""

    name: str = "icrawler"
    mode: Literal["engine", "urls"] = "engine"
    engine: Literal["bing", "baidu", "google", "flickr"] = "bing"
    engine_base_url: str | None = None  # replaces scheme+host of the engine's page URLs (mirror, local server)
    engine_options: dict[str, Any] | None = None  # filters / language (icrawler feeders), flickr search keys
    api_key_env: str | None = None  # NAME of the variable holding the engine's API key (flickr)
    url_list: str | None = None  # mode=urls: a .txt (one URL a line) or .jsonl file
    query_template: str = "{subtopic} {family}"
    haystack_query_template: str | None = "{topic} {family}"  # null: query_template
    family_words: dict[str, str] | None = None
    web_roles: list[Literal["evidence", "haystack"]] | None = None  # null: [haystack]
    candidates_per_request: PositiveInt = 1
    overfetch: Annotated[float, Field(ge=1)] = 2.0
    on_shortage: Literal["error", "synthetic"] = "error"
    photo_effect_rate: Fraction = 0.5  # the synthetic renderer of the images the web does not serve
    download_workers: PositiveInt = 16
    max_bytes: PositiveInt = 10_000_000
    max_page_bytes: PositiveInt = 5_000_000
    max_pixels: PositiveInt = 16_000_000
    min_side: PositiveInt = 64
    max_side: PositiveInt = 8192
    connect_timeout_s: PositiveFloat = 5.0
    read_timeout_s: PositiveFloat = 10.0
    total_timeout_s: PositiveFloat = 30.0
    retries: NonNegInt = 2
    backoff_s: NonNegFloat = 0.5
    rate_per_host: NonNegFloat = 2.0  # requests per second per host; 0 = no limit
    max_redirects: NonNegInt = 5
    allow_private: bool = False  # loopback/private hosts (a local mirror or test server)
    retry_failed: bool = False  # ask again for URLs whose earlier fetch failed
    phash_max_distance: NonNegInt = 12
    user_agent: str = "memlens-crawler/1"

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return _reject_api_key("images", data)

    @model_validator(mode="after")
    def _mode(self) -> IcrawlerSourceSettings:
        if self.mode == "urls" and not self.url_list:
            raise ValueError("images.mode=urls needs images.url_list (a file of image URLs)")
        return self


# ------------------------------------------------------------------------------------ filter
def _channel_spec(v: Any) -> Any:
    return {"name": v} if isinstance(v, str) else v


class ChannelSettings(Section):
    """One channel of ``filter.channels``: a name (``metadata``) or a mapping with options (see
    :mod:`memlens.construction.filter.channels`). ``threshold``/``role`` null = the channel's default
    (metadata 0.999 primary, clip/siglip 0.30 primary, caption 0.30 secondary, watermark 0.5
    negative). ``clip``/``siglip`` need ``model`` (open_clip name) and ``pretrained`` (a local weights
    file); ``caption`` (``backend: openai``, the default) and ``watermark`` with ``backend: openai``
    need ``base_url`` and ``model`` (an OpenAI-compatible VLM); ``caption`` with ``backend:
    transformers`` needs ``model_path`` (a local BLIP-2 folder)."""

    name: Literal["metadata", "clip", "siglip", "caption", "watermark"]
    threshold: float | None = None
    role: Literal["primary", "secondary", "negative"] | None = None
    model: str | None = None
    pretrained: str | None = None
    model_config_path: str | None = Field(None, alias="model_config")  # open_clip model config JSON
    prompt_template: str | None = None  # clip/siglip text prompt, "{query}" is the image's query
    device: str | None = None
    batch_size: PositiveInt | None = None
    backend: Literal["heuristic", "openai", "transformers"] | None = None  # watermark; caption
    model_path: str | None = None  # caption with backend transformers: a local BLIP-2 folder
    base_url: str | None = None
    api_key_env: str | None = None
    prompt: str | None = None  # caption / watermark question
    concurrency: PositiveInt | None = None
    timeout_s: PositiveFloat | None = None
    max_retries: NonNegInt | None = None
    max_new_tokens: PositiveInt | None = None
    size: PositiveInt | None = None  # watermark heuristic: analysis size

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return _reject_api_key("filter.channels[]", data)

    @model_validator(mode="after")
    def _options(self) -> ChannelSettings:
        set_keys = {k for k in self.model_fields_set if getattr(self, k) is not None} - {"name", "threshold", "role"}
        allowed = {
            "metadata": set(),
            "clip": {"model", "pretrained", "model_config_path", "prompt_template", "device", "batch_size"},
            "caption": {"model", "base_url", "api_key_env", "prompt", "concurrency", "timeout_s", "max_retries"}
            | {"max_new_tokens", "backend", "model_path", "device", "batch_size"},
            "watermark": {"backend", "model", "base_url", "api_key_env", "prompt", "concurrency", "timeout_s"}
            | {"max_retries", "max_new_tokens", "size"},
        }
        allowed["siglip"] = allowed["clip"]
        extra = set_keys - allowed[self.name]
        if self.name == "metadata" and extra:
            raise ValueError("the metadata channel takes no model/pretrained")
        if extra:
            names = sorted("model_config" if k == "model_config_path" else k for k in extra)
            raise ValueError(f"the {self.name} channel takes no {', '.join(names)}")
        if self.name in ("clip", "siglip") and (self.model is None or self.pretrained is None):
            raise ValueError(f"the {self.name} channel needs model and pretrained (open_clip names)")
        if self.name == "watermark" and self.backend == "transformers":
            raise ValueError("the watermark channel's backend is heuristic or openai")
        if self.name == "caption" and self.backend == "heuristic":
            raise ValueError("the caption channel's backend is openai or transformers")
        local = self.name == "caption" and self.backend == "transformers"
        if local and self.model_path is None:
            raise ValueError("the caption channel with backend transformers needs model_path (a local BLIP-2 folder)")
        remote = (self.name == "caption" and not local) or (self.name == "watermark" and self.backend == "openai")
        if remote and (self.base_url is None or self.model is None):
            raise ValueError(f"the {self.name} channel needs base_url and model (an OpenAI-compatible VLM)")
        return self


class FilterSettings(Section):
    """``filter``: image validation and relevance scoring. ``rule``: ``all`` (every channel passes)
    or ``paper`` (every primary and negative channel passes and at least one secondary does)."""

    max_side: PositiveInt
    min_side: PositiveInt
    max_pixels: PositiveInt
    max_bytes: PositiveInt
    phash_max_distance: NonNegInt  # images within this distance (256-bit pHash) are near-duplicates
    channels: list[Annotated[ChannelSettings, BeforeValidator(_channel_spec)]]
    rule: Literal["all", "paper"] = "all"


# ------------------------------------------------------------------------------------ generator
class LLMEndpointSettings(Section):
    """One role of the ``llm`` generator (``generator.llm.<role>``): an OpenAI-compatible endpoint
    and model (see :class:`memlens.construction.text.llm.engine.Endpoint`). Prices are USD per million
    tokens, for the cost accounting only."""

    base_url: str
    model: Annotated[str, Field(min_length=1)]
    model_id: str | None = None  # identity in the request cache key; default: model
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    temperature: NonNegFloat | None = 0.7  # null: none is sent (reasoning APIs)
    top_p: Fraction | None = None
    max_new_tokens: PositiveInt = 1024
    token_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    extra_body: dict[str, Any] | None = None
    structured_output: bool = True  # send response_format json_schema for JSON tasks
    price_prompt_per_mtok: NonNegFloat = 0.0
    price_completion_per_mtok: NonNegFloat = 0.0

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return _reject_api_key("generator.llm.<role>", data)


class LLMGeneratorSettings(Section):
    """``generator.llm``: the LLM question writer and the two-model session simulator
    (:mod:`memlens.construction.generate.llm`, :mod:`memlens.construction.text.llm`). ``prompt_version`` must equal
    :data:`memlens.construction.text.llm.prompts.PROMPT_VERSION` (checked when the generator is built)."""

    prompt_version: Annotated[str, Field(min_length=1)]
    question_writer: LLMEndpointSettings
    user: LLMEndpointSettings
    assistant: LLMEndpointSettings
    leakage_checker: LLMEndpointSettings
    concurrency: PositiveInt = 32  # requests in flight per endpoint
    timeout_s: PositiveFloat = 600
    max_retries: NonNegInt = 5
    max_repairs: NonNegInt = 2  # repair requests per invalid JSON answer
    leakage_check: bool = True  # the LLM semantic-leakage check of turns with hidden facts
    text_only_check: bool = True  # reject questions the checker answers from their text alone
    cache_path: str | None = "llm_requests.sqlite"  # relative: under the cache folder; null: no cache
    progress: bool = True


class FillerSettings(Section):
    """``generator.filler``: filler sessions from a ShareGPT/UltraChat corpus
    (:mod:`memlens.construction.text.corpora`); ``null`` keeps the template filler."""

    path: str | None = None  # a .json/.jsonl file or a folder of them
    hf_dataset: str | None = None  # or a Hugging Face dataset name (needs the network or its cache)
    hf_split: str = "train"
    format: Literal["auto", "sharegpt", "ultrachat"] = "auto"
    min_turns: PositiveInt = 2
    max_turns: PositiveInt = 12
    min_words: NonNegInt = 1  # per turn
    max_words: PositiveInt = 600  # per turn
    language: Literal["en", "any"] = "en"

    @model_validator(mode="after")
    def _one_source(self) -> FillerSettings:
        if bool(self.path) == bool(self.hf_dataset):
            raise ValueError("give exactly one of filler.path and filler.hf_dataset")
        return self


class GeneratorSettings(Section):
    """``generator``: the question and session generator of the generate stage
    (``memlens.construction.generate``, with :class:`memlens.construction.text.sessions.WriterConfig`). It is selected
    by ``name``; there is no ``_target_``: ``template`` (offline, the default) or ``llm`` (the
    ``llm`` section: LLM question writer and two-model session simulator)."""

    name: Literal["template", "llm"] = "template"
    assistant_words: IntRange
    user_words: IntRange
    turns_per_session: IntRange
    # a share of long sessions (evidence and haystack alike): histories of every length then find
    # sessions of the sizes the paper's shape needs (the 128K->256K extension: ~4,400 tokens each)
    long_session_share: Fraction = 0.0
    long_session_turns: IntRange = [18, 30]
    max_regenerations: NonNegInt
    llm: LLMGeneratorSettings | None = None
    filler: FillerSettings | None = None  # null: template filler sessions

    @model_validator(mode="after")
    def _llm_section(self) -> GeneratorSettings:
        if self.name == "llm" and self.llm is None:
            raise ValueError("generator.name 'llm' needs the generator.llm section (use generator=llm)")
        return self


# ------------------------------------------------------------------------------------ eval, validate, tracking
class EvalSettings(Section):
    """``eval``: the evaluation protocol."""

    mode: Literal[EVAL_MODES]  # type: ignore[valid-type]
    layout: Literal[LAYOUTS] = "messages"  # type: ignore[valid-type]
    lengths: list[str] = []  # empty: every built length
    max_items: PositiveInt | None = None
    wait_for_lock: bool = False  # a second evaluation of the same system waits (true) or stops at once
    max_failure_rate: Fraction = 0.05  # more failed requests (after retries) than this share: exit status 1
    subset: Literal[EVAL_SUBSETS] = "auto"  # type: ignore[valid-type]
    caption_adapter: str = "ocr"  # mode caption: the input adapter whose text replaces each image
    caption_adapter_options: dict[str, Any] = {}


class ValidateSettings(Section):
    """``validate``: validity gates of the built benchmark and the adversaries behind them.

    A gate on a noisy figure (accuracy, ROC-AUC) fails when the one-sided lower ``confidence``
    bound of the figure exceeds its threshold, and is not evaluated below its minimum sample."""

    max_auc: Fraction = 0.60
    max_text_only_rate: Fraction = 0.02
    max_text_only_excess: Fraction = 0.03
    max_refusal_detection_excess: Fraction = 0.03
    max_repeat_share: Fraction = 0.05
    max_frequent_share: Fraction = 0.10
    confidence: Annotated[float, Field(ge=0.5, lt=1)] = 0.95
    min_questions: PositiveInt = 20
    min_evidence: PositiveInt = 20
    folds: Annotated[int, Field(ge=2)] = 5
    vocab_min: PositiveInt = 3
    min_support: PositiveInt = 2
    top_features: PositiveInt = 8
    text_max_features: PositiveInt = 20000
    min_sentence_words: PositiveInt = 5
    frequent_uses: PositiveInt = 100
    advisory: list[Literal["text_only", "refusal_detection", "evidence_auc", "repetition"]] = []
    warn_only: bool = False


class MemorySettings(Section):
    """``memory``: the offline retrieval and storage-fidelity diagnostics (``memlens diagnose``)."""

    # text adapters whose stored texts are diagnosed (oracle_caption = ground truth: an upper bound)
    adapters: list[Literal["markers", "ocr", "caption", "oracle_caption"]] = ["markers", "ocr", "oracle_caption"]
    # retrievers: bm25, dense (bundled MiniLM + faiss), image (needs image_checkpoint), fusion (RRF)
    retrievers: list[Literal["bm25", "dense", "image", "fusion"]] = ["bm25", "dense"]
    granularity: Literal["session", "turn"] = "session"  # one document per session or per turn
    temporal_filter: bool = True  # only sessions at or before the question date
    subset: Literal["agent", "all"] = "agent"  # the 195-question agent subset (scaled) or every question
    sample: NonNegInt = 0  # 0: the whole set; N: a seeded draw of N of its questions, types in turn
    lengths: list[str] = []  # empty: every built length
    ks: list[PositiveInt] = [1, 3, 5, 10]  # recall@k cut-offs
    depth: PositiveInt = 50  # sessions retrieved per question (MRR looks this deep)
    caption: dict[str, Any] | None = None  # options of the caption adapter (backend: blip2 | openai, ...)
    image_checkpoint: str | None = None  # a LOCAL open_clip checkpoint (image and fusion retrieval)
    image_model: str = "ViT-B-32"  # its open_clip architecture


class TrackingSettings(Section):
    """``tracking``: MLflow. ``uri: null`` = ``sqlite:///<root>/mlflow.db``; ``experiment: null`` =
    ``memlens-<dataset hash prefix>``."""

    enabled: bool
    uri: str | None = None
    experiment: str | None = None
    bootstrap_resamples: PositiveInt
    bootstrap_seed: int


class OntologySettings(Section):
    """``ontology`` (optional, ``+ontology.version=...``): the ontology file version."""

    version: str = "1"


class ExportSettings(Section):
    """``export`` (optional): ``huggingface: false`` skips the Hugging Face dataset files."""

    huggingface: bool = True


class LLMLabelSettings(Section):
    """``report.llm_labels``: the OpenAI-compatible endpoint that labels wrong answers with the
    paper's taxonomy (:mod:`memlens.eval.report.llm_labels`); absent: no LLM labels."""

    base_url: str
    model: str
    model_id: str | None = None
    api_key_env: str | None = "MEMLENS_JUDGE_API_KEY"
    concurrency: PositiveInt = 8
    max_new_tokens: PositiveInt = 256
    temperature: NonNegFloat = 0.0
    timeout_s: PositiveFloat = 300.0
    max_retries: NonNegInt = 4

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return _reject_api_key("report.llm_labels", data)


class ReportSettings(Section):
    """``report`` (optional): options of the cross-system analyses."""

    alpha: Fraction = 0.05
    hard_threshold: Fraction = 0.2
    hard_reference_length: str | None = None
    degradation_test_direction: Literal["any", "increase", "decrease"] = "any"
    retention_lengths: Annotated[list[str], Field(min_length=2, max_length=2)] | None = None  # [short, long]
    llm_labels: LLMLabelSettings | None = None


class SelfTestSettings(Section):
    """``selftest`` (optional, ``memlens judge --selftest +selftest.max_cases=2000``): the judge
    self-test's seed (which texts its patterns use) and an optional stratified sample size."""

    seed: int = 0
    max_cases: PositiveInt | None = None


# ------------------------------------------------------------------------------------ models
class ResourcesSettings(Section):
    """``model.resources``: what a model needs to run (scheduling; checked against the serve settings)."""

    accelerator: str | None = None
    gpus: PositiveInt | None = None
    tensor_parallel_size: PositiveInt | None = None
    nodes: PositiveInt | None = None
    cpus: PositiveInt | None = None
    mem_gb: PositiveFloat | None = None


class _System(Section):
    """Keys of every system: ``name`` names the prediction folder; ``kind`` (lvlm, baseline, agent ...)
    defaults to the class's own."""

    name: SafeName
    target: str = Field(alias="_target_")
    kind: str | None = None


class _Descriptive(_System):
    """Descriptive keys, kept for the logs, the sweep planner and the report's system cards only
    (``params_total_b`` / ``params_active_b``: parameter counts in billions, for retention vs size)."""

    hf_id: str | None = None
    context_window: PositiveInt | None = None
    thinking: bool = False
    resources: ResourcesSettings | None = None
    notes: str | None = None
    params_total_b: PositiveFloat | None = None
    params_active_b: PositiveFloat | None = None


class RefuseSettings(_System):
    """``model`` with ``_target_: memlens.eval.systems.baselines.RefuseBaseline``."""


class ChanceSettings(_System):
    """``model`` with ``_target_: memlens.eval.systems.baselines.ChanceBaseline``."""

    seed: int = 0


class _Client(_Descriptive):
    """Client, decoding and prompt keys shared by the OpenAI-compatible backends (see
    :class:`memlens.core.http.OpenAICompatibleConfig`)."""

    api_key_env: str | None = None  # NAME of the environment variable holding the key
    concurrency: PositiveInt = 8
    max_new_tokens: PositiveInt = 2048
    temperature: NonNegFloat | None = 0.0  # null: no temperature is sent (reasoning APIs)
    timeout_s: PositiveFloat = 600  # per network operation (connect, each read)
    deadline_s: PositiveFloat | None = 1800  # total per attempt (null: none); a failure names it
    max_response_mb: PositiveFloat | None = 8  # largest answer read (null: no cap); not retried
    max_retries: NonNegInt = 5
    image_transport: Literal["base64", "url"] = "base64"
    max_image_side: PositiveInt | None = 800
    extra_body: dict[str, Any] | None = None
    top_p: Fraction | None = None
    seed: int | None = None
    backoff_base_s: NonNegFloat = 1.0
    backoff_max_s: NonNegFloat = 30.0
    token_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    layout: Literal[LAYOUTS] = "messages"  # type: ignore[valid-type]
    label_images: bool = False
    system_prefix: str | None = None
    reorder_window: PositiveInt = 16
    image_cache_mb: NonNegInt = 384
    progress: bool = False

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return _reject_api_key("model", data)


class OpenAICompatibleSettings(_Client):
    """``model`` with ``_target_: memlens.eval.systems.openai_model.OpenAICompatibleModel``."""

    base_url: str
    model: str


class VLLMServerSettings(_Client):
    """``model`` with ``_target_: memlens.eval.systems.vllm_server.VLLMServerModel``: ``hf_id`` or
    ``model_path`` is served; the client connects to ``host:port`` (no ``base_url``/``model``)."""

    model_path: str | None = None
    served_model_name: str | None = None  # default: name
    command: Command = None  # null: $MEMLENS_VLLM_COMMAND or `vllm serve`
    host: str = "127.0.0.1"
    bind_host: str | None = None
    port: Annotated[int, Field(ge=0, le=65535)] = 0
    tensor_parallel_size: PositiveInt | None = None
    max_model_len: PositiveInt | None = None
    limit_mm_per_prompt: dict[str, NonNegInt] | None = None
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] | None = 0.9
    trust_remote_code: bool = False
    enable_prefix_caching: bool = True
    extra_args: list[str] = []
    env: dict[str, EnvValue] | None = None
    startup_timeout_s: PositiveFloat = 1800
    health_interval_s: PositiveFloat = 2.0
    shutdown_timeout_s: PositiveFloat = 60
    log_file: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_external_server(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and ("base_url" in data or "model" in data):
            raise ValueError(
                "vllm_server derives base_url/model from host, port and served_model_name; use the "
                "openai_compatible backend (memlens.eval.systems.openai_model.OpenAICompatibleModel) "
                "for an external server"
            )
        return data

    @model_validator(mode="after")
    def _served(self) -> VLLMServerSettings:
        if not (self.hf_id or self.model_path):
            raise ValueError("vllm_server needs hf_id or model_path")
        res = self.resources
        tp_res = res.tensor_parallel_size if res else None
        tp = self.tensor_parallel_size or tp_res or 1
        if tp_res is not None and self.tensor_parallel_size is not None and tp_res != self.tensor_parallel_size:
            raise ValueError(
                f"tensor_parallel_size {self.tensor_parallel_size} disagrees with "
                f"resources.tensor_parallel_size {tp_res}"
            )
        if res and res.gpus is not None and res.gpus < tp:
            raise ValueError(f"resources.gpus ({res.gpus}) must be >= tensor_parallel_size ({tp})")
        return self


class TransformersSettings(_Descriptive):
    """``model`` with ``_target_: memlens.eval.systems.hf_transformers.TransformersModel``."""

    model_path: str | None = None
    revision: str | None = None
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    device_map: DeviceMap = None  # e.g. auto (accelerate sharding)
    max_new_tokens: PositiveInt = 2048
    max_image_side: PositiveInt | None = 800
    layout: Literal[LAYOUTS] = "messages"  # type: ignore[valid-type]
    label_images: bool = False
    system_prefix: str | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    model_class: str = "AutoModelForImageTextToText"
    image_key: str = "image"
    trust_remote_code: bool = False
    attn_implementation: str | None = None
    image_cache_size: PositiveInt = 256

    @model_validator(mode="after")
    def _source(self) -> TransformersSettings:
        if not (self.model_path or self.hf_id):
            raise ValueError("transformers needs model_path or hf_id")
        return self


# ------------------------------------------------------------------------------------ judges
class DeterministicJudgeSettings(Targeted):
    """``judge`` with ``_target_: memlens.eval.judge.judges.DeterministicJudge``."""

    name: SafeName
    tolerance: NonNegFloat | None = None  # absolute tolerance of arithmetic answers; null = exact to the cent


class LLMJudgeSettings(Targeted):
    """``judge`` with ``_target_: memlens.eval.judge.llm.LLMJudge`` (see ``conf/judge/llm.yaml``).
    ``prompt_version`` must match :data:`memlens.eval.judge.prompts.PROMPT_VERSION` (checked when the
    judge is built)."""

    name: SafeName
    base_url: str = "http://127.0.0.1:8001/v1"
    model: str = "qwen3-235b-judge"
    model_id: str | None = None  # judge identity in the cache key; default: model
    api_key_env: str | None = "MEMLENS_JUDGE_API_KEY"
    concurrency: PositiveInt = 8
    max_new_tokens: PositiveInt = 512
    temperature: NonNegFloat = 0.0
    timeout_s: PositiveFloat = 300.0
    max_retries: NonNegInt = 4
    backoff_base_s: NonNegFloat = 1.0
    backoff_max_s: NonNegFloat = 30.0
    extra_body: dict[str, Any] | None = None
    cache_path: str | None = ".memlens_cache/judge.sqlite"
    prompt_version: str | None = None
    layout: Literal["system", "single"] = "system"
    max_words: PositiveInt = 500
    progress: bool | None = None  # null: a progress bar when stderr is a terminal

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return _reject_api_key("judge", data)


# ------------------------------------------------------------------------------------ memory agents
class _AgentBase(_Descriptive):
    """Keys of every memory agent (:class:`memlens.eval.agents.runtime.MemoryAgent`): the backbone
    endpoint (flat, like :class:`OpenAICompatibleSettings`, so endpoint and concurrency stay out of
    the system identity), the input adapter and the token counter of the budgets."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "qwen3-8b"
    api_key_env: str | None = None
    concurrency: PositiveInt = 8  # questions (and requests) in flight
    max_new_tokens: PositiveInt = 2048
    temperature: NonNegFloat | None = 0.0
    timeout_s: PositiveFloat = 600
    deadline_s: PositiveFloat | None = 1800  # total per attempt (null: none)
    max_response_mb: PositiveFloat | None = 8  # largest answer read (null: no cap)
    max_retries: NonNegInt = 5
    backoff_base_s: NonNegFloat = 1.0
    backoff_max_s: NonNegFloat = 30.0
    image_transport: Literal["base64", "url"] = "base64"
    max_image_side: PositiveInt | None = 800
    extra_body: dict[str, Any] | None = None
    top_p: Fraction | None = None
    seed: int | None = None
    token_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    adapter: str = "markers"  # markers | ocr | caption | oracle_caption | render | interleaved
    adapter_options: dict[str, Any] | None = None
    tokenizer: str = "minilm"  # token counter of the budgets: minilm or a tokenizer.json path
    cache_calls: bool = True  # backbone answers cached by request (a resumed run repeats no call)
    backbone_config: str | None = None  # the model config of the backbone (backbone-matched comparison)

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return _reject_api_key("model", data)


class MemoryT1Settings(_AgentBase):
    """``model`` with ``_target_: memlens.eval.agents.memory_t1.MemoryT1Agent``."""

    top_k: PositiveInt = 10
    temporal_filter: bool = True
    prompt_budget_tokens: PositiveInt = 30000


class M3CSettings(_AgentBase):
    """``model`` with ``_target_: memlens.eval.agents.m3c.M3CAgent``."""

    top_k: PositiveInt = 3
    encode_turns: PositiveInt = 4
    max_turns_per_session: PositiveInt = 20
    max_context_chars: PositiveInt = 12000
    retriever_options: dict[str, Any] | None = None


class MemAgentSettings(_AgentBase):
    """``model`` with ``_target_: memlens.eval.agents.memagent.MemAgent``."""

    chunk_tokens: PositiveInt = 5000
    memory_tokens: PositiveInt = 1024
    max_context_tokens: PositiveInt = 300000


class M3AgentSettings(_AgentBase):
    """``model`` with ``_target_: memlens.eval.agents.m3_agent.M3Agent``: ``memorizer_model`` (served
    at ``base_url``; null = ``model``) memorizes the rendered sessions, ``model`` controls."""

    adapter: Literal["interleaved", "render"] = "interleaved"
    memorizer_model: str | None = None
    batch_sessions: PositiveInt = 10
    max_rounds: PositiveInt = 5
    search_top_k: PositiveInt = 5
    retriever_options: dict[str, Any] | None = None


class HybridSettings(_AgentBase):
    """``model`` with ``_target_: memlens.eval.agents.hybrid.HybridPixelAgent``."""

    adapter: str = "ocr"  # the text channel of the images (ocr, caption, oracle_caption ...)
    top_k: PositiveInt = 5
    channels: list[Literal["bm25", "ocr", "bm25_ocr", "image"]] = ["bm25_ocr"]
    rrf_k: PositiveInt = 60
    temporal_filter: bool = True
    prompt_budget_tokens: PositiveInt = 32000
    image_tokens: PositiveInt = 1024  # budget charged per image
    retriever_options: dict[str, Any] | None = None


class Mem0Settings(_AgentBase):
    """``model`` with ``_target_: memlens.eval.agents.mem0.Mem0Agent`` (mem0ai 2.0.4 in
    ``.venv-mem0``): the backbone extracts and answers, ``embedder_*`` name an OpenAI-compatible
    ``/v1/embeddings`` endpoint (null base URL: ``base_url``) whose vectors have ``embedding_dims``."""

    top_k: PositiveInt = 20
    embedder_base_url: str | None = None
    embedder_model: str = "text-embedding-3-small"
    embedder_api_key_env: str | None = None  # NAME of the environment variable holding its key
    embedding_dims: PositiveInt = 1536
    distance_strategy: Literal["cosine", "euclidean", "inner_product"] = "cosine"
    extraction_max_tokens: PositiveInt = 2000  # mem0's own calls (its default)
    worker_python: str = ".venv-mem0/bin/python"  # relative to the project root
    worker_timeout_s: PositiveFloat = 3600  # per worker request (one session's add, the search)
    worker_reuse: PositiveInt = 50  # questions per worker process (each in a fresh Memory); 1: one process each
    # the date mem0's extraction prompt gives as "today": the session's (reproducible, cacheable) or
    # the wall clock's (mem0's own behaviour: the prompt changes every day)
    observation_date: Literal["session", "clock"] = "session"


class ImportedSettings(_System):
    """``model`` with ``_target_: memlens.eval.agents.exchange.ImportedAnswers``: the answers an
    upstream runner (MemOS, M2A) wrote, imported (``answers``: the file, relative to the project)."""

    answers: str = "exports/answers.jsonl"
    upstream: Literal["memos", "m2a"] = "memos"
    backbone: str | None = None
    notes: str | None = None
    params_total_b: PositiveFloat | None = None
    params_active_b: PositiveFloat | None = None
    backbone_config: str | None = None  # the model config of the backbone (backbone-matched comparison)


class StandinSettings(_System):
    """``model`` with ``_target_: memlens.eval.systems.standin.PlantedErrors``: a stand-in system with
    planted error patterns (reads the answer key; for testing the analyses, not a model)."""

    seed: int = 0
    accuracy: Fraction = 0.6  # share of correct answers at 32K
    decay_per_doubling: NonNegFloat = 0.05  # lost per doubling of the length
    patterns: dict[str, NonNegFloat] | None = None  # weights of the planted error kinds; null: all alike
    subset: Literal["agent_subset_195"] | None = None  # the agent stand-in is evaluated on the agent subset
    params_total_b: PositiveFloat | None = None
    params_active_b: PositiveFloat | None = None
    backbone_config: str | None = None
    notes: str | None = None


# ------------------------------------------------------------------------------------ registry
MODEL_SCHEMAS: dict[str, type[BaseModel]] = {
    "memlens.eval.systems.baselines.RefuseBaseline": RefuseSettings,
    "memlens.eval.systems.baselines.ChanceBaseline": ChanceSettings,
    "memlens.eval.systems.openai_model.OpenAICompatibleModel": OpenAICompatibleSettings,
    "memlens.eval.systems.vllm_server.VLLMServerModel": VLLMServerSettings,
    "memlens.eval.systems.hf_transformers.TransformersModel": TransformersSettings,
    "memlens.eval.agents.memory_t1.MemoryT1Agent": MemoryT1Settings,
    "memlens.eval.agents.m3c.M3CAgent": M3CSettings,
    "memlens.eval.agents.memagent.MemAgent": MemAgentSettings,
    "memlens.eval.agents.m3_agent.M3Agent": M3AgentSettings,
    "memlens.eval.agents.hybrid.HybridPixelAgent": HybridSettings,
    "memlens.eval.agents.mem0.Mem0Agent": Mem0Settings,
    "memlens.eval.agents.exchange.ImportedAnswers": ImportedSettings,
    "memlens.eval.systems.standin.PlantedErrors": StandinSettings,
}
JUDGE_SCHEMAS: dict[str, type[BaseModel]] = {
    "memlens.eval.judge.judges.DeterministicJudge": DeterministicJudgeSettings,
    "memlens.eval.judge.llm.LLMJudge": LLMJudgeSettings,
}
SOURCE_SCHEMAS: dict[str, type[BaseModel]] = {
    "memlens.construction.images.sources.SyntheticSource": SyntheticSourceSettings,
    "memlens.construction.images.sources.DirectorySource": DirectorySourceSettings,
    "memlens.construction.images.web.icrawler_source.IcrawlerSource": IcrawlerSourceSettings,
}
#: section -> {_target_ -> schema}
TARGET_SCHEMAS: dict[str, dict[str, type[BaseModel]]] = {
    "images": SOURCE_SCHEMAS,
    "model": MODEL_SCHEMAS,
    "judge": JUDGE_SCHEMAS,
}


class Settings(Section):
    """The whole configuration. ``images``, ``model`` and ``judge`` are validated against the schema of
    their ``_target_`` (:func:`validate_settings` puts the validated sections in place)."""

    data: DataSettings
    images: Any
    filter: FilterSettings
    generator: GeneratorSettings
    model: Any
    eval: EvalSettings
    validate_: ValidateSettings = Field(ValidateSettings(), alias="validate")
    judge: Any
    tracking: TrackingSettings
    memory: MemorySettings = MemorySettings()
    ontology: OntologySettings | None = None
    export: ExportSettings | None = None
    report: ReportSettings | None = None
    selftest: SelfTestSettings | None = None
    stages: list[str] | None = None
    secrets_checked: bool | None = None  # conf/config.yaml: the secrets check (memlens.core.secrets)


def schema_for(section: str, data: Any) -> type[BaseModel]:
    """The schema of an ``images``/``model``/``judge`` section, chosen by its ``_target_``."""
    registry = TARGET_SCHEMAS[section]
    known = ", ".join(registry)
    if not isinstance(data, Mapping):
        raise ConfigError(f"config section {section} must be a mapping with a _target_, not {data!r}")
    target = data.get("_target_")
    if not target:
        raise ConfigError(f"missing config key {section}._target_ (known targets: {known})")
    schema = registry.get(str(target))
    if schema is not None:
        return schema
    from hydra.utils import get_class

    try:  # a class of the user's own declares its keys as a pydantic model: ``Config``
        cls = get_class(str(target))
    except Exception as exc:
        raise ConfigError(f"{section}._target_ {target!r} cannot be imported ({exc}); known targets: {known}") from None
    schema = getattr(cls, "Config", None)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    raise ConfigError(
        f"{section}._target_ {target!r} declares no config schema: give the class a `Config` "
        f"attribute (a pydantic model of its keys, extra='forbid') or use one of: {known}"
    )


# ------------------------------------------------------------------------------------ messages
def unwrap_type(tp: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` -> ``X``."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            if len(members) != 1:
                return tp
            tp = members[0]
        else:
            return tp


def is_schema(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def known_keys(schema: type[BaseModel]) -> list[str]:
    """The keys a section accepts (aliases; ``name`` and ``_target_`` first, then declaration order)."""
    keys = [f.alias or name for name, f in schema.model_fields.items()]
    return sorted(keys, key=lambda k: (k != "name", k != "_target_"))


def _field(schema: type[BaseModel], key: Any):
    for name, f in schema.model_fields.items():
        if (f.alias or name) == key:
            return f
    return None


def _descend(tp: Any, key: Any) -> tuple[bool, Any]:
    """(known, type of the child) for ``key`` below a value of type ``tp``; the child type is None
    when nothing more is known about it."""
    tp = unwrap_type(tp)
    if is_schema(tp):
        f = _field(tp, key)
        return (False, None) if f is None else (True, f.annotation)
    origin = get_origin(tp)
    if origin in (dict, Mapping):
        args = get_args(tp)
        return True, args[1] if len(args) == 2 else None
    if origin in (list, Sequence) and isinstance(key, int):
        args = get_args(tp)
        return True, args[0] if args else None
    return True, None


def _walk(data: Any, path: Sequence[Any]) -> tuple[int, type[BaseModel]] | None:
    """The first component of ``path`` that the schema does not know, as (index, schema of its
    section); None when every component is known (or below a free-form mapping)."""
    tp: Any = Settings
    node = data
    for i, key in enumerate(path):
        if i == 0 and key in TARGET_SCHEMAS:
            try:
                tp = schema_for(str(key), node.get(key) if isinstance(node, Mapping) else None)
            except ConfigError:
                return None
            node = node.get(key)
            continue
        known, child = _descend(tp, key)
        if not known:
            return i, unwrap_type(tp)
        if child is None:
            return None
        tp = child
        if isinstance(node, Mapping):
            node = node.get(key)
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            node = None
    return None


def _dotted(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def unknown_key_message(data: Mapping[str, Any], key: str) -> str | None:
    """``unknown config key a.b (known: ...)`` for a dotted key the schema does not know (judged on the
    composed ``data``, whose ``_target_`` values choose the schemas), or None if the schema knows it."""
    path = [int(p) if p.isdigit() else p for p in key.split(".")]
    hit = _walk(data, path)
    if hit is None:
        return None
    i, schema = hit
    return f"unknown config key {_dotted(path[: i + 1])} (known: {', '.join(known_keys(schema))})"


def _messages(exc: ValidationError, data: Any, prefix: tuple[Any, ...], schema: type[BaseModel]) -> list[str]:
    out = []
    for e in exc.errors(include_url=False):
        loc = tuple(e["loc"])
        path = _dotted(prefix + loc) or "config"
        kind = e["type"]
        if kind == "extra_forbidden":
            tp: Any = schema
            for part in loc[:-1]:
                tp = _descend(tp, part)[1]
            tp = unwrap_type(tp)
            known = ", ".join(known_keys(tp)) if is_schema(tp) else "?"
            out.append(f"unknown config key {path} (known: {known})")
        elif kind == "missing":
            out.append(f"missing config key {path}")
        elif kind == "value_error":
            out.append(f"{path}: {e['ctx']['error'] if 'ctx' in e else e['msg']}")
        else:
            out.append(f"config key {path}: {e['msg']} (got {e['input']!r})")
    return out


def validate_settings(data: Mapping[str, Any]) -> Settings:
    """Validate a resolved configuration (plain containers); raises one :class:`ConfigError` listing every
    problem found. Returns the typed settings (``images``/``model``/``judge`` as their own schemas)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"the configuration must be a mapping, not {type(data).__name__}")
    problems: list[str] = []
    try:
        root = Settings.model_validate(data)
    except ValidationError as exc:
        problems += _messages(exc, data, (), Settings)
        root = None
    sections: dict[str, BaseModel] = {}
    for name in TARGET_SCHEMAS:
        if name not in data:
            continue  # reported as missing above
        try:
            schema = schema_for(name, data[name])
            sections[name] = schema.model_validate(data[name])
        except ConfigError as exc:
            problems.append(str(exc))
        except ValidationError as exc:
            problems += _messages(exc, data[name], (name,), schema)
    if problems:
        more = f"; ... and {len(problems) - MAX_MESSAGES} more" if len(problems) > MAX_MESSAGES else ""
        raise ConfigError("; ".join(problems[:MAX_MESSAGES]) + more)
    assert root is not None
    return root.model_copy(update=sections)
