"""The official judge task keys and the routing of a question to one of them (official judge §4.3).

The benchmark object tells the judge and the reports which task a question belongs to; the judges
score by task key.
"""

from __future__ import annotations

IE_ENTITY = "IE_Entity"
IE_PREVIOUS = "IE_PreviousInfo"
MSR_ARITHMETIC = "MSR_Arithmetic"
MSR_COUNTING = "MSR_Counting"
MSR_YESNO = "MSR_YesNo"
TR_DURATION = "TR_DurationComparison"
TR_ORDER = "TR_OrderRanking"
TR_DATE = "TR_DateExtraction"
KU_UPDATE = "KU_KnowledgeUpdate"
AR_REFUSAL = "AR_AnswerRefusal"
TASK_KEYS = (
    IE_ENTITY,
    IE_PREVIOUS,
    MSR_ARITHMETIC,
    MSR_COUNTING,
    MSR_YESNO,
    TR_DURATION,
    TR_ORDER,
    TR_DATE,
    KU_UPDATE,
    AR_REFUSAL,
)

#: the task key of every official (question type, subtype): the one home of the routing of a subtype
#: (``entity_resolution`` is MSR_YesNo when the reference is exactly Yes/No, see :func:`task_key`).
#: A subtype a question type can produce must have its entry here (``tests/abilities/test_subtypes.py``):
#: :func:`task_key` sends subtypes it does not list where the official judge does.
ROUTES: dict[tuple[str, str], str] = {
    ("information_extraction", "entity"): IE_ENTITY,
    ("information_extraction", "previnfo"): IE_PREVIOUS,
    ("multi_session_reasoning", "arithmetic"): MSR_ARITHMETIC,
    ("multi_session_reasoning", "counting"): MSR_COUNTING,
    ("multi_session_reasoning", "entity_resolution"): MSR_COUNTING,
    ("temporal_reasoning", "duration_comparison"): TR_DURATION,
    ("temporal_reasoning", "order_ranking"): TR_ORDER,
    ("temporal_reasoning", "temporal_info_extraction"): TR_DATE,
    ("knowledge_update", ""): KU_UPDATE,
    ("answer_refusal", ""): AR_REFUSAL,
}


def task_key(question_type: str, question_subtype: str | None, reference: str, *, strict: bool = True) -> str:
    """Official routing of a question to one of the ten judge task keys.

    ``multi_session_reasoning``: arithmetic -> MSR_Arithmetic; counting -> MSR_Counting;
    entity_resolution -> MSR_YesNo when the stripped reference is exactly ``Yes``/``No``
    (case-sensitive), else MSR_Counting; any other or empty subtype -> MSR_Counting.
    ``temporal_reasoning``: duration_comparison / order_ranking -> their keys, anything else
    -> TR_DateExtraction. ``knowledge_update`` -> KU; ``answer_refusal`` -> AR;
    ``information_extraction``: previnfo -> IE_PreviousInfo, else IE_Entity.

    Types and subtypes are compared after ``strip().lower()``. The official judge sends unknown
    types to IE_Entity; with ``strict=True`` (the default) an unknown type raises ``ValueError``
    instead, ``strict=False`` reproduces the official fallback.
    """
    qt = (question_type or "").strip().lower()
    st = (question_subtype or "").strip().lower()
    if (qt, st) == ("multi_session_reasoning", "entity_resolution"):
        return MSR_YESNO if (reference or "").strip() in ("Yes", "No") else MSR_COUNTING
    if (qt, st) in ROUTES:
        return ROUTES[(qt, st)]
    if qt == "multi_session_reasoning":
        return MSR_COUNTING
    if qt == "temporal_reasoning":
        return TR_DATE
    if qt == "knowledge_update":
        return KU_UPDATE
    if qt == "answer_refusal":
        return AR_REFUSAL
    if qt == "information_extraction" or not strict:
        return IE_PREVIOUS if st == "previnfo" else IE_ENTITY
    raise ValueError(
        f"unknown question_type {question_type!r}; expected one of information_extraction, "
        "knowledge_update, temporal_reasoning, multi_session_reasoning, answer_refusal"
    )
