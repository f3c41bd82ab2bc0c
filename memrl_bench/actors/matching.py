"""Mapping a model's action onto an env's admissible commands, without inventing intent.

In order: the action as written; the same after normalisation (case, the articles a / an /
the, spacing, surrounding quotes, trailing punctuation); then a fuzzy match, only when it
cannot change what the action means: the admissible command closest to the action
(difflib ratio of the normalised texts) must be at least `cutoff`, ahead of every other
command by at least `margin`, and share the action's verb and object names, with the
same numbers wherever the action gives one. So "go to the desk 1." runs as "go to desk
1" and "take mug from countertop 1" as "take mug 1 from countertop 1" when only mug 1 is
there, but "go to desk 1" never runs as "go to bed 1" (ratio 0.78: another receptacle)
nor "take mug from countertop 1" as either mug when two are there. An action that
matches nothing is sent as written: the env answers that nothing happens, as it would
to a person.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

ARTICLES = frozenset({"a", "an", "the"})
# Words that join a command's objects ("take X from Y", "heat X with Y", "put X in/on Y").
PREPOSITIONS = frozenset({"to", "from", "in", "on", "in/on", "into", "onto", "with", "at", "of"})
_TRAILING = ".,;:!?"
_QUOTES = "\"'`"
_GLUED_NUMBER = re.compile(r"\b([a-z]+)(\d+)\b")


@dataclass(frozen=True)
class Match:
    command: str | None  # the admissible command to execute; None: no match (the action is sent as written)
    kind: Literal["exact", "normalised", "fuzzy", "none"]
    score: float  # difflib ratio of the normalised action and the command (1.0 for exact and normalised)
    runner_up: float | None = None  # the next command's ratio (fuzzy matching only)


def normalise(text: str) -> str:
    """Lower case, no surrounding quotes or trailing punctuation, no articles, single spaces,
    a number apart from its name ("desk1" -> "desk 1")."""
    words = _GLUED_NUMBER.sub(r"\1 \2", text.strip().strip(_QUOTES).rstrip(_TRAILING).strip().lower()).split()
    return " ".join(w for w in words if w not in ARTICLES)


Objects = tuple[tuple[str, str | None], ...]  # (name, number) per object of a command


def structure(normalised: str) -> tuple[str, Objects]:
    """(verb, objects) of a normalised command: "take mug 1 from countertop 1" ->
    ("take", (("mug", "1"), ("countertop", "1"))); an object's number is None when not given."""
    words = normalised.split()
    if not words:
        return "", ()
    objects: list[tuple[str, str | None]] = []
    current: list[str] = []
    for word in [*words[1:], "to"]:  # a final preposition closes the last object
        if word in PREPOSITIONS:
            if current:
                number = current.pop() if len(current) > 1 and current[-1].isdigit() else None
                objects.append((" ".join(current), number))
            current = []
        else:
            current.append(word)
    return words[0], tuple(objects)


def same_intent(action: str, command: str) -> bool:
    """Whether `command` is `action` with at most its numbers filled in: the same verb, the
    same object names in order, and equal numbers where the action gives them."""
    verb, objects = structure(action)
    command_verb, command_objects = structure(command)
    return (
        verb == command_verb
        and len(objects) == len(command_objects)
        and all(
            name == other_name and number in (None, other_number)
            for (name, number), (other_name, other_number) in zip(objects, command_objects)
        )
    )


def match_action(action: str, commands: list[str], cutoff: float, margin: float) -> Match:
    """The admissible command `action` means, or Match(None, "none", ...) if none surely is."""
    if action in commands:
        return Match(action, "exact", 1.0)
    by_normalised: dict[str, str] = {}
    for command in commands:
        by_normalised.setdefault(normalise(command), command)
    wanted = normalise(action)
    if wanted in by_normalised:
        return Match(by_normalised[wanted], "normalised", 1.0)
    if not wanted or not by_normalised:
        return Match(None, "none", 0.0)
    matcher = difflib.SequenceMatcher(b=wanted, autojunk=False)
    scores = []
    for normalised in by_normalised:
        matcher.set_seq1(normalised)
        scores.append((matcher.ratio(), normalised))
    scores.sort(key=lambda pair: -pair[0])
    best, closest = scores[0]
    runner_up = scores[1][0] if len(scores) > 1 else 0.0
    if best >= cutoff and best - runner_up >= margin and same_intent(wanted, closest):
        return Match(by_normalised[closest], "fuzzy", best, runner_up)
    return Match(None, "none", best, runner_up)
