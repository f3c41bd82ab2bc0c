"""A claim is one decorated function; a finding is its verdict on a study's runs.

    from memrl_bench.findings import Study, claim, row, summary

    @claim(id="never_tested", text="Most memories are never tested.",
           measurement="Share of the final memories never injected in training, against one half.",
           measured_by=("critique",), study_kind="critique")
    def never_tested(study: Study) -> list[Row | None]:
        ...
        return [row("memrl ε=0: never injected", summary(runs, "never_retrieved"), +1, null=0.5, primary=True)]

The function returns the rows of the claim's table (`row`: a measured interval, None when
nothing was measured, which is left out; `text_row`: a line of text). One rule for every
verdict (memrl_bench.core.stats.verdict): the row marked primary decides the claim and carries its
verdict; the other rows with a direction say only where their interval lies against the null
("above 0.5"), so that no row reads as a second verdict. A claim without a primary row is
not measured by the runs, and its line in the findings names the presets that would measure it.

Registering is importing the module that holds the function; `claims()` are the registered
claims in that order, the order of the findings. `study_kind` says which runs the function
reads (STUDY_KINDS): "critique", the largest world of a folder (synthetic or an LLM env),
"drift", its largest world of drift runs, or "families" (the largest world of runs but drift runs) and
"families_drift" (drift_world), read by the claims on the critique's other families (step-level retrieval, skills, writers, strong
baselines) with studies of their own: families_study (synthetic) and llb_db_families (a real
model). A claim that needs a
real model (`needs_real_model`: the synthetic world has no ground truth for what it measures)
is not measured on a synthetic section, as one that needs ground truth is not on an LLM env.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from memrl_bench.core.stats import NOT_MEASURED, Interval, side, verdict
from memrl_bench.findings.runs import Run, Study, critique_world, drift_world, held_out_world


class ClaimError(ValueError):
    """A claim registered twice, with an unknown study kind or unknown to the registry; names the claim."""


@dataclass(frozen=True)
class StudyKind:
    """Which runs a kind of claim reads, and the study (conf/experiment/<study>.yaml) that runs its presets."""

    name: str
    select: Callable[[list[Run]], Study]
    study: str
    real_study: str | None = None  # the real-model study measuring these claims on an LLM env (its presets: Claim.real_measured_by)


STUDY_KINDS = {
    kind.name: kind
    for kind in (
        StudyKind("critique", critique_world, "critique_study", "critique_real"),
        StudyKind("drift", drift_world, "drift_study"),
        StudyKind("families", held_out_world, "families_study", "llb_db_families"),
        StudyKind("families_drift", drift_world, "families_study"),
    )
}


@dataclass(frozen=True)
class Section:
    """What every number of one findings section is."""

    label: str  # "SYNTHETIC (simulation, not LLM results)", or "REAL MODEL <model> on env <env>"
    synthetic: bool  # a synthetic world: the claims that need ground truth have it
    study: str | None = None  # the study whose runs these are (the first part of their experiment_name), where known


@dataclass(frozen=True)
class Row:
    """One line of a finding's table."""

    label: str
    text: str
    mean: float
    low: float | None = None
    high: float | None = None
    n: int | None = None
    primary: bool = False  # the row that decides the claim
    verdict: str | None = None  # the primary row's verdict (memrl_bench.core.stats)
    side: str | None = None  # where another row's interval lies against its null: "above 0", "spans 0.5"


_SIDES = {1: "above", -1: "below", 0: "spans"}


def row(label: str, interval: Interval, direction: int | None = None, null: float = 0.0, primary: bool = False) -> Row | None:
    """A row of a measured interval; None (left out) when nothing was measured. `direction`:
    +1 when the claim holds above `null`, -1 below; the primary row gets the verdict."""
    if interval.mean is None:
        return None
    found = verdict(interval, direction or 1, null) if primary else None
    where = side(interval, null) if direction is not None and not primary else None
    return Row(
        label,
        interval.text(),
        interval.mean,
        interval.low,
        interval.high,
        interval.n,
        primary,
        found,
        f"{_SIDES[where]} {null:g}" if where is not None else None,
    )


def text_row(label: str, text: str, mean: float) -> Row:
    """A row of text (a spread, a sample size) with the number it stands for."""
    return Row(label, text, mean)


def outcome_temperature(t: float) -> str:
    """How a row names the synthetic env's outcome temperature (an LLM env's rows leave the T=0 of its runs out)."""
    return f"outcome T={t:g}"


@dataclass(frozen=True)
class Claim:
    """A registered claim: what it states, how it is measured, the presets whose runs it reads, and its function."""

    id: str
    text: str
    measurement: str
    measured_by: tuple[str, ...]  # the presets (conf/experiment/) of its study whose runs it needs
    study_kind: str  # a key of STUDY_KINDS
    needs_ground_truth: bool  # needs the synthetic env's ground truth: never measured on an LLM env
    real_measured_by: tuple[str, ...]  # the real-model study's presets that measure it (critique_real*.yaml)
    measure: Callable[[Study], Iterable[Row | None]]
    needs_real_model: bool = False  # the synthetic world has no ground truth for it: never measured on a synthetic section

    def finding(self, study: Study, section: Section) -> Finding:
        if self.needs_real_model and section.synthetic:
            return Finding(self, (), section)
        rows = tuple(r for r in self.measure(study) if r is not None)
        if not section.synthetic and STUDY_KINDS[self.study_kind].real_study is not None:
            t0 = outcome_temperature(0.0)  # an LLM env has no outcome temperature (the model's is in the label's config)
            rows = tuple(replace(r, label=r.label.replace(f", {t0}", "").replace(f" {t0}", "")) for r in rows)
        return Finding(self, rows, section)


@dataclass(frozen=True)
class Finding:
    """A claim's rows on one study's runs, in a section; its verdict is that of its primary row."""

    claim: Claim
    rows: tuple[Row, ...]
    section: Section

    @property
    def id(self) -> str:
        return self.claim.id

    @property
    def primary(self) -> Row | None:
        return next((r for r in self.rows if r.primary), None)

    @property
    def verdict(self) -> str:
        primary = self.primary
        return primary.verdict if primary is not None and primary.verdict is not None else NOT_MEASURED

    @property
    def on_real_study(self) -> bool:
        """Measured on an LLM env by a kind of claim the real-model study measures."""
        return not self.section.synthetic and STUDY_KINDS[self.claim.study_kind].real_study is not None

    @property
    def presets(self) -> tuple[str, ...]:
        return self.claim.real_measured_by if self.on_real_study else self.claim.measured_by

    @property
    def study(self) -> str:
        kind = STUDY_KINDS[self.claim.study_kind]
        real = self.on_real_study or self.claim.needs_real_model
        return kind.real_study if real and kind.real_study is not None else kind.study


_REGISTRY: dict[str, Claim] = {}


def claim(
    *,
    id: str,  # the claim's id, as the findings name it
    text: str,
    measurement: str,
    measured_by: Iterable[str],
    study_kind: str,
    needs_ground_truth: bool = False,
    real_measured_by: Iterable[str] = (),
    needs_real_model: bool = False,
) -> Callable[[Callable[[Study], Iterable[Row | None]]], Claim]:
    """Register the decorated function `(study) -> rows` as the claim `id` (module doc)."""
    if isinstance(measured_by, str) or isinstance(real_measured_by, str):
        raise ClaimError(f"claim {id!r}: measured_by and real_measured_by are lists of presets, not one string")
    if study_kind not in STUDY_KINDS:
        raise ClaimError(f"claim {id!r}: study_kind {study_kind!r} is not one of {', '.join(STUDY_KINDS)}")
    if needs_ground_truth and tuple(real_measured_by):
        raise ClaimError(f"claim {id!r} needs the synthetic env's ground truth, so no real-model preset can measure it")
    if needs_real_model and (needs_ground_truth or not tuple(real_measured_by)):
        raise ClaimError(f"claim {id!r} needs a real model: it needs real_measured_by presets and no synthetic ground truth")

    def register(measure: Callable[[Study], Iterable[Row | None]]) -> Claim:
        if id in _REGISTRY:
            raise ClaimError(
                f"claim {id!r} is registered twice: by {_REGISTRY[id].measure.__module__}.{_REGISTRY[id].measure.__qualname__} and "
                f"{measure.__module__}.{measure.__qualname__}"
            )
        registered = Claim(
            id, text, measurement, tuple(measured_by), study_kind, needs_ground_truth, tuple(real_measured_by), measure, needs_real_model
        )
        _REGISTRY[id] = registered
        return registered

    return register


def claims() -> tuple[Claim, ...]:
    """Every registered claim, in registration order."""
    return tuple(_REGISTRY.values())


def claim_by_id(claim_id: str) -> Claim:
    if claim_id not in _REGISTRY:
        raise ClaimError(f"no claim {claim_id!r} is registered (registered: {', '.join(_REGISTRY) or 'none'})")
    return _REGISTRY[claim_id]


def unregister(claim_id: str) -> Claim:
    """Remove a claim from the registry (a test's own claim, after the test); the claim removed."""
    removed = claim_by_id(claim_id)
    del _REGISTRY[claim_id]
    return removed
