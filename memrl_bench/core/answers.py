"""How an answer is read from a single-turn completion: one policy per answer format, here only.

Each policy reads what a careful person reads, and nothing the model did not say. Letters
are matched case-sensitively (the article "a" is not choice A).

letter (multiple choice; `choices` are the options' texts in letter order):
  1. The final stated answer wins. A statement is a cue ("Answer:", "the answer is", "the
     correct option is", "I choose", ...) followed by a choice letter ("C", "(C)", "**C.**",
     "option C"), by a line of the form "C. text" right after it, or by the start of exactly
     one option's text ("the correct answer is direct marketing"). The last cue that is
     followed by an answer decides.
  2. Else the one choice line: lines of the form "C. text" / "(C) text" / "**C)** text" that
     all name one letter (a restated question followed by its answer line). Lines naming two
     or more letters walk through the options: no answer.
  3. Else the one option stated by its text: exactly one option's whole text (case, spaces,
     punctuation and plural "s" ignored, at least 4 letters, not a part of the question) occurs in the
     completion ("... is referred to as adoption." when an option is "Adoption").
  4. Else a completion that is nothing but a letter ("C", "(C).", "**C**").
  5. Else no answer.
  A completion cut at the token limit (finish_reason "length") is read by rule 1 alone: only
  an answer stated before the cut counts; a walk through the options cut after its first
  option states none. An unanswered cut completion is `Reading.cut`, its own episode status.
code: the first fenced code block, else the whole text. A cut completion counts only if
  its code block was closed before the cut.
text: the whole text, stripped. A cut completion has no answer (its end is missing).

Constrained answers (`actor.answer_constraint=json_schema`, letters only): after the free
completion, the model is asked for its final letter once more, in a reply held to the JSON
schema `letter_schema` by the server (OpenAI structured outputs; llama.cpp and vLLM turn the
schema into a grammar), so that no reading decides the answer; `read_constrained` takes it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

FORMATS = ("letter", "code", "text")
MIN_OPTION_TEXT_LETTERS = 4  # shorter option texts ("Yes", "1") occur in prose by chance

# Words after which an "A" is still the letter: "The answer is A because ...", not "the answer is A brand".
_AFTER_LETTER_A = r"(?:because|since|as|and|or|which|for|is|was|with|here|there|in|on|from|to|by|so|but|\u2014|-)"
_STATEMENT_CUE = re.compile(
    r"(?:\b(?:final|correct|right|best|most\s+(?:appropriate|accurate|likely|suitable))\s+)?"
    r"\banswer(?:\s+(?:is|would\s+be|should\s+be|will\s+be|must\s+be|choice\s+is|option\s+is))?\s*(?:[:\uff1a=]|\bis\b)?"
    r"|\b(?:correct|right|best|most\s+(?:appropriate|accurate|likely|suitable))\s+(?:option|choice|response|statement|one)(?:\s+(?:is|would\s+be|should\s+be|here\s+is))?\s*:?"
    r"|\b(?:I|I'd|I\s+would|we|we\s+would)\s+(?:choose|pick|select|go\s+with)\b",
    re.IGNORECASE,
)
_MARKUP = r"[ \t]*(?:\*\*|__|\*|_)?[ \t]*"


@dataclass(frozen=True)
class Reading:
    """What a completion answers, and how it was read."""

    answer: str | None  # the answer the env checks, or None: no answer
    rule: str  # which rule of the format's policy gave it ("statement", "choice_line", ...), or why none
    cut: bool = False  # cut at the token limit before stating an answer: the episode's status is "truncated"


def read_answer(
    completion: str,
    answer_format: str,
    *,
    finished: bool = True,
    letters: str = "ABCD",
    choices: list[str] | None = None,
    question: str = "",
) -> Reading:
    """The answer of `completion` under `answer_format`'s policy (module doc). `finished` is false
    for a completion cut at the token limit; `choices` and `question` serve the letter policy."""
    if answer_format == "letter":
        return _read_letter(completion, finished, letters, choices or [], question)
    if answer_format == "code":
        block = _FENCED_CODE.search(completion)
        if not finished and (block is None or not block.group(2)):
            return Reading(None, "cut before the code block was closed", cut=True)
        return Reading((block.group(1) if block else completion).strip("\n"), "fenced block" if block else "whole text")
    if answer_format == "text":
        if not finished:
            return Reading(None, "cut at the token limit", cut=True)
        return Reading(completion.strip(), "whole text")
    raise ValueError(f"unknown answer_format {answer_format!r} in the env's reset info; valid: {', '.join(FORMATS)}")


_FENCED_CODE = re.compile(r"```[^\n`]*\n(.*?)(```|\Z)", re.DOTALL)


def _normal(text: str) -> str:
    """Lower case, words only, a plural's "s" dropped: how option texts are compared ("a
    Category-killer store" states the option "Category-killer stores.")."""
    return " ".join(word[:-1] if len(word) > 3 and word.endswith("s") else word for word in re.findall(r"[a-z0-9]+", text.lower()))


def _letter_at(text: str, letters: str) -> str | None:
    """The choice letter `text` starts with, after markup, brackets and "option" / "choice" / "letter"."""
    found = re.match(
        rf"{_MARKUP}(?:\(|\[)?{_MARKUP}(?:(?:option|choice|letter)[ "
        rf"\t]*)?(?:\(|\[)?{_MARKUP}([{re.escape(letters)}])(?![A-Za-z0-9'])(.{{0,16}})",
        text,
        re.IGNORECASE | re.DOTALL,
    )
    if found is None or found.group(1) not in letters:  # the cue words may be any case, the letter may not
        return None
    if found.group(1) == "A" and re.match(rf"[ \t]+(?!{_AFTER_LETTER_A}\b)[a-z]", found.group(2)):
        return None  # "the answer is a brand" / "A brand ...": the article
    return found.group(1)


def _option_at(text: str, choices: list[str], letters: str) -> str | None:
    """The letter of the one option whose text `text` starts with (after markup), if exactly one."""
    start = _normal(text[:400])
    starts = [letters[i] for i, choice in enumerate(choices) if _normal(choice) and (start + " ").startswith(_normal(choice) + " ")]
    longest = max(starts, key=lambda letter: len(_normal(choices[letters.index(letter)])), default=None)
    return longest


def _statement(completion: str, letters: str, choices: list[str]) -> str | None:
    """Rule 1: the answer of the last cue that is followed by one."""
    for cue in reversed(list(_STATEMENT_CUE.finditer(completion))):
        rest = completion[cue.end() :]
        same_line = rest.split("\n", 1)[0]
        letter = _letter_at(rest, letters) if same_line.strip() else None
        if letter is None and not same_line.strip("*_ \t:"):  # "The correct answer is:\nB. text"
            next_line = rest.lstrip("*_ \t:").lstrip("\n").split("\n", 1)[0]
            letter = _letter_at(next_line, letters) or (_option_at(next_line, choices, letters) if choices else None)
        if letter is None and choices:
            letter = _option_at(rest.lstrip("*_ \t:\n"), choices, letters)
        if letter is not None:
            return letter
    return None


def _choice_lines(completion: str, letters: str) -> set[str]:
    line = re.compile(rf"^[ \t]*(?:[-*>][ \t]+)?{_MARKUP}\(?([{re.escape(letters)}])[.):]{_MARKUP}[ \t]+\S", re.MULTILINE)
    return {m.group(1) for m in line.finditer(completion)}


def _option_texts(completion: str, choices: list[str], letters: str, question: str) -> set[str]:
    """Rule 3: the letters of options whose whole text occurs in the completion (longest match wins an overlap)."""
    said, asked = f" {_normal(completion)} ", f" {_normal(question)} "
    spans: list[tuple[int, int, str]] = []
    for index, choice in enumerate(choices):
        text = _normal(choice)
        if sum(c.isalpha() for c in text) < MIN_OPTION_TEXT_LETTERS or f" {text} " in asked:
            continue
        spans += [(m.start(), m.end(), letters[index]) for m in re.finditer(re.escape(f" {text} "), said)]
    kept = {letter for start, end, letter in spans if not any(s <= start and end <= e and (e - s) > (end - start) for s, e, _ in spans)}
    return kept


def _read_letter(completion: str, finished: bool, letters: str, choices: list[str], question: str) -> Reading:
    stated = _statement(completion, letters, choices)
    if stated is not None:
        return Reading(stated, "statement")
    if not finished:
        return Reading(None, "cut before an answer was stated", cut=True)
    lines = _choice_lines(completion, letters)
    if len(lines) == 1:
        return Reading(lines.pop(), "choice_line")
    if len(lines) > 1:
        return Reading(None, "walks through several options without stating one")
    options = _option_texts(completion, choices, letters, question)
    if len(options) == 1:
        return Reading(options.pop(), "option_text")
    bare = re.fullmatch(rf"{_MARKUP}[(\[]?{_MARKUP}([{re.escape(letters)}]){_MARKUP}[)\].:]?{_MARKUP}[.]?", completion.strip())
    if bare is not None:
        return Reading(bare.group(1), "bare_letter")
    return Reading(None, "several options named by their text" if options else "no answer stated")


def letter_schema(letters: str) -> dict[str, Any]:
    """The `response_format` of a constrained answer: {"answer": one of the letters}."""
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": list(letters)}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": schema}}


def read_constrained(completion: str, letters: str) -> Reading:
    """The letter of a reply held to `letter_schema`; no answer if the server did not hold it."""
    try:
        answer = json.loads(completion)["answer"]
    except (ValueError, TypeError, KeyError):
        return Reading(None, "constrained reply is not the schema's JSON")
    return (
        Reading(answer, "constrained")
        if isinstance(answer, str) and answer in letters
        else Reading(None, "constrained reply is no choice letter")
    )
