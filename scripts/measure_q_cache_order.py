"""Measure the official MemRL's completion-order quirk of update_values (issue 28).

What: the official `MemoryService.update_values` (memory_service.py, ~line 793) runs the
batch's Q updates on a ThreadPoolExecutor(max_workers=1) and writes
`self._q_cache[mem_id] = new_q` in `as_completed` order. as_completed hands the futures
already finished when it is called over in set order (arbitrary), so for a memory
injected into several episodes of one batch the cached Q, which retrieve_query reads
before the stored one (~line 1378), can be an intermediate value while the stored Q has
every update. This script measures how much that changes what is retrieved.

How: the official code, unmodified (tests/official_memrl.py stubs MemOS storage, the
embedder and the LLM writer only), with its ALFWorld settings (rl_alf_config.yaml), plays
an ALFWorld-like loop: 6 task families (ALFWorld's task types) of similar tasks (keys:
a shared direction, the family's and the task's own), every training task once per
epoch in a seeded order, batches of 8-32 tasks, and each episode's success drawn in
advance from its family's rate (a fixed seeded rule: it does not depend on what was
retrieved). Every retrieval, then update_values and add_memories per batch, as the
official ALFWorld runner calls them. Each world is played R times in each arm:
  (a) official: as_completed unstubbed, the code as it runs (a wrapper only counts the
      futures already finished when it is called, then hands them to the real one);
  (b) submission: as_completed yields in submission (batch) order, i.e. a repaired cache
      (what memrl_bench's MemRL models).
Whether the quirk can bite depends on thread scheduling: the batch's updates are
submitted in ~1 ms, and the worker thread, which needs the GIL to run them, gets it
only when the main thread waits in as_completed or is made to hand it over (after
sys.getswitchinterval(), 5 ms by default, or as soon as the main thread comes back from
being descheduled by the OS for longer than that mid-submission, on a loaded machine). Only futures finished before
as_completed is called come out in set order, so the cache goes stale only when two
updates of one memory are among them. (a) is therefore also played with the switch
interval at 1 ms and 0.1 ms (the same code; the interpreter hands the GIL over more
often), and (b) at 0.1 ms too.
Per run: the share of retrievals whose selected set (memory ids, order aside) differs
from the default (b) run's at the same place of the same draws, and the first batch
where one differs; the share whose selected set the stale cache changes at that moment
(the same retrieval repeated with the cache repaired; it does not compound); after
every update_values, the memories whose cached Q is not their stored Q (only a memory
updated more than once in the batch can be one); in (a), the futures already finished
when as_completed was called and the memories with two of them. Across the R repeats:
median, min and max, and how many distinct runs (selections and final Q) each arm gave.
Each run is played in its own fresh (spawned) process, one at a time, so no run
inherits another's heap, hash seed or threads. ~2 s per run here.

Command (the numbers in BENCHMARKS.md, "MemRL against the official code"):
    PYTHONPATH=. python scripts/measure_q_cache_order.py --worlds 2 --repeats 10
(the official code from $MEMRL_OFFICIAL_DIR, else ../shared/reference/memrl_official).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

FAMILIES = (
    "pick_and_place",
    "pick_clean_then_place",
    "pick_heat_then_place",
    "pick_cool_then_place",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
)


@dataclass
class World:
    """A seeded loop: task keys and the batches to play (episode id, task text, success)."""

    keys: dict[str, np.ndarray]
    batches: list[list[tuple[str, str, bool]]]


def make_world(seed: int, tasks_per_family: int = 20, epochs: int = 5, batch_sizes: tuple[int, int] = (8, 32), dim: int = 64) -> World:
    """ALFWorld-like: similar tasks in a few families (median cosine ~0.83 within a family, ~0.3
    across), each task once per epoch in a shuffled order, successes drawn from the
    family's rate."""
    rng = np.random.default_rng(seed)
    shared = rng.standard_normal(dim)
    shared /= np.linalg.norm(shared)
    keys, rate = {}, {}
    for family in FAMILIES:
        centre = rng.standard_normal(dim)
        centre /= np.linalg.norm(centre)
        family_rate = float(rng.uniform(0.2, 0.8))
        for i in range(tasks_per_family):
            own = rng.standard_normal(dim) / np.sqrt(dim)
            text = f"{family} {i}"
            keys[text] = (0.6 * shared + 0.8 * centre + rng.uniform(0.3, 0.6) * own).astype(np.float32)
            rate[text] = family_rate
    texts = list(keys)
    batches = []
    for epoch in range(epochs):
        order = [texts[i] for i in rng.permutation(len(texts))]
        while order:
            size = int(rng.integers(batch_sizes[0], batch_sizes[1] + 1))
            batch, order = order[:size], order[size:]
            batches.append([(f"e{epoch}-b{len(batches)}-{j}", text, bool(rng.random() < rate[text])) for j, text in enumerate(batch)])
    return World(keys, batches)


@dataclass
class Run:
    selected: list[frozenset[str]] = field(default_factory=list)  # per retrieval, in play order
    batch_of: list[int] = field(default_factory=list)  # per retrieval
    changed_by_cache: int = 0  # retrievals whose selected set the stale cache changed (the same retrieval, cache repaired)
    repeated: list[int] = field(default_factory=list)  # per batch: memories injected into more than one of its episodes
    finished_at_call: list[int] = field(default_factory=list)  # per batch: futures already finished when as_completed was called
    exposed: list[int] = field(
        default_factory=list
    )  # per batch: memories with two or more of those (the cache can go stale only for these)
    stale: list[int] = field(default_factory=list)  # per batch: memories whose cached Q is not their stored Q after update_values
    stale_once: int = 0  # of those, memories updated only once (should stay 0)
    final_q: dict[str, float] = field(default_factory=dict)  # the Q retrieval reads, after the last batch
    seconds: float = 0.0  # CPU


def stale_cache(official) -> dict[str, float]:
    """Official id -> stored Q of every memory whose cached Q differs from it."""
    cache, items = official.service._q_cache, official.text_memory.items
    return {i: float(items[i].metadata.q_value) for i, q in cache.items() if i in items and q != float(items[i].metadata.q_value)}


def play(world: World, submission_order: bool, switch_interval: float | None = None, user_id: str = "q-cache") -> Run:
    """The world's batches through the official code (ALFWorld settings), in a scratch folder
    (MemoryService writes ./results). `switch_interval` (s): sys.setswitchinterval for the
    run, None for the interpreter's default (5 ms)."""
    from concurrent.futures import as_completed

    from memrl_bench.methods.base import MethodContext
    from tests.official_memrl import OfficialMemRL

    run = Run()
    official = None

    def counted_as_completed(future_to_mem):
        """The real as_completed; first counts what it will find already finished."""
        finished = Counter(mem for future, mem in future_to_mem.items() if future.done())
        run.finished_at_call.append(sum(finished.values()))
        run.exposed.append(sum(n > 1 for n in finished.values()))
        return as_completed(future_to_mem)

    def measured_update_values(successes, retrieved_ids_list):
        result = update_values(successes, retrieved_ids_list)
        updates = Counter(i for ids in retrieved_ids_list for i in ids)
        stale = stale_cache(official)
        run.repeated.append(sum(n > 1 for n in updates.values()))
        run.stale.append(len(stale))
        run.stale_once += sum(updates[i] == 1 for i in stale)
        return result

    default_interval = sys.getswitchinterval()
    here = os.getcwd()
    started = time.process_time()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        try:
            official = OfficialMemRL("alfworld", MethodContext(seed=0), user_id=user_id, submission_order=submission_order)
            update_values = official.service.update_values
            official.service.update_values = measured_update_values
            if not submission_order:
                official.module.as_completed = counted_as_completed
            sys.setswitchinterval(switch_interval or default_interval)
            for b, batch in enumerate(world.batches):
                retrieved = []
                for episode_id, text, _ in batch:
                    stale = stale_cache(official)
                    if stale:  # the same retrieval with the cache repaired, then as the code runs
                        cache = official.service._q_cache
                        kept = {i: cache[i] for i in stale}
                        cache.update(stale)
                        repaired = official.retrieve(text, world.keys[text], episode_id)
                        cache.update(kept)
                    retrieved.append(official.retrieve(text, world.keys[text], episode_id))
                    run.changed_by_cache += bool(stale) and frozenset(repaired.ids) != frozenset(retrieved[-1].ids)
                run.selected += [frozenset(r.ids) for r in retrieved]
                run.batch_of += [b] * len(batch)
                official.learn([(episode_id, text, success, r.ids, r.phase_a) for (episode_id, text, success), r in zip(batch, retrieved)])
            run.final_q = official.q_values()
        finally:
            sys.setswitchinterval(default_interval)
            if official is not None:
                official.module.as_completed = as_completed
            os.chdir(here)
    run.seconds = time.process_time() - started
    return run


ARMS = {  # name -> (submission order, switch interval in s: None = the interpreter's 5 ms)
    "a": (False, None),
    "a 1ms": (False, 1e-3),
    "a 0.1ms": (False, 1e-4),
    "b": (True, None),
    "b 0.1ms": (True, 1e-4),
}
ARM_TEXT = {
    "a": "(a) official as_completed, switch interval 5 ms (default)",
    "a 1ms": "(a) official as_completed, switch interval 1 ms",
    "a 0.1ms": "(a) official as_completed, switch interval 0.1 ms",
    "b": "(b) submission order, switch interval 5 ms (default)",
    "b 0.1ms": "(b) submission order, switch interval 0.1 ms",
}


def _play_job(job: tuple[int, dict, str]) -> Run:
    seed, world_args, arm = job
    return play(make_world(seed, **world_args), *ARMS[arm])


def fingerprint(run: Run) -> tuple:
    return (tuple(tuple(sorted(s)) for s in run.selected), tuple(sorted(run.final_q.items())))


def summary(values: list[float], fmt: str = "{:.2f}") -> str:
    """median (min-max)"""
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, default=2, help="seeded worlds (seeds 0..n-1)")
    parser.add_argument("--repeats", type=int, default=10, help="runs per world and arm")
    parser.add_argument("--tasks-per-family", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--in-process", action="store_true", help="play every run in this process instead of a fresh one each")
    args = parser.parse_args()
    os.environ["TQDM_DISABLE"] = "1"  # add_memories' progress bars
    from tests.official_memrl import OFFICIAL_DIR

    if not (OFFICIAL_DIR / "memrl" / "service" / "memory_service.py").is_file():
        raise SystemExit(f"official MemRL code not found at {OFFICIAL_DIR}: set $MEMRL_OFFICIAL_DIR")
    world_args = {"tasks_per_family": args.tasks_per_family, "epochs": args.epochs}
    jobs = [(seed, world_args, arm) for seed in range(args.worlds) for _ in range(args.repeats) for arm in ARMS]
    started = time.time()
    if args.in_process:
        runs = [_play_job(job) for job in jobs]
    else:  # one fresh process per run, one at a time
        with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
            runs = pool.map(_play_job, jobs, chunksize=1)
    by_arm: dict[tuple[int, str], list[Run]] = {}
    for (seed, _, arm), run in zip(jobs, runs):
        by_arm.setdefault((seed, arm), []).append(run)

    print(
        f"official code {OFFICIAL_DIR}, ALFWorld settings; {len(FAMILIES)} families x {args.tasks_per_family} tasks, {args.epochs} epochs, "
        "batches of 8-32;"
        f" {args.repeats} runs per world and arm, {'in one process' if args.in_process else 'each in a fresh process'}; values: median "
        "(min-max) over the runs"
    )
    totals: dict[str, dict[str, list[float]]] = {arm: {"differ": [], "direct": [], "stale": []} for arm in ARMS}
    for seed in range(args.worlds):
        reference = by_arm[(seed, "b")][0]
        retrievals, batches = len(reference.selected), len(reference.stale)
        print(
            f"\nworld {seed}: {retrievals} retrievals in {batches} batches; memories injected into more than one episode of a batch"
            f" (in b): {sum(reference.repeated)}, {summary([float(n) for n in reference.repeated], '{:.0f}')} per batch"
        )
        for arm, text in ARM_TEXT.items():
            runs = by_arm[(seed, arm)]
            differ = [100 * sum(a != b for a, b in zip(r.selected, reference.selected)) / retrievals for r in runs]
            direct = [100 * r.changed_by_cache / retrievals for r in runs]
            stale = [100 * sum(r.stale) / max(1, sum(r.repeated)) for r in runs]
            first = sorted(
                next((r.batch_of[i] for i, (a, b) in enumerate(zip(r.selected, reference.selected)) if a != b), batches) for r in runs
            )
            totals[arm]["differ"] += differ
            totals[arm]["direct"] += direct
            totals[arm]["stale"] += stale
            print(f"  {text}: {len({fingerprint(r) for r in runs})} distinct of {len(runs)} runs")
            print(
                f"      selected set differs from (b)'s: {summary(differ)}% of retrievals; first differing batch per run: {first} "
                f"({batches} = never)"
            )
            print(f"      changed by the stale cache itself (same state, cache repaired): {summary(direct)}% of retrievals")
            print(
                f"      after update_values, cached Q != stored Q: {summary([float(sum(r.stale)) for r in runs], '{:.0f}')} memory-batches"
                f" = {summary(stale)}% of the memories updated more than once; in "
                f"{summary([100 * sum(n > 0 for n in r.stale) / batches for r in runs])}% of batches"
            )
            if not arm.startswith("b"):
                print(
                    "      futures already finished when as_completed was called: "
                    f"{summary([float(sum(r.finished_at_call)) for r in runs], '{:.0f}')} per run"
                    f" (at most {max(max(r.finished_at_call) for r in runs)} in a batch); memories with two of them: "
                    f"{summary([float(sum(r.exposed)) for r in runs], '{:.0f}')} per run"
                )
        print(
            f"  CPU per run: {summary([r.seconds for arm in ARMS for r in by_arm[(seed, arm)]], '{:.1f}')} s;"
            f" stale cache entries of memories updated once: {sum(r.stale_once for arm in ARMS for r in by_arm[(seed, arm)])}"
        )
    print("\nall worlds:")
    for arm, text in ARM_TEXT.items():
        t = totals[arm]
        print(
            f"  {text}: selected set differs {summary(t['differ'])}%; changed by the stale cache itself {summary(t['direct'])}%;"
            f" stale after update_values {summary(t['stale'])}% of the memories updated more than once"
        )
    print(f"{time.time() - started:.0f} s wall")


if __name__ == "__main__":
    main()
