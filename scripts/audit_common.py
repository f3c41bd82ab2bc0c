"""What the audit scripts share: reading a run's episodes, counting them, the game audits' summary table."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any


def episodes_of(runs: list[Path]) -> list[tuple[str, dict[str, Any]]]:
    """(run folder name, episode record) of every logged episode of `runs`."""
    return [(run.name, json.loads(line)) for run in runs for line in (run / "episodes.jsonl").read_text().splitlines() if line.strip()]


def tally(counts: Counter, episode: dict[str, Any], judged_statuses: tuple[str, ...], executed: int) -> bool:
    """Count one episode of a game audit (`executed` of its turns ran); False when its status is not judged."""
    counts["episodes"] += 1
    if episode["status"] not in judged_statuses:
        counts[f"cut ({episode['status']})"] += 1
        return False
    counts["ended at the step limit"] += episode["status"] == "step_limit"
    counts["judged"] += 1
    counts["actions executed"] += executed
    counts["format failures (not executed)"] += len(episode["turns"]) - executed
    return True


def summary(counts: Counter, gold_tasks: int | None) -> str:
    """The counts as a Markdown table; a "gold won" column when the gold plans were played (`gold_tasks` of them)."""
    cut = sum(v for k, v in counts.items() if k.startswith("cut"))
    gold = gold_tasks is not None
    return "\n".join(
        [
            "| episodes | ended at the step limit (judged too) | cut | judged | agree | disagree |" + (" gold won |" if gold else ""),
            "|---:|---:|---:|---:|---:|---:|" + ("---:|" if gold else ""),
            f"| {counts['episodes']} | {counts['ended at the step limit']} | {cut} | {counts['judged']} | {counts['agree']} | "
            f"{counts['disagree']} |" + (f" {counts['gold won']}/{gold_tasks} |" if gold else ""),
        ]
    )
