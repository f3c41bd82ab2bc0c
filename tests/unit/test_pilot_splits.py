"""Surveys and pilots never touch the tasks a study learns from or scores (issue 27, finding 6).

The first MMLU study picked its subject on the validation questions it then learned from; the
survey preset plays held-aside test questions instead, and the LLB-DB pilot plays db_train tasks
past the study's. Each pair of presets is composed as the CLI composes it and their tasks are
listed as the runner lists them (a split's tasks, less skip_tasks, up to max_tasks).
"""

from __future__ import annotations

import pytest

from memrl_bench.core import registry
from memrl_bench.envs.base import DataMissingError
from tests.helpers import composed


def task_ids(*overrides: str) -> set[str]:
    cfg = composed(*overrides)
    env_cfg, protocol = cfg["env"], cfg["protocol"]
    try:
        env = registry.get("env", env_cfg["name"])({k: v for k, v in env_cfg.items() if k not in ("name", "roles")}, seed=0)
    except DataMissingError as missing:
        pytest.skip(f"benchmark data not found ({missing}); ../shared/data holds it")
    roles = env_cfg["roles"]
    active = {"train": True, "validation": protocol["validate_every_epoch"], "test": protocol["test_at_end"]}
    ids = set()
    for role, splits in roles.items():
        if splits is None or not active[role]:
            continue
        skip, limit = (protocol.get("skip_tasks") or {}).get(role, 0), (protocol.get("max_tasks") or {}).get(role)
        for split in [splits] if isinstance(splits, str) else splits:
            tasks = env.tasks(split)[skip:]
            ids |= {t.id for t in (tasks[:limit] if limit else tasks)}
    return ids


def test_the_mmlu_survey_plays_no_question_the_mmlu_study_learns_from_or_scores():
    survey = task_ids("+experiment=mmlu_survey", "env.subjects=[marketing]")
    study = task_ids("+experiment=critique_real_world")
    assert len(survey) == 41 and len(study) == 25 + 120  # 1 dev question + 40 held-aside test questions
    assert not survey & study


def test_the_llb_db_pilot_plays_no_task_the_llb_db_study_learns_from_or_scores():
    pilot = task_ids("+experiment=llb_db_pilot")
    study = task_ids("+experiment=llb_db_methods")
    assert len(pilot) == 24 and len(study) == 30 + 50 + 50
    assert not pilot & study
