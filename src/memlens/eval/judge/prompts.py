"""Prompts of the MemLens LLM judge (written for this project; paper section 3, "LLM-as-Judge scoring").

Structure (paper policy, official layout of facts §4.5, wording our own):

* :data:`BASE_RULES` - the grader's role, the final-answer extraction rules (grade only the
  committed final answer; hedge + answer -> grade the answer; refusal + guess -> grade the guess;
  inconsistent answers, circular reasoning and answer-less traces -> 0; a tail excerpt that starts
  with the truncation marker is still graded), the matching conventions and the binary rubric.
* :data:`UNIVERSAL_EXAMPLES` - three worked examples that hold for every task: circular reasoning
  (0), redundant but committed (graded normally), a trace with no final answer (0).
* :data:`OUTPUT_FORMAT` - rationale ending in "deserves N points", a ``[Score]:`` line and a
  ``[JSON]:`` line with ``{"answer_score": N}``.
* :data:`TASKS` - per task key (the ten official routing keys) a title, criteria and two worked
  examples (one scored 1, one scored 0).

:func:`build_messages` assembles them: the system message holds the rules, the universal examples,
the task section and the output format (ten distinct system prompts, so a vLLM server can reuse
their prefix cache); the user message holds only the current case. ``layout="single"`` puts
everything into one user message, as the official judge does.

Bump :data:`PROMPT_VERSION` whenever any text here changes: it is part of the judge cache key.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from memlens.eval.judge.deterministic import (
    AR_REFUSAL,
    IE_ENTITY,
    IE_PREVIOUS,
    KU_UPDATE,
    MSR_ARITHMETIC,
    MSR_COUNTING,
    MSR_YESNO,
    TASK_KEYS,
    TR_DATE,
    TR_DURATION,
    TR_ORDER,
)
from memlens.eval.judge.parsing import TRUNCATION_MARKER

__all__ = ["PROMPT_VERSION", "TaskPrompt", "TASKS", "system_prompt", "case_prompt", "build_messages"]

PROMPT_VERSION = "memlens-judge-v1"

BASE_RULES = f"""\
You grade answers to questions about a user's earlier conversations with an assistant. For each \
case you get the question, the standard (reference) answer and a student's response. Decide \
whether the student's final answer is correct.

Finding the student's final answer
1. First identify the answer the student finally commits to, then grade that answer only. \
Intermediate reasoning is context; it is not what you grade.
2. If the student hedges but then clearly states an answer, grade the stated answer.
3. If the student both declines (for example "there is not enough information") and offers a \
guess, treat the guess the student ends on as the committed answer and grade it.
4. If the student gives several answers that contradict each other and never settles on one, \
give 0 points.
5. Circular reasoning earns 0 points: a response that keeps going back over the same evidence or \
keeps switching between candidate answers without ending on one. A correct value that only \
appears somewhere in the middle of such reasoning does not count.
6. When the student changes their mind, only the last clearly stated position counts.
7. A response that is only a reasoning trace, with no concluding answer, earns 0 points, even if \
the correct value appears inside the trace.
8. A response that starts with "{TRUNCATION_MARKER}" is the end of a longer output whose \
beginning was cut off. Look for the final answer in the part that remains.

Matching
- Count semantically equivalent forms as a match: different number formats (10% and 0.1, 3 and \
three), synonyms, singular and plural, and different but unambiguous date formats. Ignore case, \
punctuation and minor formatting.
- Answers that are only loosely related to the standard answer, or only partly overlap with it, \
do not match.

Rubric (binary)
- 1 point: the final answer matches the standard answer under the task criteria below.
- 0 points: it does not match; or the student declines or says the information is insufficient \
(unless the task criteria say that declining is the expected answer); or there is no clear final \
answer."""

UNIVERSAL_EXAMPLES = """\
Worked examples that apply to every task

Example A (circular reasoning: 0 points)
<Question>: Is the dog in my latest photo the same dog I showed you at the beach?
<Standard Answer>: Yes
<Student Answer>: The beach photo shows a brown beagle, so probably yes. But the new photo has a \
lighter coat, so maybe not. Going back to the beach photo, the ears look identical, which points \
to yes, although the coat colour still differs... it is hard to say, it could be no.
[Scoring Rationale]: The student swings between yes and no and never commits to either. This is \
circular reasoning without a final answer. The answer deserves 0 points.
[Score]: 0 points
[JSON]: {"answer_score": 0}

Example B (redundant but committed: graded normally)
<Question>: Were the concert ticket and the museum pass I shared for different venues?
<Standard Answer>: No
<Student Answer>: Let me check both. The ticket from the first session names Harbor Hall. The \
pass from the later session also names Harbor Hall. I double-checked the street address printed \
on both and it matches too. So no, they are for the same venue.
[Scoring Rationale]: The response is longer than needed but it reaches one answer, "no", and \
states it clearly. That matches the standard answer. The answer deserves 1 point.
[Score]: 1 point
[JSON]: {"answer_score": 1}

Example C (a trace with no final answer: 0 points)
<Question>: How many different grocery receipts did I send you?
<Standard Answer>: 4
<Student Answer>: Session 2: a receipt from FreshMart. Session 5: a receipt from Green Grocer. \
Session 7: the user mentions a receipt again, which might be the FreshMart one. Session 11: a \
photo of a receipt from
[Scoring Rationale]: The student walks through sessions but never states a count. Even though \
the trace touches several receipts, there is no final answer to grade. The answer deserves 0 \
points.
[Score]: 0 points
[JSON]: {"answer_score": 0}"""

OUTPUT_FORMAT = """\
Your output
Write a short rationale (at most about 150 words) that names the student's final answer and \
compares it with the standard answer. End the rationale with the sentence "The answer deserves N \
points." where N is 0 or 1. Then write the line "[Score]: N points" and, last, the line \
"[JSON]: {"answer_score": N}"."""


@dataclass(frozen=True)
class TaskPrompt:
    """Task-specific section: title, criteria, and worked examples as (question, standard answer,
    old answer or None, student answer, rationale, score) tuples."""

    title: str
    criteria: str
    examples: tuple[tuple[str, str, str | None, str, str, int], ...]


TASKS: dict[str, TaskPrompt] = {
    IE_ENTITY: TaskPrompt(
        "information extraction about an entity shown in an image",
        """\
The question asks for a fact about a real-world entity that the user showed in an image earlier \
in the conversation.
- 1 point: the final answer states the core information of the standard answer. Wording may \
differ, and extra correct detail is fine.
- 0 points: the core information is missing, contradicted, too vague to pin down, declined, or \
wrong.
- Numbers and counts must be exactly right unless the standard answer is itself approximate.""",
        (
            (
                "In which year was the bridge in the photo I sent you finished?",
                "1937",
                None,
                "It was completed in 1937.",
                "The student gives 1937, the same year as the standard answer.",
                1,
            ),
            (
                "In which year was the bridge in the photo I sent you finished?",
                "1937",
                None,
                "Sometime in the 1930s, I believe.",
                "A decade is too vague; the question asks for the year 1937.",
                0,
            ),
        ),
    ),
    IE_PREVIOUS: TaskPrompt(
        "recalling a detail from an earlier image",
        """\
The question asks the student to recall something shown in an earlier image: an object, an \
attribute, a count, a position or a relation between objects.
- 1 point: the final answer identifies the same item with the correct attribute, relation, \
location or count.
- 0 points: a different item, a wrong attribute or relation, a vague or unsupported answer, or a \
refusal.""",
        (
            (
                "What colour was the mug to the left of the laptop in my desk photo?",
                "Red",
                None,
                "The mug next to the laptop, on its left, was red.",
                "Same item, same colour.",
                1,
            ),
            (
                "What colour was the mug to the left of the laptop in my desk photo?",
                "Red",
                None,
                "It was the blue mug on the right side of the desk.",
                "The student describes a different mug with a different colour.",
                0,
            ),
        ),
    ),
    KU_UPDATE: TaskPrompt(
        "knowledge update",
        """\
The user's information changed over the conversation. The standard answer is the current (most \
recent) value; the outdated answer, when shown, is an earlier value that is no longer true.
- 1 point: only when the final answer is the current value.
- 0 points: the outdated value, any other value, both values without committing to the current \
one, a refusal, or an unclear answer.""",
        (
            (
                "Which fruit am I growing in my balcony planter now?",
                "Strawberries",
                "Tomatoes",
                "You replaced the tomatoes with strawberries, so it is strawberries now.",
                "The student commits to the current value, strawberries.",
                1,
            ),
            (
                "Which fruit am I growing in my balcony planter now?",
                "Strawberries",
                "Tomatoes",
                "Tomatoes, from the photo you shared of the planter.",
                "Tomatoes is the outdated value, not the current one.",
                0,
            ),
        ),
    ),
    TR_DURATION: TaskPrompt(
        "temporal reasoning: comparing two durations (options A and B)",
        """\
The question offers two options, A and B, and the standard answer is one of them.
- 1 point: the student clearly chooses the same option, by its letter or by restating it.
- 0 points: the other option, both options or neither, or a refusal.""",
        (
            (
                "Which lasted longer: (A) my trip to Lisbon or (B) my stay in Oslo?",
                "A",
                None,
                "Option A. The Lisbon trip ran for nine days, the Oslo stay for five.",
                "The student picks option A, the same as the standard answer.",
                1,
            ),
            (
                "Which lasted longer: (A) my trip to Lisbon or (B) my stay in Oslo?",
                "A",
                None,
                "The Oslo stay was longer, so B.",
                "The student picks B; the standard answer is A.",
                0,
            ),
        ),
    ),
    TR_ORDER: TaskPrompt(
        "temporal reasoning: ordering events",
        """\
The standard answer is a sequence of item numbers in a required order, for example (3)(1)(2).
- 1 point: exactly the same items in exactly the same order; separators and spacing do not \
matter.
- 0 points: any item missing, added, repeated or out of place, or an unclear order.""",
        (
            (
                "Put these events in the order they happened.",
                "(2)(4)(1)(3)",
                None,
                "(2), (4), (1), (3)",
                "Same four items in the same order.",
                1,
            ),
            (
                "Put these events in the order they happened.",
                "(2)(4)(1)(3)",
                None,
                "(2)(1)(4)(3)",
                "Items (1) and (4) are swapped.",
                0,
            ),
        ),
    ),
    TR_DATE: TaskPrompt(
        "temporal reasoning: finding a date",
        """\
The standard answer is a calendar date.
- 1 point: the same date in any unambiguous format (2024/03/05, March 5, 2024, 5 March 2024).
- 0 points: a different date; a date missing its year, month or day; an ambiguous or approximate \
date; or no date.""",
        (
            (
                "On which date did I pick up the framed print from the photo?",
                "2024/03/05",
                None,
                "You picked it up on March 5, 2024.",
                "March 5, 2024 is the same date as 2024/03/05.",
                1,
            ),
            (
                "On which date did I pick up the framed print from the photo?",
                "2024/03/05",
                None,
                "In early March 2024.",
                "An approximate period, not the date.",
                0,
            ),
        ),
    ),
    MSR_YESNO: TaskPrompt(
        "multi-session reasoning: a yes/no identity question",
        """\
The question asks whether things mentioned or shown in different sessions are the same; the \
standard answer is Yes or No.
- 1 point: the final answer means the same yes or no as the standard answer.
- 0 points: the opposite answer, a refusal, or an unclear answer.""",
        (
            (
                "Is the cafe in my first photo the same one I visited last week?",
                "Yes",
                None,
                "Yes, both photos show the same cafe.",
                "The student answers yes, matching the standard answer.",
                1,
            ),
            (
                "Is the cafe in my first photo the same one I visited last week?",
                "Yes",
                None,
                "They look alike, but I cannot tell whether they are the same place.",
                "No committed yes; the student declines to decide.",
                0,
            ),
        ),
    ),
    MSR_COUNTING: TaskPrompt(
        "multi-session reasoning: counting across sessions",
        """\
The standard answer is a count gathered over several sessions.
- 1 point: exactly the same number in any form ("4", "four", "4.0").
- 0 points: a different number, a range, an approximation ("about 4"), a refusal, or an unclear \
answer.""",
        (
            (
                "How many different parks did I show you photos of?",
                "4",
                None,
                "Four distinct parks.",
                "Four equals the standard answer 4.",
                1,
            ),
            (
                "How many different parks did I show you photos of?",
                "4",
                None,
                "Probably 3 or 4.",
                "A range is not the exact count.",
                0,
            ),
        ),
    ),
    MSR_ARITHMETIC: TaskPrompt(
        "multi-session reasoning: a value computed across sessions",
        """\
The standard answer is a value computed from facts in several sessions (a total, a difference, an \
average ...), often an amount of money.
- 1 point: the same value in an equivalent form ("$260.00", "260 dollars", "260"; equal \
fractions, decimals and percentages).
- 0 points: a different value, an approximation the standard answer does not support, an amount \
in a different currency, a refusal, or an unclear answer.""",
        (
            (
                "How much did I spend in total on the three receipts I shared?",
                "$260.00",
                None,
                "Adding them up: 120 + 95 + 45 = $260.",
                "$260 equals $260.00.",
                1,
            ),
            (
                "How much did I spend in total on the three receipts I shared?",
                "$260.00",
                None,
                "Roughly $250 altogether.",
                "An approximate, different amount.",
                0,
            ),
        ),
    ),
    AR_REFUSAL: TaskPrompt(
        "answer refusal (the question cannot be answered from the conversation)",
        """\
The conversation does not contain the information the question asks for, so the expected \
behaviour is to decline. The standard answer "Insufficient information" stands for any explicit \
refusal.
- 1 point: the student explicitly declines, says the information is insufficient or was never \
mentioned, or says the question cannot be answered from the conversation.
- 0 points: any substantive answer, even a hedged or qualified one, including a guess given after \
a refusal.""",
        (
            (
                "Which brand was the bike in the photo I sent?",
                "Insufficient information",
                None,
                "The conversation never shows or names the bike's brand, so I cannot tell.",
                "The student clearly declines, which is the expected behaviour.",
                1,
            ),
            (
                "Which brand was the bike in the photo I sent?",
                "Insufficient information",
                None,
                "I am not certain, but it was probably a Trek.",
                "The student commits to a guess instead of declining.",
                0,
            ),
        ),
    ),
}
assert set(TASKS) == set(TASK_KEYS)


def _case(question: str, standard: str, old: str | None, student: str) -> str:
    lines = [f"<Question>: {question}", f"<Standard Answer>: {standard}"]
    if old:
        lines.append(f"<Old (Outdated) Answer>: {old}")
    lines.append(f"<Student Answer>: {student}")
    return "\n".join(lines)


def _task_section(key: str) -> str:
    t = TASKS[key]
    parts = [f"Task-specific criteria ({t.title})", t.criteria, "", "Task examples"]
    for q, std, old, student, why, score in t.examples:
        pts = "point" if score == 1 else "points"
        parts += [
            "",
            _case(q, std, old, student),
            f"[Scoring Rationale]: {why} The answer deserves {score} {pts}.",
            f"[Score]: {score} {pts}",
            f'[JSON]: {{"answer_score": {score}}}',
        ]
    return "\n".join(parts)


def system_prompt(task_key: str) -> str:
    """Rules + universal examples + the task section + output format, for one task key."""
    if task_key not in TASKS:
        raise KeyError(f"unknown judge task key {task_key!r} (known: {', '.join(TASK_KEYS)})")
    return _system_prompt(task_key)


@cache
def _system_prompt(task_key: str) -> str:
    return "\n\n".join([BASE_RULES, UNIVERSAL_EXAMPLES, _task_section(task_key), OUTPUT_FORMAT])


def case_prompt(question: str, standard_answer: str, student_answer: str, old_answer: str | None = None) -> str:
    """The current case: labelled lines ending with the rationale cue."""
    return (
        "Grade the current case.\n\n"
        + _case(question, standard_answer, old_answer, student_answer)
        + "\n\n[Scoring Rationale]:"
    )


def build_messages(
    task_key: str,
    question: str,
    standard_answer: str,
    student_answer: str,
    old_answer: str | None = None,
    *,
    layout: str = "system",
) -> list[dict]:
    """Chat messages for one judge call (``layout`` ``"system"`` or ``"single"``)."""
    sys_text = system_prompt(task_key)
    case = case_prompt(question, standard_answer, student_answer, old_answer)
    if layout == "system":
        return [{"role": "system", "content": sys_text}, {"role": "user", "content": case}]
    if layout == "single":
        return [{"role": "user", "content": sys_text + "\n\n" + case}]
    raise ValueError(f"judge prompt layout must be 'system' or 'single', not {layout!r}")
