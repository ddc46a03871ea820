"""Facts shared by every layer, each defined once: the official vocabulary of the release, the
prompt protocol's fixed text, context lengths and the construction calendar (the package version
is :mod:`memlens.core.version`)."""

from __future__ import annotations

# --------------------------------------------------------------------------------------------------
# Official vocabulary
# --------------------------------------------------------------------------------------------------
IE = "information_extraction"
MSR = "multi_session_reasoning"
TR = "temporal_reasoning"
KU = "knowledge_update"
AR = "answer_refusal"
#: question types in the paper's order (tables, reports and figures use it)
QUESTION_TYPES: tuple[str, ...] = (IE, MSR, TR, KU, AR)
TYPE_ABBREV: dict[str, str] = {IE: "IE", MSR: "MSR", TR: "TR", KU: "KU", AR: "AR"}
#: the abbreviations in the same order
TYPE_ORDER: tuple[str, ...] = tuple(TYPE_ABBREV[t] for t in QUESTION_TYPES)

#: Official ``question_subtype`` strings per type ("" where the release leaves it empty).
SUBTYPES: dict[str, tuple[str, ...]] = {
    IE: ("entity", "previnfo"),
    MSR: ("arithmetic", "counting", "entity_resolution"),
    TR: ("duration_comparison", "order_ranking", "temporal_info_extraction"),
    KU: ("",),
    AR: ("",),
}

#: the ontology's three tracks
TRACKS: tuple[str, ...] = ("identification", "experience", "document")
IMAGE_ROLES: tuple[str, ...] = ("evidence", "haystack")
SESSION_KINDS: tuple[str, ...] = ("evidence", "haystack", "filler")
ROLES: tuple[str, ...] = ("user", "assistant")
IMAGE_PLACEHOLDER = "<image>"
#: the reference answer of answer-refusal questions and the abstention the judge recognises
REFUSAL_REFERENCE = "Insufficient information"

#: release timestamp format: ``2024/05/31 (Fri) 07:58``
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"

# --------------------------------------------------------------------------------------------------
# Prompt protocol (the official harness's fixed text); token counting in `assemble` uses it too
# --------------------------------------------------------------------------------------------------
#: The official system message (``SYSTEM_TEMPLATE``).
SYSTEM_PROMPT = (
    "Provide answers based on the given conversation history. "
    "If the question cannot be answered based on the given conversation, "
    f'respond with "{REFUSAL_REFERENCE}".'
)
#: Instruction line per mode family (official ``INSTRUCTION_DEFAULT`` / ``_COT`` / ``_REASONING``).
INSTRUCTIONS: dict[str, str] = {
    "standard": "Directly output the answer with no extra output.",
    "cot": "Think step by step before providing your answer.",
    "reasoning": (
        "First provide your reasoning inside [REASONING], then provide your final answer inside [ANSWER].\n"
        "Format:\n[REASONING] your reasoning here\n[ANSWER] your answer here"
    ),
}
#: The final user message (official ``QUESTION_TEMPLATE``).
QUESTION_TEMPLATE = "{instruction}\nQuestion Date: {question_date}\nQuestion: {question}\n"
#: The header line of each session in a history.
SESSION_HEADER = "=== Session {i} (Date: {date}) ==="

# --------------------------------------------------------------------------------------------------
# Lengths and the construction calendar
# --------------------------------------------------------------------------------------------------
#: named context lengths (tokens)
LENGTH_TOKENS: dict[str, int] = {
    "8k": 8192,
    "16k": 16384,
    "32k": 32768,
    "64k": 65536,
    "128k": 131072,
    "256k": 262144,
    "512k": 524288,
    "1m": 1048576,
}
#: haystack and evidence sessions are dated at most this many days before the question
HISTORY_SPAN_DAYS = 240

# --------------------------------------------------------------------------------------------------
# Number words (one home: the question writers, the time-word adversary and the judge read them)
# --------------------------------------------------------------------------------------------------
#: English number words 0..20, index = value ("three receipts")
NUMBER_WORDS: tuple[str, ...] = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
)
#: the ordinal words of a month's days, index = day - 1 ("the twenty-first of May")
ORDINAL_WORDS: tuple[str, ...] = (
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
    "twenty-first",
    "twenty-second",
    "twenty-third",
    "twenty-fourth",
    "twenty-fifth",
    "twenty-sixth",
    "twenty-seventh",
    "twenty-eighth",
    "twenty-ninth",
    "thirtieth",
    "thirty-first",
)
