"""The critique's claims on fair evaluation: does memory help on held-out tasks, do evaluations
that learn from the tasks they score overstate it, and is a no-memory agent scored once a weak
baseline. Each claim is one function (memrl_bench.findings.claim).

Whether memory beats no memory is measured twice: paired on the task order and paired on the
test task (with the number of test tasks a ±0.10 interval needs at the spread measured).
"""

from __future__ import annotations

from memrl_bench.core.stats import n_for_half_width, t_interval
from memrl_bench.findings.claim import Row, claim, outcome_temperature, row, text_row
from memrl_bench.findings.runs import Study, is_greedy_epsilon_zero, paired, per_order, summary, task_differences


@claim(
    id="memory_helps",
    text="A memory method solves more held-out tasks than the same agent without memory.",
    measurement=(
        "Held-out test success of each memory method minus none's: paired on the task order (the replicate of every other claim), and "
        "paired on the test task (each task's success averaged over the task orders: the comparison on a new task of this distribution, "
        "with as many pairs as test tasks), with the number of test tasks a ±0.10 interval would need at the spread measured. Verdict for "
        "memrl ε=0, paired on the test task, at outcome temperature 0."
    ),
    measured_by=("critique",),
    study_kind="critique",
    real_measured_by=("critique_real_methods",),
)
def memory_helps(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        held = study.arms("held_out", t)
        none = next((runs for runs in held.values() if runs[0].method.get("name") == "none"), None)
        for runs in held.values() if none else ():
            if runs is none:
                continue
            name, differences = runs[0].arm, task_differences(runs, none)
            rows.append(
                row(
                    f"{name} - none, {outcome_temperature(t)}: held-out test SR, paired on the task order",
                    paired(runs, none, "test_sr"),
                    +1,
                )
            )
            rows.append(
                row(
                    f"{name} - none, {outcome_temperature(t)}: held-out test success, paired on the test task",
                    t_interval(differences),
                    +1,
                    primary=t == 0 and is_greedy_epsilon_zero(runs[0].method),
                )
            )
            needed = n_for_half_width(differences, 0.10)
            if needed is not None:
                rows.append(
                    text_row(
                        f"{name} - none, {outcome_temperature(t)}: test tasks a ±0.10 paired-by-task interval needs at this spread",
                        f"{needed} (here {len(differences)})",
                        float(needed),
                    )
                )
    return rows


@claim(
    id="runtime_learning",
    text="Evaluations that learn from the tasks they score (runtime learning) overstate what a memory method does on new tasks.",
    measurement=(
        "Per method, the last-epoch SR on the training tasks under protocol=runtime_learning against the test SR on held-out tasks of the "
        "same distribution under the fair protocol, paired on the task order; the gap of each memory method minus the no-memory gap (which "
        "is only the difference between the task sets). Verdict for memrl ε=0 at outcome temperature 0."
    ),
    measured_by=("critique", "critique_fairness"),
    study_kind="critique",
    real_measured_by=("critique_real_methods", "critique_real_runtime"),
)
def runtime_learning(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        held = study.arms("held_out", t)
        learned = study.arms("runtime_learning", t)
        gaps: dict[str, dict[int, float]] = {}
        for arm, runs in learned.items():
            if arm not in held:
                continue
            name = runs[0].arm
            rl, ho = per_order(runs, "final_sr"), per_order(held[arm], "test_sr")
            gaps[arm] = {o: rl[o] - ho[o] for o in rl if o in ho}
            rows.append(
                row(f"{name}, {outcome_temperature(t)}: runtime-learning SR (last epoch, the learned tasks)", t_interval(rl.values()))
            )
            rows.append(row(f"{name}, {outcome_temperature(t)}: runtime-learning CSR", summary(runs, "csr")))
            rows.append(row(f"{name}, {outcome_temperature(t)}: held-out test SR", t_interval(ho.values())))
            rows.append(
                row(f"{name}, {outcome_temperature(t)}: gap (runtime-learning SR - held-out test SR)", t_interval(gaps[arm].values()))
            )
        baseline = next((g for arm, g in gaps.items() if learned[arm][0].method.get("name") == "none"), None)
        for arm, gap in gaps.items():
            method = learned[arm][0].method
            if baseline is not None and method.get("name") != "none":
                diff = t_interval(gap[o] - baseline[o] for o in gap if o in baseline)
                rows.append(
                    row(
                        f"{learned[arm][0].arm} gap - none gap, {outcome_temperature(t)}",
                        diff,
                        +1,
                        primary=t == 0 and is_greedy_epsilon_zero(method),
                    )
                )
    return rows


@claim(
    id="weak_baselines",
    text=(
        "A no-memory agent scored once is a weak baseline: given as many attempts as MemRL has epochs, it matches MemRL's cumulative "
        "success rate."
    ),
    measurement=(
        "Under runtime learning, the no-memory agent's pass@E (its CSR over E epochs, E independent attempts when the outcome is sampled, "
        "T > 0) minus MemRL ε=0's CSR over the same E epochs, paired on the task order; with the held-out comparison against RAG and the "
        "test pass@k of each method. Verdict at the sampled outcome temperature (at T = 0 a no-memory agent repeats itself, so its pass@E "
        "is its pass@1)."
    ),
    measured_by=("critique_fairness", "critique_passk"),
    study_kind="critique",
    real_measured_by=("critique_real_runtime",),
)
def weak_baselines(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        learned = study.arms("runtime_learning", t)
        none = next((runs for runs in learned.values() if runs[0].method.get("name") == "none"), None)
        greedy = next((runs for runs in learned.values() if is_greedy_epsilon_zero(runs[0].method)), None)
        if none and greedy:
            epochs = none[0].protocol.get("epochs")
            rows.append(row(f"none, {outcome_temperature(t)}: SR per attempt (pass@1)", summary(none, "final_sr")))
            rows.append(
                row(f"none, {outcome_temperature(t)}: pass@{epochs} (CSR over {epochs} epochs without memory)", summary(none, "csr"))
            )
            rows.append(row(f"memrl ε=0, {outcome_temperature(t)}: CSR over {epochs} epochs", summary(greedy, "csr")))
            rows.append(
                row(
                    f"none pass@{epochs} - memrl ε=0 CSR, {outcome_temperature(t)}",
                    paired(none, greedy, "csr"),
                    +1,
                    primary=t == max(study.temperatures()),
                )
            )
        held = study.arms("held_out", t)
        for runs in held.values():
            if runs[0].method.get("name") == "rag":
                greedy_held = next((g for g in held.values() if is_greedy_epsilon_zero(g[0].method)), [])
                rows.append(row(f"memrl ε=0 - rag, {outcome_temperature(t)}: held-out test SR", paired(greedy_held, runs, "test_sr")))
                rows.append(
                    row(f"memrl ε=0 - rag, {outcome_temperature(t)}: expected test SR", paired(greedy_held, runs, "test_expected_sr"))
                )
    for kind in sorted({r.kind for r in study.runs if r.kind.startswith("held_out@")}):
        k = kind.split("@")[1]
        for t in study.temperatures():
            for runs in study.arms(kind, t).values():
                rows.append(row(f"{runs[0].arm}, {outcome_temperature(t)}: test pass@{k}", summary(runs, "test_pass_at_k")))
            none = next((runs for runs in study.arms(kind, t).values() if runs[0].method.get("name") == "none"), None)
            greedy = next((runs for runs in study.arms("runtime_learning", t).values() if is_greedy_epsilon_zero(runs[0].method)), None)
            if none and greedy:
                x, y = per_order(none, "test_pass_at_k"), per_order(greedy, "csr")
                rows.append(
                    row(
                        f"none test pass@{k} - memrl ε=0 runtime-learning CSR, {outcome_temperature(t)}",
                        t_interval(x[o] - y[o] for o in x if o in y),
                    )
                )
    return rows
