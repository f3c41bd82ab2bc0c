"""The summary table the game audits print (scripts/audit_twx.py, scripts/audit_alfworld.py)."""

from __future__ import annotations

from collections import Counter


def summary(counts: Counter, gold_tasks: int | None) -> str:
    """The counts as a Markdown table; a "gold won" column when the gold plans were played (`gold_tasks` of them)."""
    cut = sum(v for k, v in counts.items() if k.startswith("cut"))
    gold = gold_tasks is not None
    return "\n".join(
        [
            "| episodes | ended at the step limit (judged too) | cut | judged | agree | disagree |" + (" gold won |" if gold else ""),
            "|---:|---:|---:|---:|---:|---:|" + ("---:|" if gold else ""),
            f"| {counts['episodes']} | {counts['ended at the step limit']} | {cut} | {counts['judged']} | {counts['agree']} | {counts['disagree']} |"
            + (f" {counts['gold won']}/{gold_tasks} |" if gold else ""),
        ]
    )
