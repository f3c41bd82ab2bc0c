"""The drift study's claims (`+experiment=drift_study`: protocol=drift, the runs of kind "drift",
which the other claims leave out): stale memories are kept, MemRL adapts to drift faster than
rag / mem0, and prompt-based memory gives more gain per injected token than MemRL
(memrl_bench/protocols/drift.py defines the drift measures). Each claim is one function (memrl_bench.findings.claim).
"""

from __future__ import annotations

from memrl_bench.core.stats import t_interval
from memrl_bench.findings.claim import Row, claim, outcome_temperature, row
from memrl_bench.findings.runs import Run, Study, config_key, is_greedy_epsilon_zero, paired, per_order, summary

PROMPT_MEMORY = (
    "mem0",
    "expel",
    "memp",
    "simplemem",
)  # methods that write their memory as prompt text (the critique's "prompt-based memory")


@claim(
    id="drift_stale_kept",
    text="Stale memories are kept: after the environment changes, memories that became wrong keep being injected.",
    measurement=(
        "Stale (synthetic ground truth): written before the change about a task type whose lessons flipped, and helpful before it. Per "
        "method, the stale share of the memories injected in the last window of training episodes after the change, and over all of them; "
        "with the position (0 = the first episode after the change) of the last episode that injected one. Verdict for memrl ε=0 at "
        "outcome temperature 0: supported if its last-window share lies above 0."
    ),
    measured_by=("drift_methods",),
    study_kind="drift",
)
def drift_stale_kept(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        for runs in study.arms("drift", t).values():
            if runs[0].measures.get("drift_stale_share") is None:
                continue
            primary = t == 0 and is_greedy_epsilon_zero(runs[0].method)
            rows.append(
                row(
                    f"{runs[0].arm}, {outcome_temperature(t)}: stale share of injections, last window after the change",
                    summary(runs, "drift_stale_last_window"),
                    +1,
                    primary=primary,
                )
            )
            rows.append(
                row(
                    f"{runs[0].arm}, {outcome_temperature(t)}: stale share of injections, all training after the change",
                    summary(runs, "drift_stale_share"),
                )
            )
            rows.append(
                row(
                    f"{runs[0].arm}, {outcome_temperature(t)}: last training episode after the change that injected a stale memory",
                    summary(runs, "drift_last_stale_episode"),
                )
            )
    return rows


@claim(
    id="drift_adaptation",
    text="MemRL adapts to drift faster than rag / mem0.",
    measurement=(
        "Training SR over every episode after the change minus the SR of the training epoch before it (what the change cost, net of each "
        "method's level), with the SR after the change, its expected value, the SR dip and the tasks until the SR is back within "
        "protocol.drift.tolerance of the window before the change (memrl_bench/protocols/drift.py); memrl ε=0 minus rag and minus mem0 "
        "(where run), paired on the task order. Verdict on memrl ε=0 - rag of the SR change, outcome temperature 0."
    ),
    measured_by=("drift_methods",),
    study_kind="drift",
)
def drift_adaptation(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        arms = study.arms("drift", t)
        for runs in arms.values():
            rows.append(row(f"{runs[0].arm}, {outcome_temperature(t)}: SR after the change (training)", summary(runs, "drift_post_sr")))
            rows.append(
                row(
                    f"{runs[0].arm}, {outcome_temperature(t)}: SR after the change - SR of the epoch before it",
                    summary(runs, "drift_sr_change"),
                )
            )
            rows.append(
                row(
                    f"{runs[0].arm}, {outcome_temperature(t)}: expected SR after the change (mean P(success))",
                    summary(runs, "drift_post_expected_sr"),
                )
            )
            rows.append(
                row(f"{runs[0].arm}, {outcome_temperature(t)}: SR dip (window before - lowest window after)", summary(runs, "drift_dip"))
            )
            rows.append(
                row(f"{runs[0].arm}, {outcome_temperature(t)}: tasks until recovery (runs that recovered)", summary(runs, "drift_recovery"))
            )
            rows.append(
                row(f"{runs[0].arm}, {outcome_temperature(t)}: share of runs never recovered", summary(runs, "drift_never_recovered"))
            )
        greedy = next((runs for runs in arms.values() if is_greedy_epsilon_zero(runs[0].method)), None)
        for name in ("rag", "mem0"):
            other = next((runs for runs in arms.values() if runs[0].method.get("name") == name), None)
            if greedy and other:
                rows.append(
                    row(
                        f"memrl ε=0 - {name}, {outcome_temperature(t)}: SR after the change - SR of the epoch before it",
                        paired(greedy, other, "drift_sr_change"),
                        +1,
                        primary=t == 0 and name == "rag",
                    )
                )
                rows.append(
                    row(f"memrl ε=0 - {name}, {outcome_temperature(t)}: SR after the change", paired(greedy, other, "drift_post_sr"), +1)
                )
                rows.append(
                    row(
                        f"memrl ε=0 - {name}, {outcome_temperature(t)}: expected SR after the change",
                        paired(greedy, other, "drift_post_expected_sr"),
                        +1,
                    )
                )
                rows.append(
                    row(f"memrl ε=0 - {name}, {outcome_temperature(t)}: tasks until recovery", paired(greedy, other, "drift_recovery"), -1)
                )
    return rows


def _gain_per_1k_tokens(runs: list[Run], none: list[Run]) -> dict[int, float]:
    """Task order -> (test SR - none's test SR) per 1k injected tokens per test prompt, as the report's gain against cost divides them."""
    sr, base, tokens = per_order(runs, "test_sr"), per_order(none, "test_sr"), per_order(runs, "injected_tokens_test")
    return {o: (sr[o] - base[o]) / (tokens[o] / 1000) for o in sr if o in base and tokens.get(o)}


@claim(
    id="drift_gain_per_token",
    text="Prompt-based memory gives more gain per token than MemRL.",
    measurement=(
        "Per task order, the held-out test SR gain over none divided by the injected tokens per test prompt (UTF-8 bytes / 3, as the "
        "report's gain against cost), in thousands; each prompt-based method (mem0, expel, memp, simplemem) minus memrl ε=0, paired on the "
        "task order. On the synthetic world a memory's text is a stand-in (its effect is the simulation's), so tokens measure how much "
        "each method injects, not what a model reads. Verdict at outcome temperature 0."
    ),
    measured_by=("drift_methods", "drift_simplemem"),
    study_kind="drift",
)
def drift_gain_per_token(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        arms = study.arms("drift", t)
        none = next((runs for runs in arms.values() if runs[0].method.get("name") == "none"), None)
        greedy = next((runs for runs in arms.values() if is_greedy_epsilon_zero(runs[0].method)), None)
        if not none:
            continue
        ratios = {}
        for arm, runs in arms.items():
            if runs is none:
                continue
            ratios[arm] = _gain_per_1k_tokens(runs, none)
            rows.append(row(f"{runs[0].arm}, {outcome_temperature(t)}: test SR gain over none", paired(runs, none, "test_sr")))
            rows.append(
                row(f"{runs[0].arm}, {outcome_temperature(t)}: injected tokens per test prompt", summary(runs, "injected_tokens_test"))
            )
            rows.append(
                row(
                    f"{runs[0].arm}, {outcome_temperature(t)}: test SR gain over none per 1k injected tokens",
                    t_interval(ratios[arm].values()),
                )
            )
        prompt_based = [(arm, runs) for arm, runs in arms.items() if greedy and runs[0].method.get("name") in PROMPT_MEMORY]
        for i, (arm, runs) in enumerate(prompt_based):  # the first (by name) decides
            mine, memrl = ratios[arm], ratios[config_key(greedy[0].method)]
            rows.append(
                row(
                    f"{runs[0].arm} - memrl ε=0, {outcome_temperature(t)}: gain per 1k injected tokens",
                    t_interval(mine[o] - memrl[o] for o in mine if o in memrl),
                    +1,
                    primary=t == 0 and i == 0,
                )
            )
    return rows
