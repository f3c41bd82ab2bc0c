"""The claims on the critique's other families (issue 30): step-level retrieval (after SLEA-RL), a skill
bank without RL (after SkillRL), the writer model, and the strong prompt-memory baselines. Each claim is
one function (memrl_bench.findings.claim) of study kind "families" (the drift claim: "families_drift").

Arms are compared with their twin: the arm whose method config is the same but for the one setting the
claim varies (retrieval_granularity, q_learning, the writer), a setting at its default counting as absent,
so the runs of an earlier study (none, rag, memp, memrl on LLB-DB) pair with the variants run after it.
Only step-level retrieval has a synthetic ground truth (the world's step types decide each step's
outcome); what a distilled skill, a cheatsheet or a writer is worth is its text, which the synthetic
outcome never reads (it reads only which source episode an item came from), so the other claims are
measured with a real model only (`needs_real_model`).
"""

from __future__ import annotations

from collections.abc import Iterator

from memrl_bench.core.stats import t_interval
from memrl_bench.findings.claim import Row, claim, outcome_temperature, row, text_row
from memrl_bench.findings.runs import Run, Study, config_key, paired, per_order, summary, task_differences

# A method setting at this value is the method as it was before the setting existed: absent and default are one arm.
_DEFAULTS = {"retrieval_granularity": "task", "q_learning": False}
STRONG_BASELINES = ("reasoningbank", "dynamic_cheatsheet", "awm")
EQUAL_CHARS = 1.25  # injected characters within this factor of MemRL's count as "equal injected tokens"


def _method_key(method: dict, **changed: object) -> str:
    """The method config with `changed` applied and the settings at their default dropped."""
    merged = {**method, **changed}
    return config_key({k: v for k, v in merged.items() if not (k in _DEFAULTS and v == _DEFAULTS[k])})


def _twin(arms: dict[str, list[Run]], runs: list[Run], writer: bool = True, **changed: object) -> list[Run] | None:
    """The arm of `arms` whose method is `runs`' with `changed`, with the same writer (`writer`) or the acting model as writer."""
    wanted = _method_key(runs[0].method, **changed)
    same_writer = runs[0].writer if writer else None
    return next((a for a in arms.values() if a is not runs and _method_key(a[0].method) == wanted and a[0].writer == same_writer), None)


def _granularity(run: Run) -> str:
    return str(run.method.get("retrieval_granularity", "task"))


def _step_twins(study: Study, kind: str) -> Iterator[tuple[float, list[Run], list[Run], bool]]:
    """(outcome temperature, a step-level arm, its task-level twin, whether it decides the claim: the first MemRL
    pair at temperature 0) for every step-level arm of `kind` runs that has a twin."""
    decided = False
    for t in study.temperatures():
        arms = study.arms(kind, t)
        for step in (runs for runs in arms.values() if _granularity(runs[0]) == "step"):
            task = _twin(arms, step, retrieval_granularity="task")
            if task is not None:
                primary = not decided and t == 0 and step[0].method.get("name") == "memrl"
                decided |= primary
                yield t, step, task, primary


def _comparison(a: list[Run], b: list[Run], what: str, primary: bool) -> list[Row | None]:
    """a - b in held-out test success paired on the test task (the deciding pairs when `primary`), in test SR and in expected
    test SR (synthetic) paired on the task order."""
    label = f"{a[0].arm} - {b[0].arm}{what}"
    return [
        row(f"{label}: held-out test success, paired on the test task", t_interval(task_differences(a, b)), +1, primary=primary),
        row(f"{label}: held-out test SR, paired on the task order", paired(a, b, "test_sr"), +1),
        row(f"{label}: expected test SR, paired on the task order", paired(a, b, "test_expected_sr"), +1),
    ]


@claim(
    id="step_level_gain",
    text="Step-level retrieval (SLEA-RL: before every step, by its observation) solves more held-out tasks than retrieving once per task.",
    measurement=(
        "Per retrieving method, held-out test success at retrieval_granularity=step minus the same method at task granularity, paired on "
        "the test task (and test SR paired on the task order), beside what the step retrievals add per test episode: retrieval seconds "
        "(the episode's and every step's latency_s.retrieve) and injected characters (the episode's and every step's "
        "retrieval.injected_chars), and with a real model the acting prompts' tokens (a task-level block stays in every later step's "
        "prompt). Synthetic ground truth: each later step's outcome depends on its own step type, which the step's scene "
        "shows. Verdict for memrl (the first MemRL arm with a step twin), paired on the test task, at outcome temperature 0."
    ),
    measured_by=("step_level",),
    study_kind="families",
    real_measured_by=("llb_db_families_step",),
)
def step_level_gain(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t, step, task, primary in _step_twins(study, "held_out"):
        at = f", {outcome_temperature(t)}"
        rows += _comparison(step, task, at, primary)
        for measure, what in (
            ("test_retrieve_s", "retrieval seconds"),
            ("test_injected_chars", "injected characters"),
            ("test_prompt_tokens", "acting prompt tokens"),
        ):
            rows.append(row(f"{step[0].arm}{at}: {what} per test episode", summary(step, measure)))
            rows.append(row(f"{task[0].arm}{at}: {what} per test episode", summary(task, measure)))
            rows.append(row(f"{step[0].arm} - {task[0].arm}{at}: added {what} per test episode", paired(step, task, measure), +1))
    return rows


@claim(
    id="step_level_under_drift",
    text="Step-level retrieval loses more than task-level retrieval when the observations change (its memories are found by them).",
    measurement=(
        "Under protocol=drift, per retrieving method, the training SR over every episode after the change minus the SR of the training "
        "epoch before it (what the change cost, memrl_bench/protocols/drift.py), at step granularity minus at task granularity, paired on "
        "the task order; with each arm's SR change, its SR after the change and its SR dip, and the share of the step arm's step "
        "retrievals that joined no observation cluster in the training epoch before the change and the first after it. Synthetic "
        "ground truth: step_drift redraws every step type's scene at the change and flips no lesson, so only the observations that find "
        "step memories change. Verdict for memrl (the first MemRL arm with a step twin) at outcome temperature 0: supported if step - "
        "task lies below 0."
    ),
    measured_by=("step_drift",),
    study_kind="families_drift",
)
def step_level_under_drift(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t, step, task, primary in _step_twins(study, "drift"):
        at = f", {outcome_temperature(t)}"
        label = f"{step[0].arm} - {task[0].arm}{at}"
        rows.append(
            row(f"{label}: SR after the change - SR of the epoch before it", paired(step, task, "drift_sr_change"), -1, primary=primary)
        )
        rows.append(row(f"{label}: SR after the change (training)", paired(step, task, "drift_post_sr"), -1))
        for runs in (step, task):
            rows.append(row(f"{runs[0].arm}{at}: SR after the change - SR of the epoch before it", summary(runs, "drift_sr_change")))
            rows.append(row(f"{runs[0].arm}{at}: SR after the change (training)", summary(runs, "drift_post_sr")))
            rows.append(row(f"{runs[0].arm}{at}: SR dip (window before - lowest window after)", summary(runs, "drift_dip")))
        for measure, when in (
            ("drift_step_unmatched_before", "the epoch before the change"),
            ("drift_step_unmatched_after", "the first after it"),
        ):
            rows.append(row(f"{step[0].arm}{at}: step retrievals joining no observation cluster, {when}", summary(step, measure)))
    return rows


@claim(
    id="skills_without_rl",
    text="Skills distilled from trajectories (SkillRL's skill bank without its RL) solve more held-out tasks than the raw trajectories.",
    measurement=(
        "Held-out test success of skillbank minus rag (the raw trajectories it distils, task granularity), paired on the test task; with "
        "skillbank q_learning=true (MemRL's Q update on the skills) minus skillbank, which asks whether a gain comes from the abstraction "
        "or from RL, and minus rag. The synthetic world has no ground truth for a skill's text (its outcome reads only which episode an "
        "item came from): a real model only. Verdict on skillbank - rag."
    ),
    measured_by=("llb_db_families_skills",),
    study_kind="families",
    real_measured_by=("llb_db_families_skills",),
    needs_real_model=True,
)
def skills_without_rl(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        arms = study.arms("held_out", t)
        bank, rag = _arm(arms, "skillbank"), _arm(arms, "rag")
        with_q = _twin(arms, bank, q_learning=True) if bank else None
        at = f", {outcome_temperature(t)}"
        for a, b, primary in ((bank, rag, t == 0), (with_q, bank, False), (with_q, rag, False)):
            if a and b:
                rows += _comparison(a, b, at, primary)
    return rows


def _arm(arms: dict[str, list[Run]], name: str) -> list[Run] | None:
    """The first arm of method `name` at its defaults for the settings the claims vary (task granularity, no Q, the acting model
    as writer)."""
    return next((a for a in arms.values() if a[0].method.get("name") == name and _is_plain(a)), None)


def _is_plain(runs: list[Run]) -> bool:
    return runs[0].writer is None and all(runs[0].method.get(k, v) == v for k, v in _DEFAULTS.items())


@claim(
    id="writer_model",
    text="A stronger writer model explains part of a memory method's gain (SkillRL distils with a much stronger model than it acts with).",
    measurement=(
        "Per method that writes memory with an LLM, held-out test success with the writer set by memory_llm minus the same method with "
        "the acting model as writer, paired on the test task; with each arm's memory-call tokens per training episode. The synthetic "
        "world has no ground truth for a writer's text: a real model only. Verdict for the first method (by name) with both arms, read "
        "as the claim when the writer is the stronger model (llb_db_families_writer: Qwen2.5-Coder-7B writing for the 1.5B)."
    ),
    measured_by=("llb_db_families_writer",),
    study_kind="families",
    real_measured_by=("llb_db_families_writer",),
    needs_real_model=True,
)
def writer_model(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    decided = False
    for t in study.temperatures():
        arms = study.arms("held_out", t)
        at = f", {outcome_temperature(t)}"
        for written in (a for a in arms.values() if a[0].writer is not None):
            acting = _twin(arms, written, writer=False)
            if acting is None:
                continue
            primary = not decided and t == 0
            decided |= primary
            rows += _comparison(written, acting, at, primary)
            for runs in (written, acting):
                rows.append(row(f"{runs[0].arm}{at}: memory-call tokens per training episode", summary(runs, "train_memory_tokens")))
    return rows


@claim(
    id="strong_baselines",
    text="MemRL solves more held-out tasks than the strong prompt-memory baselines (ReasoningBank, Dynamic Cheatsheet, AWM).",
    measurement=(
        "Held-out test success of memrl (the first MemRL arm: ε=0 where run; task granularity, the acting model as writer) minus each of "
        "reasoningbank, dynamic_cheatsheet (DC-Cu and DC-RS) and awm, paired on the test task (and test SR paired on the task order), "
        "with each arm's injected characters per test episode and their ratio to MemRL's: 'equal' within a factor of 1.25, else the row "
        "says the comparison is not at equal injected tokens; with each arm's acting prompt tokens per test episode. The synthetic world "
        "has no ground truth for a strategy's or a cheatsheet's text: a real model only. Verdict on memrl minus the strongest baseline "
        "(the highest mean held-out test SR)."
    ),
    measured_by=("llb_db_families_baselines", "llb_db_families_dc"),
    study_kind="families",
    real_measured_by=("llb_db_families_baselines", "llb_db_families_dc"),
    needs_real_model=True,
)
def strong_baselines(study: Study) -> list[Row | None]:
    rows: list[Row | None] = []
    for t in study.temperatures():
        arms = study.arms("held_out", t)
        memrl = _arm(arms, "memrl")
        baselines = [a for a in arms.values() if a[0].method.get("name") in STRONG_BASELINES and _is_plain(a)]
        if memrl is None or not baselines:
            continue
        at = f", {outcome_temperature(t)}"
        strongest = max(baselines, key=lambda a: sum(per_order(a, "test_sr").values()) / max(1, len(per_order(a, "test_sr"))))
        mine = summary(memrl, "test_injected_chars")
        rows.append(row(f"{memrl[0].arm}{at}: injected characters per test episode", mine))
        rows.append(row(f"{memrl[0].arm}{at}: acting prompt tokens per test episode", summary(memrl, "test_prompt_tokens")))
        for baseline in baselines:
            rows += _comparison(memrl, baseline, at, primary=t == 0 and baseline is strongest)
            theirs = summary(baseline, "test_injected_chars")
            rows.append(row(f"{baseline[0].arm}{at}: injected characters per test episode", theirs))
            rows.append(row(f"{baseline[0].arm}{at}: acting prompt tokens per test episode", summary(baseline, "test_prompt_tokens")))
            if mine.mean and theirs.mean is not None:
                ratio = theirs.mean / mine.mean
                equal = 1 / EQUAL_CHARS <= ratio <= EQUAL_CHARS
                verdict = "equal injected tokens (within 1.25x)" if equal else "NOT at equal injected tokens"
                rows.append(text_row(f"{baseline[0].arm} / {memrl[0].arm}{at}: injected characters", f"{ratio:.2f}x: {verdict}", ratio))
    return rows
