"""A user's own claim, as a module outside the package would hold it: one decorated function.
Importing this module registers the claim (tests/contracts/test_own_claim.py imports it, then removes it)."""

from __future__ import annotations

from memrl_bench.findings import Row, Study, claim, is_greedy_epsilon_zero, paired, row


@claim(
    id="own_memrl_beats_none",
    text="(a user's claim) MemRL with ε = 0 solves more held-out tasks than no memory at outcome temperature 0.",
    measurement="Held-out test SR of memrl ε=0 minus none's, paired on the task order.",
    measured_by=("critique",),
    study_kind="critique",
)
def memrl_beats_none(study: Study) -> list[Row | None]:
    arms = study.arms("held_out", 0.0)
    greedy = next((runs for runs in arms.values() if is_greedy_epsilon_zero(runs[0].method)), [])
    none = next((runs for runs in arms.values() if runs[0].method.get("name") == "none"), [])
    return [row("memrl ε=0 - none: held-out test SR", paired(greedy, none, "test_sr"), +1, primary=True)]
