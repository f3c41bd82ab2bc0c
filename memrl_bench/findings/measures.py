"""The measures of one run the claims compare, computed from its typed records (memrl_bench.core.records).

Every run gets its SRs, the injection spread and the epoch-1 lock-in; a drift run the drift
block's numbers (memrl_bench/protocols/drift.py); a synthetic run those that need the simulation's ground
truth (which memories are good or harmful, their true utility, an oracle's regret).
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import lru_cache
from typing import Any

import numpy as np

from memrl_bench.core import metrics
from memrl_bench.core.records import RunRecords
from memrl_bench.core.schema import Episode, ManifestRecord
from memrl_bench.envs.base import Env
from memrl_bench.llm import ESTIMATE_BYTES_PER_TOKEN
from memrl_bench.protocols import drift
from memrl_bench.protocols.drift import DriftSettings


@lru_cache(maxsize=16)
def _env(env_json: str) -> Any:
    from memrl_bench.core import registry

    cfg = json.loads(env_json)
    return registry.get("env", cfg["name"])({k: v for k, v in cfg.items() if k not in ("name", "roles")}, seed=int(cfg.get("seed", 0) or 0))


OUT_OF_DISTRIBUTION = "out_of_distribution"  # a split whose name holds this is another distribution (ALFWorld, synthetic)


def test_splits(manifest: ManifestRecord) -> tuple[str, ...]:
    """The splits a claim's "test SR" is measured on, pooled: every split playing the test role in the run but the
    out-of-distribution ones (synthetic, ALFWorld: test_in_distribution; LLB-DB with both halves of db_val playing test:
    both); a manifest without its env's roles: the harness's default roles'."""
    test = (manifest.env.roles if manifest.env and manifest.env.roles else Env.default_roles).get("test")
    listed = [test] if isinstance(test, str) else list(test or [])
    return tuple(s for s in listed if OUT_OF_DISTRIBUTION not in s)


Phases = str | tuple[str, ...]


def _last_epoch(records: list[Episode], phases: Phases) -> list[Episode]:
    """The played episodes of the last epoch of `phases` (one phase name, or several pooled)."""
    names = (phases,) if isinstance(phases, str) else phases
    chosen = [r for r in records if r.phase_name in names and r.played]
    last = max((r.epoch for r in chosen), default=None)
    return [r for r in chosen if r.epoch == last]


def _mean_p(records: list[Episode], phases: Phases) -> float | None:
    """Mean P(success) the env reported in the last epoch (synthetic: the expected SR, free of outcome draws)."""
    chosen = [r for r in _last_epoch(records, phases) if "p_success" in r.info]
    return float(np.mean([r.info["p_success"] for r in chosen])) if chosen else None


def last_epoch_outcomes(records: list[Episode], phases: Phases) -> dict[str, float]:
    """Task id -> its success in the last epoch of `phases`, averaged over its samples."""
    by_task: dict[str, list[float]] = defaultdict(list)
    for r in _last_epoch(records, phases):
        by_task[r.task_id].append(float(r.success))
    return {task: float(np.mean(v)) for task, v in sorted(by_task.items())}


def _success_rate(records: list[Episode], phases: Phases) -> float | None:
    """SR of the last epoch of `phases` (several test splits pooled: every episode counts once)."""
    chosen = _last_epoch(records, phases)
    return float(np.mean([r.success for r in chosen])) if chosen else None


def retrieval_cost(records: list[Episode], phases: Phases) -> dict[str, float | None]:
    """Per episode of the last epoch of `phases`, the mean characters of memory injected and seconds spent retrieving: the
    episode's retrieval plus every step's (retrieval_granularity=step: Turn.retrieval, its latency_s["retrieve"]), each block
    counted once; and the acting prompts' tokens (what the model read, a block repeated in later steps' prompts included:
    None where no server counted them, the synthetic world)."""
    episodes = _last_epoch(records, phases)
    if not episodes:
        return {"injected_chars": None, "retrieve_s": None, "prompt_tokens": None}
    chars = [r.injected_chars + sum(t.retrieval.injected_chars for t in r.turns if t.retrieval is not None) for r in episodes]
    seconds = [r.latency_s.get("retrieve", 0.0) + sum((t.latency_s or {}).get("retrieve", 0.0) for t in r.turns) for r in episodes]
    tokens = [r.act_usage.prompt_tokens for r in episodes]
    return {
        "injected_chars": float(np.mean(chars)),
        "retrieve_s": float(np.mean(seconds)),
        "prompt_tokens": float(np.mean(tokens)) if any(tokens) else None,
    }


def _last(by_epoch: dict[int, float] | None) -> float | None:
    """The value of the last epoch."""
    return by_epoch[max(by_epoch)] if by_epoch else None


def run_measures(read: RunRecords, kind: str) -> dict[str, float | None]:
    """The measures of one complete run of evaluation kind `kind` (findings.runs.Run.kind)."""
    records, items, stored, config = read.episodes, read.items, read.metrics, read.manifest.config
    assert stored is not None  # read complete
    sr = stored.success_rate
    test = test_splits(read.manifest)
    out: dict[str, float | None] = {
        "final_sr": _last(sr.get("train")),
        "csr": _last(metrics.cumulative_success_rates(records, "train")),
        "test_sr": _success_rate(records, test),
        "test_expected_sr": _mean_p(records, test),
        "final_expected_sr": _mean_p(records, "train"),
    }
    cost = retrieval_cost(records, test)
    out["test_injected_chars"], out["test_retrieve_s"], out["test_prompt_tokens"] = (
        cost["injected_chars"],
        cost["retrieve_s"],
        cost["prompt_tokens"],
    )
    train = metrics.played_train(records)  # what writing memory cost (the writer's tokens: memory calls charged to an episode)
    out["train_memory_tokens"] = (
        float(np.mean([r.memory_usage.prompt_tokens + r.memory_usage.completion_tokens for r in train])) if train else None
    )
    for name, value in stored.pass_at_k.items():
        if test and name.startswith(f"{test[0]}@"):  # stored per split: the first test split's
            out["test_pass_at_k"] = value
    # A memory is tested when a training episode injects it (only then does its Q change), so
    # the claim counts training injections, not the any-phase share of metrics.json.
    spread = metrics.injection_spread(records, items, ("train",))
    out["never_retrieved"], out["gini"] = spread["never_retrieved"], spread["gini"]
    out["memories"] = float(len(items)) if spread["never_retrieved"] is not None else None  # the final memories it is a share of
    lock = metrics.epoch1_lock_in(records, items)
    out["lock_in"], out["lock_in_bank"] = lock["share"], lock["bank_share"]
    out["lock_in_excess"] = lock["share"] - lock["bank_share"] if lock["share"] is not None else None
    if kind == "drift":
        out |= _drift_measures(records, DriftSettings(**config.get("protocol", {})["drift"]))
    if "synthetic" in read.manifest.labels:
        good = metrics.good_memories_never_retrieved(records, items)
        harmful = metrics.harmful_in_last_epoch(records, items)
        out["good_never_retrieved"], out["good_injection_share"] = good["never_retrieved"], good["injection_share"]
        out["harmful_retrieval_share"], out["harmful_retrieved_share"], out["harmful_bank_share"] = (
            harmful["retrieval_share"],
            harmful["retrieved_share"],
            harmful["bank_share"],
        )
        out["early_amplification"] = metrics.early_amplification(records, items)
        out["spearman_q_utility"] = (stored.synthetic or {}).get("spearman_q_true_utility")
        method = config["method"]
        k = int(method.get("k_select") or method.get("top_k") or 3)
        regret = metrics.oracle_regret(records, _env(json.dumps(config["env"], sort_keys=True)), k)
        out["regret_mean"], out["regret_last_epoch"] = regret["mean"], _last(regret["by_epoch"])
    return out


def _drift_measures(records: list[Episode], setting: DriftSettings) -> dict[str, float | None]:
    """The drift block's numbers (memrl_bench/protocols/drift.py) and the injected tokens per test prompt (as the report's gain against cost
    counts them).
    """
    block = drift.metrics(records, setting)
    by_window = block.get("stale_share_by_window") or [None]
    test = [r for r in records if r.phase == "test"]
    recovery = block["tasks_until_recovery"]
    return {
        "drift_dip": block["sr_dip"],
        "drift_recovery": recovery,
        "drift_never_recovered": float(recovery is None) if block["sr_dip"] is not None else None,
        "drift_post_sr": block["post_sr"],
        "drift_sr_change": block["sr_change"],
        "drift_post_expected_sr": block["post_expected_sr"],
        "drift_stale_share": block.get("stale_share"),
        "drift_stale_last_window": by_window[-1],
        "drift_last_stale_episode": block.get("last_stale_episode"),
        "injected_tokens_test": float(np.mean([-(-r.injected_chars // ESTIMATE_BYTES_PER_TOKEN) for r in test])) if test else None,
        "drift_step_unmatched_before": _unmatched_steps(records, setting.epoch - 1),
        "drift_step_unmatched_after": _unmatched_steps(records, setting.epoch),
    }


def _unmatched_steps(records: list[Episode], epoch: int) -> float | None:
    """Share of a training epoch's step retrievals (retrieval_granularity=step) whose observation joined no cluster of the step
    library (StepRetrieval.cluster None: nothing found by it); None without step retrievals."""
    found = [t.retrieval.cluster is None for r in metrics.played_train(records) if r.epoch == epoch for t in r.turns if t.retrieval]
    return float(np.mean(found)) if found else None
