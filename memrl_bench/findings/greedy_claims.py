"""The critique's claims on greedy retrieval: with ε = 0 and temperature 0 MemRL's retrieval is
deterministic, epoch 1 builds the memory bank and later epochs only refine it, good early
memories are amplified and bad ones locked in, most memories are never tested, and where it
ends up depends on the task order. Each claim is one function (memrl_bench.findings.claim).

On the synthetic environment every number is a simulation with known ground truth; the claims
that need it (which memories are harmful, their true utility, an oracle) say so on an LLM env.
"""

from __future__ import annotations

from collections import defaultdict

from memrl_bench.core.stats import Interval, t_interval, variance_ratio
from memrl_bench.findings.across_runs import order_counterfactual, order_spread, retrieval_agreement, retrieval_overlap
from memrl_bench.findings.claim import Row, claim, outcome_temperature, row, text_row
from memrl_bench.findings.runs import Run, Study, arm_rank, by_method_seed, is_greedy_epsilon_zero, one_task_order, paired, summary


def _exploration(arms: dict[str, list[Run]]) -> list[list[Run]]:
    """Arms of MemRL that explore (epsilon > 0, softmax, UCB, Thompson), in a stable order."""
    return [runs for runs in arms.values() if arm_rank(runs[0].method) == 1]


def _reference_explorer(explorers: list[list[Run]]) -> list[Run]:
    """The exploration arm each claim is decided against: epsilon = 0.1 when run, else the first."""
    return next(
        (runs for runs in explorers if runs[0].method.get("selection", "greedy") == "greedy" and runs[0].method.get("epsilon") == 0.1),
        explorers[0] if explorers else [],
    )


def _greedy_minus_explorers(greedy: list[Run], explorers: list[list[Run]], t: float, measure: str, name: str) -> list[Row | None]:
    """memrl ε=0 minus each exploring arm, paired on the task order; ε=0.1 at T=0 decides."""
    reference = _reference_explorer(explorers)
    return [
        row(
            f"memrl ε=0 - {runs[0].arm}, {outcome_temperature(t)}: {name}",
            paired(greedy, runs, measure),
            +1,
            primary=t == 0 and runs is reference,
        )
        for runs in explorers
    ]


def _greedy_and_explorers(study: Study, kind: str, t: float) -> tuple[list[Run], list[list[Run]]]:
    arms = study.arms(kind, t)
    greedy = next((runs for runs in arms.values() if is_greedy_epsilon_zero(runs[0].method)), [])
    return greedy, _exploration(arms)


@claim(
    id="determinism",
    text="With ε = 0 and temperature 0, MemRL's retrieval is greedy and deterministic.",
    measurement=(
        "Share of training episodes whose injected memories are identical in every method seed's run of the same task order (1 = the "
        "method seed changes nothing); per task order, then the t-interval over task orders. Verdict: supported if the interval lies at 1."
    ),
    measured_by=("critique",),
    study_kind="critique",
)
def determinism(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        greedy, explorers = _greedy_and_explorers(study, "held_out", t)
        agreement = retrieval_agreement(greedy)
        rows.append(
            row(f"memrl ε=0, {outcome_temperature(t)}: share identical", t_interval(agreement.values()), +1, null=1 - 1e-9, primary=t == 0)
        )
        for runs in explorers:
            rows.append(row(f"{runs[0].arm}, {outcome_temperature(t)}: share identical", t_interval(retrieval_agreement(runs).values())))
    return rows


@claim(
    id="epoch1_lock_in",
    text="Epoch 1 builds the memory bank; later epochs only refine what epoch 1 chose.",
    measurement=(
        "Of the memories injected in training epochs ≥ 2, the share written in epoch 1, against the share epoch-1 memories had of the bank "
        "at the same moments (what a retriever blind to a memory's age would inject). Verdict on the excess for memrl ε=0 at outcome "
        "temperature 0."
    ),
    measured_by=("critique",),
    study_kind="critique",
    real_measured_by=("critique_real_methods",),
)
def epoch1_lock_in(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        greedy, explorers = _greedy_and_explorers(study, "held_out", t)
        rows.append(row(f"memrl ε=0, {outcome_temperature(t)}: epoch-1 share of injections in epochs ≥ 2", summary(greedy, "lock_in")))
        rows.append(
            row(f"memrl ε=0, {outcome_temperature(t)}: epoch-1 share of the bank at those moments", summary(greedy, "lock_in_bank"))
        )
        rows.append(
            row(
                f"memrl ε=0, {outcome_temperature(t)}: excess (injection share - bank share)",
                summary(greedy, "lock_in_excess"),
                +1,
                primary=t == 0,
            )
        )
        for runs in explorers + [r for r in study.arms("held_out", t).values() if arm_rank(r[0].method) == 2]:
            if runs[0].measures.get("lock_in") is not None:
                rows.append(row(f"{runs[0].arm}, {outcome_temperature(t)}: excess", summary(runs, "lock_in_excess"), +1))
    return rows


@claim(
    id="epoch1_counterfactual",
    text="The task order of epoch 1 has a disproportionate influence on where learning ends up.",
    measurement=(
        "Runs that differ from a reference run only in epoch 1's task order (protocol.epoch_order_seeds = [s]) against runs that differ "
        "only in a later epoch's order ([0, s], [0, 0, s]), for the same seeds s: divergence from the reference of the final memory bank, "
        "of test retrieval and of SR; paired on s. Verdict on the bank divergence, epoch 1 - epoch 2, memrl ε=0 at outcome temperature 0."
    ),
    measured_by=("critique_order",),
    study_kind="critique",
)
def epoch1_counterfactual(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    names = {
        "bank": "bank divergence (1 - Jaccard of top-decile memories' source tasks)",
        "test_expected_sr": "absolute Δ expected test SR",
        "final_sr": "absolute Δ final training SR",
        "retrieval": "test retrieval divergence (1 - Jaccard of source tasks)",
    }
    for t in study.temperatures():
        arms: dict[str, list[Run]] = defaultdict(list)
        for r in study.runs:
            if r.temperature == t and r.kind in ("order", "held_out"):
                arms[r.arm_key].append(r)
        for runs in arms.values():
            divergence = order_counterfactual(runs)
            if not divergence["bank"].get(1):
                continue
            arm = runs[0].arm
            for measure, name in names.items():
                by_epoch = divergence[measure]
                first = by_epoch.get(1, {})
                rows.append(row(f"{arm}, {outcome_temperature(t)}: {name}, epoch 1 varied", t_interval(first.values())))
                for epoch in sorted(e for e in by_epoch if e > 1):
                    later = by_epoch[epoch]
                    diff = t_interval(first[s] - later[s] for s in first if s in later)
                    rows.append(row(f"{arm}, {outcome_temperature(t)}: {name}, epoch {epoch} varied", t_interval(later.values())))
                    is_primary = measure == "bank" and t == 0 and is_greedy_epsilon_zero(runs[0].method) and epoch == 2
                    rows.append(row(f"{arm}, {outcome_temperature(t)}: {name}, epoch 1 - epoch {epoch}", diff, +1, primary=is_primary))
    return rows


@claim(
    id="never_tested",
    text="Most memories are never tested.",
    measurement=(
        "Share of the final memories never injected in training (a memory's Q changes only when it is injected), against one half, over "
        "the task orders, or with one task order over the final memories. Verdict for memrl ε=0 at outcome temperature 0. No row "
        "for an arm that injects one document rebuilt from its memories (AWM, Dynamic Cheatsheet's cumulative sheet)."
    ),
    measured_by=("critique",),
    study_kind="critique",
    real_measured_by=("critique_real_methods",),
)
def never_tested(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    by_memory = one_task_order(study)
    for t in study.temperatures():
        for runs in study.arms("held_out", t).values():
            if runs[0].measures.get("never_retrieved") is not None:
                primary = t == 0 and is_greedy_epsilon_zero(runs[0].method)
                label = f"{runs[0].arm}, {outcome_temperature(t)}: never injected"
                rows.append(row(label, summary(runs, "never_retrieved"), +1, null=0.5, primary=primary and not by_memory))
                if by_memory:
                    rows.append(row(f"{label}, over its final memories", _over_memories(runs), +1, null=0.5, primary=primary))
                rows.append(row(f"{runs[0].arm}, {outcome_temperature(t)}: Gini of injection counts", summary(runs, "gini")))
    return rows


def _over_memories(runs: list[Run]) -> Interval:
    """The share never injected with its interval over the final memories (one per memory: never injected or not), the
    runs' memories pooled: the spread a study of one task order has."""
    flags: list[float] = []
    for r in runs:
        n = int(r.measures.get("memories") or 0)
        never = round((r.measures.get("never_retrieved") or 0.0) * n)
        flags += [1.0] * never + [0.0] * (n - never)
    return t_interval(flags)


@claim(
    id="good_amplified",
    text="Good early memories are amplified.",
    measurement=(
        "Over the memories written in epoch 1, the Spearman correlation of their true utility (synthetic ground truth) with how often "
        "epochs ≥ 2 inject them; with the share of the most useful memories (top quartile) never injected. Verdict for memrl ε=0 at "
        "outcome temperature 0."
    ),
    measured_by=("critique",),
    study_kind="critique",
    needs_ground_truth=True,
)
def good_amplified(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        for runs in study.arms("held_out", t).values():
            if runs[0].measures.get("early_amplification") is None:
                continue
            primary = t == 0 and is_greedy_epsilon_zero(runs[0].method)
            rows.append(
                row(
                    f"{runs[0].arm}, {outcome_temperature(t)}: Spearman(true utility, reuse in epochs ≥ 2) of epoch-1 memories",
                    summary(runs, "early_amplification"),
                    +1,
                    primary=primary,
                )
            )
            rows.append(
                row(
                    f"{runs[0].arm}, {outcome_temperature(t)}: top-quartile-utility memories never injected",
                    summary(runs, "good_never_retrieved"),
                )
            )
            rows.append(
                row(
                    f"{runs[0].arm}, {outcome_temperature(t)}: their share of injections (0.25 = no preference)",
                    summary(runs, "good_injection_share"),
                )
            )
            if runs[0].measures.get("spearman_q_utility") is not None:
                rows.append(
                    row(f"{runs[0].arm}, {outcome_temperature(t)}: Spearman(final Q, true utility)", summary(runs, "spearman_q_utility"))
                )
    return rows


@claim(
    id="bad_locked_in",
    text="Bad early memories are locked in by ε = 0 (greedy) retrieval.",
    measurement=(
        "Harmful memories (synthetic ground truth; env.harmful_early_share makes half of epoch 1's lessons harmful) as a share of the "
        "memories injected in the last training epoch: memrl ε=0 minus each exploring variant, paired on the task order. Verdict on ε=0 - "
        "ε=0.1 at outcome temperature 0."
    ),
    measured_by=("critique", "critique_epsilon"),
    study_kind="critique",
    needs_ground_truth=True,
)
def bad_locked_in(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        greedy, explorers = _greedy_and_explorers(study, "held_out", t)
        if not greedy or greedy[0].measures.get("harmful_retrieval_share") is None:
            continue
        rows.append(
            row(f"memrl ε=0, {outcome_temperature(t)}: harmful share of last-epoch injections", summary(greedy, "harmful_retrieval_share"))
        )
        rows.append(
            row(
                f"memrl ε=0, {outcome_temperature(t)}: harmful share of the bank before the last epoch",
                summary(greedy, "harmful_bank_share"),
            )
        )
        rows.append(
            row(
                f"memrl ε=0, {outcome_temperature(t)}: share of harmful memories injected in the last epoch",
                summary(greedy, "harmful_retrieved_share"),
            )
        )
        others = [runs for runs in study.arms("held_out", t).values() if arm_rank(runs[0].method) == 2]
        rows += [
            row(
                f"{runs[0].arm}, {outcome_temperature(t)}: harmful share of last-epoch injections", summary(runs, "harmful_retrieval_share")
            )
            for runs in explorers + others
        ]
        rows += _greedy_minus_explorers(greedy, explorers, t, "harmful_retrieval_share", "harmful share of last-epoch injections")
    return rows


@claim(
    id="regret",
    text="Greedy retrieval leaves value that exploration would find (the cost of the lock-in).",
    measurement=(
        "Regret per training episode against an oracle that knows every memory's true effect and injects the k best of the memories stored "
        "before the episode's batch: P(success | oracle's set) - P(success | injected set); with each arm's held-out test SR. Verdict on "
        "last-epoch regret, ε=0 - ε=0.1, outcome temperature 0."
    ),
    measured_by=("critique", "critique_epsilon"),
    study_kind="critique",
    needs_ground_truth=True,
)
def regret(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        greedy, explorers = _greedy_and_explorers(study, "held_out", t)
        if not greedy or greedy[0].measures.get("regret_mean") is None:
            continue
        for runs in study.arms("held_out", t).values():
            rows.append(row(f"{runs[0].arm}, {outcome_temperature(t)}: regret per episode, all epochs", summary(runs, "regret_mean")))
            rows.append(row(f"{runs[0].arm}, {outcome_temperature(t)}: regret per episode, last epoch", summary(runs, "regret_last_epoch")))
            rows.append(row(f"{runs[0].arm}, {outcome_temperature(t)}: held-out test SR", summary(runs, "test_sr")))
            rows.append(
                row(
                    f"{runs[0].arm}, {outcome_temperature(t)}: expected held-out test SR (mean P(success))",
                    summary(runs, "test_expected_sr"),
                )
            )
        rows += _greedy_minus_explorers(greedy, explorers, t, "regret_last_epoch", "last-epoch regret")
    return rows


@claim(
    id="order_dependence",
    text="Where greedy MemRL ends up depends more on the task order than with exploration.",
    measurement=(
        "Spread across task orders (method seed fixed) of the expected test SR (mean P(success) on the in-distribution test split: the "
        "memory's effect without outcome noise), of test SR and of final training SR; the overlap of test retrievals across orders; and "
        "the ratio of across-order variances (of the expected test SR; of the test SR in an env without P(success)), ε=0 over each "
        "exploring variant, with its F-interval. Verdict on ε=0 / ε=0.1 at outcome temperature 0."
    ),
    measured_by=("critique", "critique_epsilon"),
    study_kind="critique",
    real_measured_by=("critique_real_methods", "critique_real_explore", "critique_real_bandit"),
)
def order_dependence(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        greedy, explorers = _greedy_and_explorers(study, "held_out", t)
        reference = _reference_explorer(explorers)
        for runs in study.arms("held_out", t).values():
            for measure, name in (("test_expected_sr", "expected test SR"), ("test_sr", "test SR"), ("final_sr", "final training SR")):
                spread = order_spread(runs, measure)
                if spread["std"] is not None:
                    rows.append(
                        text_row(
                            f"{runs[0].arm}, {outcome_temperature(t)}: {name} across task orders: std / range",
                            f"{spread['std']:.3f} / {spread['range']:.3f} ({spread['orders']} orders)",
                            spread["std"],
                        )
                    )
            overlap = retrieval_overlap(runs)
            if overlap:
                rows.append(
                    row(
                        f"{runs[0].arm}, {outcome_temperature(t)}: Jaccard of test retrievals across task orders",
                        t_interval(overlap.values()),
                    )
                )
        # An LLM env has no P(success) to take the expectation of: its test SR is the measure there.
        measure, name = (
            ("test_expected_sr", "expected test SR")
            if any(r.measures.get("test_expected_sr") is not None for r in greedy)
            else ("test_sr", "test SR")
        )
        for runs in explorers:
            ratio = variance_ratio(by_method_seed(greedy, measure), by_method_seed(runs, measure))
            rows.append(
                row(
                    f"variance of {name} across orders, memrl ε=0 / {runs[0].arm}, {outcome_temperature(t)} (F-interval)",
                    ratio,
                    +1,
                    null=1.0,
                    primary=t == 0 and runs is reference,
                )
            )
    return rows
