"""The findings of a results folder: every registered claim on the runs its study kind reads.

The section's numbers are those of the folder's largest world: "SYNTHETIC (simulation, not
LLM results)" when every run of it is synthetic, else the model and env of its runs (the
real-model study, `+experiment=critique_real`), where the claims that need the synthetic
env's ground truth say so instead of a verdict.
"""

from __future__ import annotations

from pathlib import Path

from memrl_bench.findings.claim import STUDY_KINDS, Finding, Section, claims
from memrl_bench.findings.runs import Run, Study, Warn, load_runs, warn_on_stderr

SYNTHETIC = Section("SYNTHETIC (simulation, not LLM results)", synthetic=True)


def real_section(config: dict) -> Section:
    """What a real-env section's numbers are: the model and the env (with the subjects or game it was restricted to)."""
    env, llm = config["env"], config.get("llm") or {}
    setting = env.get("subjects") or env.get("game") or env.get("task_types")
    which = f" ({', '.join(setting) if isinstance(setting, list) else setting})" if setting else ""
    study = str(config.get("experiment_name") or "").split("/")[0] or None
    return Section(f"REAL MODEL {llm.get('model') or llm.get('name')} on env {env.get('name')}{which}", synthetic=False, study=study)


def findings(results_dir: Path, warn: Warn | None = warn_on_stderr, runs: list[Run] | None = None) -> list[Finding]:
    """The findings on the critique's claims from the runs below results_dir, one per registered
    claim in registration order; `runs`: those runs when the caller has loaded them already (load_runs)."""
    if not Path(results_dir).is_dir():
        raise FileNotFoundError(f"findings: results folder {results_dir} does not exist")
    if runs is None:
        runs = load_runs(Path(results_dir), warn=warn)
    largest = STUDY_KINDS["critique"].select(runs)  # one world per section: the folder's largest
    if not largest.runs:
        return []
    section = SYNTHETIC if all("synthetic" in r.labels for r in largest.runs) else real_section(largest.runs[0].config)
    studies: dict[str, Study] = {"critique": largest}
    out = []
    for registered in claims():
        if registered.study_kind not in studies:
            studies[registered.study_kind] = STUDY_KINDS[registered.study_kind].select(runs)
        out.append(registered.finding(studies[registered.study_kind], section))
    return out
