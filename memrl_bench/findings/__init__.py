"""Findings on the critique's claims, generated from the run folders of a study.

The critique this harness was built to test (ARCHITECTURE.md, "The question"): with epsilon = 0
and temperature 0 MemRL's retrieval is greedy and deterministic, so epoch 1 builds the memory
bank, later epochs only refine what it chose, good early memories are amplified and bad ones
locked in, and most memories are never tested; and evaluations learn from the tasks they score
and compare against weak baselines. The drift study adds three claims on a changing world, and the
families' claims (issue 30) step-level retrieval, skills without RL, the writer model and the strong
baselines.

Each finding states one claim, the measurement that tests it, the numbers with 95% t-intervals
and the verdict the interval supports: "supported" when it excludes the null in the claimed
direction, "not supported" when it excludes it in the other direction, "inconclusive at this
sample size" otherwise. On the synthetic environment every number is a simulation with known
ground truth, not an LLM result, and is labelled so; on an LLM env (`+experiment=critique_real`)
the claims that need ground truth say so instead of a verdict.

The package: `runs` (the run model, the loader, a study's arms and the paired statistics),
`measures` (one run's measures), `across_runs` (measures across runs of an arm), `claim` (the
claim interface and registry), the claims by theme (`greedy_claims`, `fairness_claims`,
`drift_claims`, `family_claims`; a claim of one's own is one function decorated with `claim` in any imported
module), `section` (`findings(results_dir)`), `render` (Markdown, HTML) and `__main__` (the CLI).
"""

# isort: off
# Importing the theme modules registers the built-in claims: in this order, the order of the findings.
from memrl_bench.findings import greedy_claims  # noqa: F401
from memrl_bench.findings import fairness_claims  # noqa: F401
from memrl_bench.findings import drift_claims  # noqa: F401
from memrl_bench.findings import family_claims  # noqa: F401

# isort: on
from memrl_bench.findings.claim import (
    STUDY_KINDS,
    Claim,
    ClaimError,
    Finding,
    Row,
    Section,
    StudyKind,
    claim,
    claim_by_id,
    claims,
    outcome_temperature,
    row,
    text_row,
    unregister,
)
from memrl_bench.findings.measures import test_splits
from memrl_bench.findings.render import SECTION_TITLE, comparison_table, render_html, render_markdown
from memrl_bench.findings.runs import (
    Run,
    Study,
    arm_label,
    is_greedy_epsilon_zero,
    load_run,
    load_runs,
    paired,
    per_order,
    summary,
    task_differences,
    warn_on_stderr,
)
from memrl_bench.findings.section import SYNTHETIC, findings, real_section

__all__ = [
    "SECTION_TITLE",
    "STUDY_KINDS",
    "SYNTHETIC",
    "Claim",
    "ClaimError",
    "Finding",
    "Row",
    "Run",
    "Section",
    "Study",
    "StudyKind",
    "arm_label",
    "claim",
    "claim_by_id",
    "claims",
    "comparison_table",
    "findings",
    "is_greedy_epsilon_zero",
    "load_run",
    "load_runs",
    "outcome_temperature",
    "paired",
    "per_order",
    "real_section",
    "render_html",
    "render_markdown",
    "row",
    "summary",
    "task_differences",
    "test_splits",
    "text_row",
    "unregister",
    "warn_on_stderr",
]
