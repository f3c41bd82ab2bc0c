"""The critique's claims on fair evaluation: does memory help on held-out tasks, do evaluations
that learn from the tasks they score overstate it, and is a no-memory agent scored once a weak
baseline. Each claim is one function (memrl_bench.findings.claim).

Whether memory beats no memory is measured twice: paired on the task order and paired on the
test task (with the number of test tasks a ±0.10 interval needs at the spread measured).
"""

from __future__ import annotations

from memrl_bench.core.stats import difference_of_means, n_for_half_width, t_interval
from memrl_bench.findings.claim import Row, claim, outcome_temperature, row, text_row
from memrl_bench.findings.runs import Run, Study, is_greedy_epsilon_zero, one_task_order, paired, per_order, summary, task_differences


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


def _runtime_arms(study: Study, t: float) -> tuple[dict[str, list[Run]], str]:
    """The runtime-learning arms and how a row names them: the runtime_learning runs, or in a study of held-out runs
    only (the LLB-DB study) each held-out run's training phase, which is MemRL's runtime-learning protocol on the tasks
    it learns from (every epoch plays them all, memory updated after each batch)."""
    learned = study.arms("runtime_learning", t)
    return (learned, "") if learned else (study.arms("held_out", t), ", training phase of the held-out run")


def _none_arm(arms: dict[str, list[Run]]) -> str | None:
    return next((arm for arm, runs in arms.items() if runs[0].method.get("name") == "none"), None)


@claim(
    id="runtime_learning",
    text="Evaluations that learn from the tasks they score (runtime learning) overstate what a memory method does on new tasks.",
    measurement=(
        "Per method, the last-epoch SR on the training tasks under protocol=runtime_learning (in a study of held-out runs only: the "
        "held-out run's training phase, which is that protocol) against the test SR on held-out tasks of the same distribution under the "
        "fair protocol; the gap of each memory method minus the no-memory gap (which is only the difference between the task sets), paired "
        "on the task order, or with one task order paired on the task within each task set (Welch's interval over the two sets). Verdict "
        "for memrl ε=0 at outcome temperature 0."
    ),
    measured_by=("critique", "critique_fairness"),
    study_kind="critique",
    real_measured_by=("critique_real_methods", "critique_real_runtime"),
)
def runtime_learning(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    by_task = one_task_order(study)
    for t in study.temperatures():
        at = outcome_temperature(t)
        held = study.arms("held_out", t)
        learned, where = _runtime_arms(study, t)
        gaps: dict[str, dict[int, float]] = {}
        for arm, runs in learned.items():
            if arm not in held:
                continue
            name = runs[0].arm
            rl, ho = per_order(runs, "final_sr"), per_order(held[arm], "test_sr")
            gaps[arm] = {o: rl[o] - ho[o] for o in rl if o in ho}
            rows.append(row(f"{name}, {at}: runtime-learning SR (last epoch, the learned tasks{where})", t_interval(rl.values())))
            rows.append(row(f"{name}, {at}: runtime-learning CSR{where}", summary(runs, "csr")))
            rows.append(row(f"{name}, {at}: held-out test SR", t_interval(ho.values())))
            rows.append(row(f"{name}, {at}: gap (runtime-learning SR - held-out test SR)", t_interval(gaps[arm].values())))
        none = _none_arm({arm: learned[arm] for arm in gaps})
        for arm, gap in gaps.items() if none else ():
            method = learned[arm][0].method
            if arm == none:
                continue
            decides = t == 0 and is_greedy_epsilon_zero(method)
            label = f"{learned[arm][0].arm} gap - none gap, {at}"
            rows.append(row(label, t_interval(gap[o] - gaps[none][o] for o in gap if o in gaps[none]), +1, primary=decides and not by_task))
            if by_task:
                on_tasks = difference_of_means(
                    task_differences(learned[arm], learned[none], "train_outcomes"), task_differences(held[arm], held[none])
                )
                rows.append(row(f"{label}, paired on the task within each task set", on_tasks, +1, primary=decides))
    return rows


@claim(
    id="weak_baselines",
    text=(
        "A no-memory agent scored once is a weak baseline: given as many attempts as MemRL has epochs, it matches MemRL's cumulative "
        "success rate."
    ),
    measurement=(
        "Under runtime learning (in a study of held-out runs only: their training phase), the no-memory agent's pass@E (its CSR over E "
        "epochs, E independent attempts when the outcome is sampled, T > 0) minus MemRL ε=0's CSR over the same E epochs, paired on the "
        "task order, or with one task order on the training task; with the held-out comparison against RAG and the test pass@k of each "
        "method. Verdict at the sampled outcome temperature (at T = 0 a no-memory agent repeats itself, so its pass@E is its pass@1)."
    ),
    measured_by=("critique_fairness", "critique_passk"),
    study_kind="critique",
    real_measured_by=("critique_real_runtime",),
)
def weak_baselines(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    by_task = one_task_order(study)
    for t in study.temperatures():
        at = outcome_temperature(t)
        learned, where = _runtime_arms(study, t)
        none = learned.get(_none_arm(learned) or "")
        greedy = next((runs for runs in learned.values() if is_greedy_epsilon_zero(runs[0].method)), None)
        if none and greedy:
            epochs = none[0].protocol.get("epochs")
            decides = t == max(study.temperatures())
            rows.append(row(f"none, {at}: SR per attempt (pass@1){where}", summary(none, "final_sr")))
            rows.append(row(f"none, {at}: pass@{epochs} (CSR over {epochs} epochs without memory){where}", summary(none, "csr")))
            rows.append(row(f"memrl ε=0, {at}: CSR over {epochs} epochs{where}", summary(greedy, "csr")))
            label = f"none pass@{epochs} - memrl ε=0 CSR, {at}"
            rows.append(row(label, paired(none, greedy, "csr"), +1, primary=decides and not by_task))
            if by_task:
                on_tasks = t_interval(task_differences(none, greedy, "train_solved"))
                rows.append(row(f"{label}, paired on the training task", on_tasks, +1, primary=decides))
        held = study.arms("held_out", t)
        for runs in held.values():
            if runs[0].method.get("name") == "rag":
                greedy_held = next((g for g in held.values() if is_greedy_epsilon_zero(g[0].method)), [])
                rows.append(row(f"memrl ε=0 - rag, {at}: held-out test SR", paired(greedy_held, runs, "test_sr")))
                rows.append(row(f"memrl ε=0 - rag, {at}: expected test SR", paired(greedy_held, runs, "test_expected_sr")))
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
