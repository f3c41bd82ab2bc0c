"""One run, as data flows: config -> env, method, actor, guard -> batches -> episodes.jsonl.

The schedule (the run's protocol, memrl_bench/protocols) fixes every batch in advance, so the episode log
is always a prefix of it and a re-run of the same command resumes: complete batches
are skipped, learn() is replayed from the log after the last memory checkpoint, and
the rest is played.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from memrl_bench import protocols
from memrl_bench.actors.base import Actor, EnvPool, Job
from memrl_bench.core import interrupts, registry
from memrl_bench.core import metrics as metrics_lib
from memrl_bench.core.config import (
    CheckedConfig,
    ConfigError,
    ConfigMismatchError,
    cache_root,
    config_error,
    config_hash,
    named_part,
    upgrade,
    validate_config,
)
from memrl_bench.core.records import episode_records, memory_items
from memrl_bench.core.redaction import remember_key_variable, remember_url, scrub, scrub_data
from memrl_bench.core.runfolder import (
    MAX_SMALL_FILE_BYTES,
    REBUILD_HINT,
    SCHEDULE_EPISODES,
    CorruptRunFolderError,
    RunFolder,
    batch_key,
    forget_new,
    note_new,
    read_regular,
)
from memrl_bench.core.schema import Episode, ManifestRecord, MetricsRecord, Outcome, Retrieval, Task, Usage
from memrl_bench.core.transcripts import TRANSCRIPTS_FORMAT, TranscriptLog, transcript_record
from memrl_bench.core.vector_index import unit_rows
from memrl_bench.envs.base import Env, NoisyRewards
from memrl_bench.envs.sandbox import SandboxSettingError, hidden_for_this_process, hide_from_sandboxes
from memrl_bench.llm import ChatModel
from memrl_bench.llm.embedders import Embedder, make_embedder
from memrl_bench.methods.base import Experience, LearnResult, MemoryMethod, MethodContext, Query, fingerprint
from memrl_bench.protocols import EPISODE_TAGS, FLIPPED, Batch, Protocol, ProtocolViolation, role_splits, split_hash
from memrl_bench.protocols.base import check_backbone, check_disjoint
from memrl_bench.protocols.retry import Chain, Retrier
from memrl_bench.protocols.retry import labels as retry_labels
from memrl_bench.runner.progress import Progress, make_progress


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in (
        "memrl-bench",
        "numpy",
        "pandas",
        "hydra-core",
        "openai",
        "faiss-cpu",
        "pydantic",
        "xllamacpp",
        "onnxruntime",
        "textworld-express",
        "alfworld",
    ):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return versions


@dataclass
class RunParts:
    env: Env
    method: MemoryMethod
    actor: Actor
    protocol: Protocol
    roles: dict[str, Any]
    tasks: dict[str, list[Task]]
    labels: list[str]
    llm: Any
    embedder: Any
    memory_llm: Any = None  # the writer of memory calls when it is not the acting model (memory_llm=local|openai)
    retrier: Retrier | None = None  # protocol.retries >= 1: plays failed episodes again (memrl_bench/protocols/retry.py)


RESULTS_DIRS = "results_dirs.txt"  # in cache_root(): the results folders runs with this cache named, one a line


def hide_what_the_run_writes(cfg: dict, run_dir: Path) -> None:
    """The results folder (the run's own, when the config names none), the run's own folder where it lies outside that
    (`hydra.run.dir` elsewhere: its episodes were readable by its own sandboxes, 57b), the caches this run writes and the
    run it transfers from, shown empty in its sandboxes with the default hidden folders: one outside those was readable by
    the model's commands and programs, other runs' logs and transcripts with it (43b); and so is every results folder
    another run with this cache named (a concurrent run's, an earlier study's, a sweep's earlier job's: 44b), which
    cache_root()/results_dirs.txt lists."""
    caches = [cfg.get(part) or {} for part in ("llm", "memory_llm", "embedder")]
    paths = [p for p in (c.get("cache_path") for c in caches if isinstance(c, dict)) if isinstance(p, str) and p]
    results = cfg.get("results_dir")
    results = os.path.realpath(results if isinstance(results, str) and results else run_dir)
    run = os.path.realpath(run_dir)
    written = [results] if run == results or run.startswith(results + "/") else [results, run]
    source = (cfg.get("protocol") or {}).get("transfer_from")
    try:
        hide_from_sandboxes(
            *written, cache_root(), *(Path(p).parent for p in paths), *([source] if isinstance(source, str) and source else [])
        )
    except SandboxSettingError as err:
        raise ConfigError(f"results_dir, the run folder (hydra.run.dir), a cache_path or protocol.transfer_from: {err}") from err
    listed = cache_root() / RESULTS_DIRS
    try:
        # A folder's name in the bytes the system gives (one not UTF-8 was a traceback: 45b), never through a link (the
        # line went into the file a link named: 45b)
        if listed.is_symlink():
            raise CorruptRunFolderError("a symbolic link, which no run writes; it was put there by hand")
        known = [os.fsdecode(line) for line in read_regular(listed, MAX_SMALL_FILE_BYTES).splitlines()] if listed.exists() else []
        # one under a default hidden folder needs no line
        lines = b"".join(os.fsencode(f) + b"\n" for f in written if f not in known and f in hidden_for_this_process())
        if lines:
            listed.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(listed, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            try:
                os.write(descriptor, lines)  # one short write: runs appending at once do not mix lines
            finally:
                os.close(descriptor)
    except (OSError, CorruptRunFolderError) as err:
        print(f"memrl-bench: warning: {listed}: {err}; other runs' results folders are not hidden from the sandbox", file=sys.stderr)
        return
    for other in known:
        with contextlib.suppress(SandboxSettingError):  # a line no run wrote (it would have been refused as its results_dir)
            if other.startswith("/") and os.path.isdir(other):
                hide_from_sandboxes(other)


class Runner:
    """One run into `run_dir`. `llm`, `embedder` and `memory_llm`, when given, are used instead of the
    ones the config names (which it still records): a caller's ChatModel or Embedder, such as a
    test's scripted model (`memory_llm` serves memory calls only when the config has a memory_llm group)."""

    def __init__(
        self,
        cfg: dict,
        run_dir: Path,
        llm: ChatModel | None = None,
        embedder: Embedder | None = None,
        memory_llm: ChatModel | None = None,
    ):
        self.cfg = cfg
        self.folder = RunFolder(run_dir)
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(interrupts.quiet_about_interrupted_tasks)
        self._key_cache: dict[str, np.ndarray] = {}
        self._given_llm, self._given_embedder, self._given_memory_llm = llm, embedder, memory_llm
        self.transcripts = TranscriptLog(run_dir, enabled=bool(cfg.get("transcripts", True)))

    # ---- building ---------------------------------------------------------------
    def _build(self, stack: contextlib.ExitStack, protocol: Protocol, checked: CheckedConfig) -> RunParts:
        """The run's parts: each built from the part validate_config found and its typed settings."""
        cfg = self.cfg
        backbones = check_backbone(cfg.get("llm", {}), protocol.settings) + check_backbone(
            cfg.get("memory_llm") or {}, protocol.settings, "memory_llm"
        )
        labels = protocol.run_labels() + retry_labels(protocol.settings) + sorted(set(backbones))

        hide_what_the_run_writes(cfg, self.folder.path)
        env = checked.env.cls(checked.env.settings)
        stack.callback(env.close)
        labels += list(env.labels)
        roles = protocol.roles(dict(cfg["env"].get("roles") or env.default_roles))
        tasks: dict[str, list[Task]] = {}
        role_of: dict[str, str] = {}
        for role in roles:
            for split in role_splits(roles, role):
                if split in role_of:
                    raise ProtocolViolation(
                        f"env.roles: split {split!r} plays both {role_of[split]!r} and {role!r}; the splits overlap, and held-out "
                        "evaluation needs them disjoint"
                    )
                role_of[split] = role
                if (
                    role == "test" and split in EPISODE_TAGS and (split != "validation" or roles.get("validation"))
                ):  # Batch.episode_id names a test episode by its split
                    raise ConfigError(
                        f"env.roles.test: split {split!r} cannot play test: its episodes would take the ids of the {split} phase's; give "
                        "test other splits"
                    )
                if split not in env.splits():
                    raise ConfigError(
                        f"env.roles.{role}: split {split!r} does not exist in env {env.name!r}; valid: {', '.join(env.splits())}"
                    )
                skip, limit = protocol.settings.skip_tasks.get(role, 0), protocol.settings.max_tasks.get(role)
                tasks[split] = env.tasks(split)[skip:][:limit] if limit else env.tasks(split)[skip:]
                if not tasks[split]:
                    raise ConfigError(f"env {env.name!r} split {split!r} (role {role}) has no tasks")
        check_disjoint(tasks)
        protocol.check_tasks(env, tasks, roles)

        llm_cfg = cfg.get("llm") or {"name": "none"}
        llm = self._given_llm or stack.enter_context(checked.llm.cls(llm_cfg))
        writer = None  # memory_llm=same: the acting model serves memory calls
        if checked.memory_llm is not None:  # its server starts and stops with the run's, on the same stack
            writer = self._given_memory_llm or stack.enter_context(checked.memory_llm.cls(cfg["memory_llm"]))
        memory_model = llm if writer is None else writer  # what memory writes, reflections and judgements call
        embedder = self._given_embedder or make_embedder(checked.embedder.settings)
        method_cfg = {k: v for k, v in cfg["method"].items() if k != "name"}
        method_cls = named_part("method", cfg["method"].get("name"), "method.name")
        if method_cfg.get("retrieval_granularity") == "step" and not method_cls.retrieves_steps():
            step_methods = ", ".join(n for n in registry.names("method") if registry.get("method", n).retrieves_steps())
            raise ConfigError(
                f"method.retrieval_granularity=step: method {method_cls.name!r} has no step-level retrieval (retrieve_step); "
                f"methods with it: {step_methods}"
            )
        ctx = MethodContext(
            seed=int(cfg.get("seed", 0)),
            embed=embedder.embed if embedder else None,
            llm=memory_model,
            run=self.loop.run_until_complete,
        )
        try:
            method = method_cls(method_cfg, ctx)
        except ValidationError as err:
            raise config_error(err, "method") from None
        if method_cfg and not isinstance(getattr(method, "config", None), BaseModel):  # a method without settings
            raise ConfigError(f"method.{sorted(method_cfg)[0]}: method {method.name!r} has no settings")
        labels += list(method.labels)
        actor_cls = checked.actor.cls
        if actor_cls.needs_llm and llm is None:
            raise ConfigError(f"env {env.name!r} is played by an LLM: set llm=local or llm=openai (llm=none only suits the synthetic env)")
        actor = actor_cls(llm, checked.actor.settings, transcripts=self.transcripts.enabled)
        if method.step_level and getattr(actor.cfg, "prompt", None) == "memrl_alfworld":
            raise ConfigError(
                "method.retrieval_granularity=step: actor.prompt=memrl_alfworld shows one memory block an episode; use actor.prompt=harness"
            )
        retrier = None
        if protocol.settings.retries:
            retrier = Retrier(protocol.settings, memory_model, env.grades_in_observation, self.loop.run_until_complete)
        return RunParts(env, method, actor, protocol, roles, tasks, labels, llm, embedder, writer, retrier)

    def _manifest(self, parts: RunParts, config: dict, digest: str, schedule: list[Batch]) -> dict:
        """manifest.json's content, checked against its schema (ManifestRecord; the protocol's entries its own)."""
        own = parts.protocol.manifest()
        return ManifestRecord.checked(
            scrub_data(
                {
                    **own,
                    "config": config,
                    "config_hash": digest,
                    "git_commit": _git_commit(),
                    "versions": _versions(),
                    "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
                    "labels": parts.labels,
                    "env": {"name": parts.env.name, "splits": parts.env.splits(), "roles": parts.roles, "excluded": parts.env.excluded()},
                    "split_hashes": {split: split_hash(t) for split, t in parts.tasks.items()},
                    "split_sizes": {split: len(t) for split, t in parts.tasks.items()},
                    SCHEDULE_EPISODES: sum(b.size for b in schedule),  # what a COMPLETE log holds (RunFolder.verify_complete)
                    "model": getattr(parts.llm, "identity", None),
                    **({"memory_model": getattr(parts.memory_llm, "identity", None)} if parts.memory_llm is not None else {}),
                    "embedder": getattr(parts.embedder, "identity", None) or ("env_intent" if parts.embedder is None else None),
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "transcripts_format": TRANSCRIPTS_FORMAT,
                }
            ),
            own=tuple(own),
        )

    # ---- keys ---------------------------------------------------------------------
    def keys_for(self, tasks: list[Task], embedder: Any) -> np.ndarray:
        """Unit key vectors of the tasks, cached by id and description (a drift change may rename what a task says)."""
        missing = [t for t in tasks if (t.id, t.description) not in self._key_cache]
        if missing:
            if embedder is None:
                if any(t.intent is None for t in missing):
                    raise ConfigError("embedder=env_intent needs an env that supplies intent vectors; use embedder=minilm for text tasks")
                vectors = unit_rows(np.array([t.intent for t in missing], dtype=np.float32))
            else:
                vectors = unit_rows(embedder.embed([t.description for t in missing]))
            for t, v in zip(missing, vectors):
                self._key_cache[t.id, t.description] = v
        return np.stack([self._key_cache[t.id, t.description] for t in tasks])

    # ---- running ------------------------------------------------------------------
    def run(self) -> dict:
        """Run or resume, holding the folder's lock; a failed start leaves nothing it created."""
        interrupts.keep_dropped_interrupts()
        note_new(self.folder.path)  # before the lock creates it (the CLI noted it before Hydra did)
        try:
            with self.folder.lock():
                try:
                    return self._run()
                except BaseException:
                    self.folder.remove_if_created()
                    raise
        finally:
            forget_new(self.folder.path)

    def _run(self) -> dict:
        _remember_secrets(self.cfg)  # before a check quotes a refused value that holds one (47b, 53b)
        checked = validate_config(self.cfg)
        protocol = protocols.build(self.cfg.get("protocol") or {})
        written = scrub_data(self.cfg)  # what the folder records, and what its hash is of
        digest = config_hash(written)
        existing = self.folder.read_manifest()
        if existing and digest not in (existing.get("config_hash"), config_hash(upgrade(existing.get("config") or {}))):
            raise ConfigMismatchError(
                f"{self.folder.path} holds a run with config hash {existing.get('config_hash', '?')[:12]}, this command's is "
                f"{digest[:12]}: "
                "refusing to mix them; use another results_dir / experiment_name or delete the folder"
            )
        if self.folder.is_complete():
            self.folder.verify_complete(existing)
            print(f"memrl-bench: {self.folder.path} is complete; nothing to do")
            return self.folder.read_metrics() or {}
        protocol.start(written, existing)
        with contextlib.ExitStack() as stack:
            stack.callback(interrupts.close_event_loop, self.loop)
            parts = self._build(stack, protocol, checked)
            schedule = protocol.schedule(parts.roles, parts.tasks, int(self.cfg.get("task_order_seed", self.cfg.get("seed", 0))), parts.env)
            if not existing:
                self.folder.write_manifest(self._manifest(parts, written, digest, schedule))
                self._write_hydra_config(written)
            self._play(parts, schedule)
            records = episode_records(self.folder.read_episodes(), self.folder.episodes_path)
            protocol.audit(parts.method.items(), {r.episode_id for r in records if r.phase == "train"}, parts.roles)
            final = self.folder.save_snapshot("final", parts.method.snapshot)
            items = memory_items(final)
            scheduled = [r for r in records if r.first_attempt]  # a protocol's own blocks: of its schedule's episodes, not retries
            metrics = metrics_lib.compute(records, items, labels=parts.labels) | protocol.metrics(scheduled, items, parts.roles)
            for line in metrics_lib.similarity_warnings(metrics.get("retrieval_similarity", {})):
                print(line, file=sys.stderr)
            self.folder.write_metrics(MetricsRecord.checked(metrics, own=protocol.metrics_keys))
            interrupts.raise_if_interrupted()
            self.folder.mark_complete()
            return metrics

    def _play(self, parts: RunParts, schedule: list[Batch]) -> None:
        sizes = {b.key: b.size for b in schedule}
        logged = self.folder.truncate_to_batches(sizes.get)
        self.transcripts.keep_only(logged)
        by_batch: dict[tuple, list[dict]] = {}
        for record in logged:
            by_batch.setdefault(batch_key(record), []).append(record)
        logged_keys = [b.key for b in schedule if b.key in by_batch]
        if logged_keys != [b.key for b in schedule[: len(logged_keys)]]:
            raise CorruptRunFolderError(f"{self.folder.episodes_path} is not a prefix of this run's schedule")
        done = len(logged_keys)
        initial = parts.protocol.initial_memory()
        if initial is not None:  # the transfer protocol: memory starts as the source left it (verified when it started)
            parts.method.restore(initial)
        position = self._restore(parts.method, schedule, done)
        pool = EnvPool(parts.env, size=int(self.cfg.get("llm", {}).get("max_concurrency", 1) or 1))
        progress = self._progress(sum(b.size for b in schedule), sum(b.size for b in schedule[:done]))
        last_checkpoint = time.monotonic()
        phase_fingerprint: str | None = None
        scratch = self.folder.path / "memory" / ".fingerprint"
        for i, batch in enumerate(schedule):
            is_train = batch.phase == "train"
            epoch_ends = is_train and _phase_ends(schedule, i)
            if i < done:
                if is_train and i >= position:  # memory after the last checkpoint: replay learn from the log
                    episodes = final_attempts([Episode.from_dict(r) for r in by_batch[batch.key]])  # as learn() saw them when played
                    by_id = {t.id: t for t in batch.tasks}  # the batch's own versions (a drift change alters tasks)
                    tasks = [by_id[e.task_id] for e in episodes]
                    parts.method.learn(self._experiences(episodes, tasks, parts))
                if epoch_ends and i >= position - 1 and self.folder.snapshot_path(f"epoch_{batch.epoch}") is None:
                    # a crash came while this epoch's snapshot was written; memory is at that point now
                    self.folder.save_snapshot(f"epoch_{batch.epoch}", parts.method.snapshot)
                continue
            interrupts.raise_if_interrupted()
            if not is_train and phase_fingerprint is None:
                phase_fingerprint = fingerprint(parts.method, scratch)
            records = self._play_batch(parts, batch, pool)
            self.folder.append_episodes(records)
            progress.update(records)
            if epoch_ends:  # before the checkpoint: a checkpoint past an epoch's end means its snapshot exists
                self.folder.save_snapshot(f"epoch_{batch.epoch}", parts.method.snapshot)
            if is_train and (epoch_ends or time.monotonic() - last_checkpoint >= parts.protocol.settings.checkpoint_interval_s):
                self.folder.save_snapshot("checkpoint", parts.method.snapshot, {"batches_done": i + 1, **self.folder.log_position()})
                last_checkpoint = time.monotonic()
            if not is_train and _phase_ends(schedule, i):
                if fingerprint(parts.method, scratch) != phase_fingerprint:
                    raise ProtocolViolation(
                        f"memory changed during the {batch.phase} phase on split {batch.split!r} (epoch {batch.epoch}): "
                        f"method {parts.method.name!r} must not learn or mutate memory outside training"
                    )
                phase_fingerprint = None
        progress.close()
        pool.close()

    def _restore(self, method: MemoryMethod, schedule: list[Batch], done: int) -> int:
        """Verify the snapshots a resume relies on and restore the checkpoint; the batches it covers."""
        path = self.folder.snapshot_path("checkpoint")
        position = 0
        if path is not None:
            self.folder.verify_snapshot(path)
            try:
                meta = json.loads((path / "position.json").read_text())
                position = int(meta["batches_done"])
                method.restore(path)
            except Exception as err:  # a snapshot that matches its checksums yet cannot be restored (written by another version)
                raise CorruptRunFolderError(f"{path} cannot be restored ({type(err).__name__}: {err}); {REBUILD_HINT}") from None
            self.folder.verify_log_position(path, meta)  # this run's, not another's (whole in itself)
            if position > done:
                raise CorruptRunFolderError(
                    f"{path} is past the end of {self.folder.episodes_path} ({position} batches, the log {done}); {REBUILD_HINT}"
                )
        for i, batch in enumerate(schedule[:done]):
            if batch.phase != "train" or not _phase_ends(schedule, i):
                continue
            snapshot = self.folder.snapshot_path(f"epoch_{batch.epoch}")
            if snapshot is not None:
                self.folder.verify_snapshot(snapshot)
            elif i < position - 1:  # memory is past that epoch: it cannot be written again
                raise CorruptRunFolderError(f"{self.folder.path / 'memory' / f'epoch_{batch.epoch}'} is missing; {REBUILD_HINT}")
        return position

    def _progress(self, total: int, initial: int) -> Progress:
        """A bar on a terminal; log lines (episodes/s, LLM calls, retries, ETA) when stderr is not one."""
        return make_progress(total, initial, self.folder.path.name, enabled=bool(self.cfg.get("progress", True)))

    def _experiences(
        self, episodes: list[Episode], tasks: list[Task], parts: RunParts, retrievals: list[Retrieval] | None = None
    ) -> list[Experience]:
        """What learn() sees: each episode (its success as the protocol's learning signal gives it, e.g. flipped
        where the repair protocol corrupts it, then through the env's reward noise) with its task, the task's key
        (keys are cached) and, when it was just played, its retrieval. The log keeps the true success."""
        keys = self.keys_for(tasks, parts.embedder)
        learned = [e if e.status == "poison" else _as_learned(e, parts) for e in episodes]
        graded = parts.env.grades_in_observation
        return [Experience(e, t, k, r, graded) for e, t, k, r in zip(learned, tasks, keys, retrievals or [None] * len(episodes))]

    def _play_batch(self, parts: RunParts, batch: Batch, pool: EnvPool) -> list[dict]:
        started = time.time()
        if batch.poison:
            episodes = parts.protocol.unplayed_episodes(batch, parts.env)
            result = parts.method.learn(self._experiences(episodes, list(batch.tasks), parts))
            memory_calls = {e.episode_id: [] for e in episodes}
            _charge(result, episodes, memory_calls, parts.method.name)
            records = self._finish(parts, episodes, started)
            self.transcripts.append(
                [transcript_record(r, [], memory_calls[r["episode_id"]], result.ops_by_episode.get(r["episode_id"], [])) for r in records]
            )
            return records
        tasks = [t for t in batch.tasks for _ in range(batch.samples)]
        samples = [s for _ in batch.tasks for s in range(batch.samples)]
        positions = [p for p in range(len(batch.tasks)) for _ in range(batch.samples)]
        ids = [batch.episode_id(p, s) for p, s in zip(positions, samples)]
        keys = self.keys_for(tasks, parts.embedder)
        t0 = time.perf_counter()
        retrievals = parts.method.retrieve_batch([Query(t, k, e, batch.phase) for t, k, e in zip(tasks, keys, ids)])
        retrieve_s = (time.perf_counter() - t0) / len(tasks)
        jobs = [Job(t, r, e, batch.phase, batch.epoch, s) for t, r, e, s in zip(tasks, retrievals, ids, samples)]
        if parts.method.step_level:  # the actor asks memory again before each step after the first, by its observation
            for job, key in zip(jobs, keys):
                job.step_retrieval = partial(parts.method.retrieve_step, Query(job.task, key, job.episode_id, batch.phase))
        outcomes: list[Outcome] = self.loop.run_until_complete(parts.actor.play_batch(jobs, pool))
        if parts.llm is not None and any(o.status == "llm_error" for o in outcomes):
            parts.llm.confirm_up()  # a server that is down stops the run before the batch is logged
        episodes = [
            self._episode(batch, job, retrieval, outcome, position, retrieve_s)
            for job, retrieval, outcome, position in zip(jobs, retrievals, outcomes, positions)
        ]
        memory_calls = {e.episode_id: list(r.memory_calls) for e, r in zip(episodes, retrievals)}
        finals = episodes  # what learn() sees: each scheduled episode's last attempt
        if parts.retrier is not None and parts.retrier.applies(batch.phase):
            chains = self._retry(parts, batch, jobs, retrievals, episodes, outcomes, positions, pool, memory_calls)
            finals = [chain.attempts[-1] for chain in chains]
            episodes = [e for chain in chains for e in chain.attempts]
            outcomes = [o for chain in chains for o in chain.outcomes]
        for e in episodes:
            if e.task_id in batch.flipped:  # logged with its true success; learn() sees it flipped
                e.info[FLIPPED] = True
        memory_ops: dict[str, list[dict]] = {}
        if batch.phase == "train":
            t0 = time.perf_counter()
            result = parts.method.learn(self._experiences(finals, tasks, parts, retrievals))
            _charge(result, finals, memory_calls, parts.method.name)
            learn_s = (time.perf_counter() - t0) / len(finals)
            for e in finals:
                e.latency_s["learn"] = learn_s
            memory_ops = result.ops_by_episode
        records = self._finish(parts, episodes, started)
        # before the batch reaches the log, so that every logged episode has its transcript
        self.transcripts.append(
            [
                transcript_record(r, o.info.get("transcript", []), memory_calls[r["episode_id"]], memory_ops.get(r["episode_id"], []))
                for r, o in zip(records, outcomes)
            ]
        )
        return records

    def _retry(
        self,
        parts: RunParts,
        batch: Batch,
        jobs: list[Job],
        retrievals: list[Retrieval],
        episodes: list[Episode],
        outcomes: list[Outcome],
        positions: list[int],
        pool: EnvPool,
        memory_calls: dict[str, list[dict]],
    ) -> list[Chain]:
        """protocol.retries: each episode whose verdict is a failure played again (shown the retry's note on top of its
        memory block), up to `retries` more times; every attempt a record of its own, the verdict and reflection calls
        charged to the attempt they judged. The chains in the order of `episodes`."""
        retrier = parts.retrier
        assert retrier is not None
        chains = [Chain([e], [o], notes=[""]) for e, o in zip(episodes, outcomes)]
        calls = retrier.calls()
        run = self.loop.run_until_complete
        open_ = list(range(len(chains)))
        for attempt in range(1, retrier.most):
            verdicts = run(_gathered(*(retrier.succeeded(calls, chains[i].attempts[-1], jobs[i].task) for i in open_)))
            for i, ok in zip(open_, verdicts):
                chains[i].verdicts.append(ok)
            open_ = [i for i, ok in zip(open_, verdicts) if not ok]
            if not open_:
                break
            notes = run(_gathered(*(retrier.note(calls, chains[i], jobs[i].task) for i in open_)))
            again = [
                Job(
                    jobs[i].task,
                    dataclasses.replace(retrievals[i], prompt_block="\n\n".join(b for b in (retrievals[i].prompt_block, note) if b)),
                    f"{jobs[i].episode_id}-a{attempt}",
                    batch.phase,
                    batch.epoch,
                    jobs[i].sample_index,
                )
                for i, note in zip(open_, notes)
            ]
            for i, job in zip(open_, again):
                if jobs[i].step_retrieval is not None:  # a step retrieval charged to this attempt
                    job.step_retrieval = partial(
                        parts.method.retrieve_step,
                        Query(job.task, self.keys_for([job.task], parts.embedder)[0], job.episode_id, batch.phase),
                    )
            played: list[Outcome] = run(parts.actor.play_batch(again, pool))
            if parts.llm is not None and any(o.status == "llm_error" for o in played):
                parts.llm.confirm_up()
            for i, job, note, outcome in zip(open_, again, notes, played):
                shown = dataclasses.replace(retrievals[i], usage=Usage(), memory_calls=[])  # retrieved once, shown again: not charged again
                episode = self._episode(batch, job, shown, outcome, positions[i], 0.0)
                episode.attempt = attempt
                chains[i].attempts.append(episode)
                chains[i].outcomes.append(outcome)
                chains[i].notes.append(note)
                memory_calls[episode.episode_id] = []
        result = calls.result()
        for chain in chains:
            chain.verdicts += [None] * (len(chain.attempts) - len(chain.verdicts))
            for n, (episode, verdict, note) in enumerate(zip(chain.attempts, chain.verdicts, chain.notes)):
                episode.attempt = n
                used = result.usage_by_episode.get(episode.episode_id, Usage())
                episode.memory_usage.add(used)
                episode.memory_op_errors += result.op_errors_by_episode.get(episode.episode_id, 0)
                memory_calls[episode.episode_id] += result.calls_by_episode.get(episode.episode_id, [])
                episode.info["retry"] = {
                    **({"attempts": len(chain.attempts)} if n == 0 else {}),
                    "verdict": verdict,
                    "verdict_by": retrier.settings.verdict,
                    "note_chars": len(note),
                    "call_tokens": used.prompt_tokens + used.completion_tokens,
                }
        return chains

    def _finish(self, parts: RunParts, episodes: list[Episode], started: float) -> list[dict]:
        stats = parts.method.stats()
        for e in episodes:
            e.memory_items_after, e.memory_bytes_after, e.memory_groups_after = stats.items, stats.bytes, stats.groups
            e.wall_time = started
        return [e.to_dict() for e in episodes]

    def _episode(self, batch: Batch, job: Job, retrieval, outcome: Outcome, position: int, retrieve_s: float) -> Episode:
        return Episode(
            episode_id=job.episode_id,
            task_id=job.task.id,
            split=batch.split,
            phase=batch.phase,  # type: ignore[arg-type]
            epoch=batch.epoch,
            batch_index=batch.index,
            order_index=batch.first_order_index + position,
            sample_index=job.sample_index,
            success=bool(outcome.success),
            reward=float(outcome.reward),
            status=outcome.status,
            error=scrub(outcome.error) if outcome.error else outcome.error,  # a message may quote a URL or a key
            turns=outcome.turns,
            retrieved=retrieval.items,
            candidates=retrieval.candidates,
            injected_chars=len(retrieval.prompt_block),
            act_usage=outcome.usage,
            memory_usage=dataclasses.replace(retrieval.usage),
            latency_s={"retrieve": retrieve_s, **outcome.latency_s},
            info={
                **{k: v for k, v in outcome.info.items() if k != "transcript"},
                **({"retrieval": retrieval.info} if retrieval.info else {}),
            },
        )

    def _write_hydra_config(self, config: dict) -> None:
        """The resolved config, in the .hydra/ folder Hydra users look in."""
        hydra_dir = self.folder.path / ".hydra"
        hydra_dir.mkdir(exist_ok=True)
        from omegaconf import OmegaConf

        (hydra_dir / "config.yaml").write_text(OmegaConf.to_yaml({k: v for k, v in config.items() if k != "hydra"}))
        overrides = config.get("hydra", {}).get("overrides", [])
        (hydra_dir / "overrides.yaml").write_text(OmegaConf.to_yaml(list(overrides)))


def _as_learned(episode: Episode, parts: RunParts) -> Episode:
    """The episode as learn() sees it: a copy with reward 1.0 / 0.0 when its learned success
    differs from the logged one, else the episode itself."""
    success = parts.protocol.learning_signal(episode)
    if isinstance(parts.env, NoisyRewards):
        success = parts.env.learned_success(episode.episode_id, success)
    return episode if success == episode.success else dataclasses.replace(episode, success=success, reward=float(success))


def final_attempts(episodes: list[Episode]) -> list[Episode]:
    """A batch's logged episodes as learn() sees them: each scheduled episode's last attempt (protocol.retries logs a
    scheduled episode's retries right after it; without retries every episode is its own last attempt)."""
    return [e for e, after in zip(episodes, [*episodes[1:], None]) if after is None or after.first_attempt]


async def _gathered(*calls: Any) -> list[Any]:
    """The calls' results, in order, run concurrently on the loop that awaits this (the runner's own)."""
    return list(await asyncio.gather(*calls))


def _phase_ends(schedule: list[Batch], i: int) -> bool:
    """Whether batch i is the last of its phase (train, validation, test or replay) in its epoch."""
    here = schedule[i]
    # a replay phase interrupts a stream's training, it does not end it
    after = next((schedule[j] for j in range(i + 1, len(schedule)) if not (here.phase == "train" and schedule[j].phase == "replay")), None)
    return after is None or (after.phase, after.split, after.epoch) != (here.phase, here.split, here.epoch)


def _remember_secrets(cfg: dict) -> None:
    """The API keys the groups name (api_key_env, whether or not their part uses one), and URL userinfo, for redaction."""
    for group in ("llm", "memory_llm", "embedder"):
        part = cfg.get(group)
        remember_key_variable(part.get("api_key_env", "OPENAI_API_KEY") if isinstance(part, dict) else "OPENAI_API_KEY")
    todo = [cfg]  # not yet checked: any nesting, any type
    while todo:
        value = todo.pop()
        if isinstance(value, str):
            remember_url(value)
        else:
            todo += value.values() if isinstance(value, dict) else value if isinstance(value, list) else []


def _charge(result: LearnResult, episodes: list[Episode], memory_calls: dict[str, list[dict]], method: str) -> None:
    """learn()'s memory cost and operation errors onto the episodes it charged them to, its calls onto their transcripts (the
    memories the poison protocol feeds unplayed too: their cost was left out of the log, their calls not). Cost charged to
    an episode outside the learned batch would be lost from the log: refused."""
    stray = {*result.usage_by_episode, *result.op_errors_by_episode, *result.calls_by_episode} - {e.episode_id for e in episodes}
    if stray:
        raise ProtocolViolation(
            f"method {method!r}: learn() charged memory calls to {sorted(stray)[0]!r}, which is not an episode of the batch it "
            "learned from; charge each call to an episode of the batch (its cost would be lost from the log)"
        )
    for e in episodes:
        if e.episode_id in result.usage_by_episode:
            e.memory_usage.add(result.usage_by_episode[e.episode_id])
        e.memory_op_errors += result.op_errors_by_episode.get(e.episode_id, 0)
        memory_calls[e.episode_id] += result.calls_by_episode.get(e.episode_id, [])


def run(
    cfg: dict, run_dir: Path, llm: ChatModel | None = None, embedder: Embedder | None = None, memory_llm: ChatModel | None = None
) -> dict:
    """Run (or resume) one configured run into `run_dir`; return its metrics (`llm`, `embedder`, `memory_llm`: see Runner)."""
    return Runner(cfg, run_dir, llm, embedder, memory_llm).run()
