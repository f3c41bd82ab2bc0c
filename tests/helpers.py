"""Shared builders for tests: configs for the runner and hand-built episode records."""

from __future__ import annotations

import copy
import shlex
from collections.abc import Iterable
from pathlib import Path

import pytest

from memrl_bench.core.schema import Episode
from memrl_bench.runner.loop import run

SMALL_WORLD = {
    "name": "synthetic",
    "seed": 0,
    "n_types": 4,
    "n_ood_types": 2,
    "intent_dim": 16,
    "tasks": {"train": 40, "validation": 20, "test_in_distribution": 20, "test_out_of_distribution": 20},
}

BASE_CFG = {
    "env": SMALL_WORLD,
    "method": {"name": "memrl"},
    "llm": {"name": "none"},
    "embedder": {"name": "env_intent"},
    "protocol": {"epochs": 3, "batch_size": 8, "checkpoint_interval_s": 0},
    "actor": {},
    "seed": 0,
    "task_order_seed": 0,
    "progress": False,
}


def config(**overrides: dict) -> dict:
    """BASE_CFG with nested overrides merged in, e.g. config(method={"epsilon": 0.1})."""
    cfg = copy.deepcopy(BASE_CFG)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key].update(value)
        else:
            cfg[key] = value
    return cfg


def run_to(tmp: Path, name: str, cfg: dict) -> tuple[dict, Path]:
    folder = tmp / name
    return run(cfg, folder), folder


def crash_in_learn(monkeypatch, cfg: dict, folder: Path, crash_at: int) -> None:
    """Run `cfg` into `folder` with MemRL.learn raising KeyboardInterrupt on its `crash_at`-th
    call (replays of learn() on resume count); learn is the real one again afterwards."""
    from memrl_bench.methods.memrl import MemRL

    real_learn, calls = MemRL.learn, {"n": 0}

    def crashing_learn(self, batch):
        calls["n"] += 1
        if calls["n"] == crash_at:
            raise KeyboardInterrupt("simulated crash")
        return real_learn(self, batch)

    monkeypatch.setattr(MemRL, "learn", crashing_learn)
    with pytest.raises(KeyboardInterrupt):
        run(cfg, folder)
    monkeypatch.setattr(MemRL, "learn", real_learn)


def crash_in_learn_then_resume(monkeypatch, cfg: dict, folder: Path, crash_points: Iterable[int]) -> None:
    """Run `cfg` into `folder` once per crash point (crash_in_learn), then once more to the end."""
    for crash_at in crash_points:
        crash_in_learn(monkeypatch, cfg, folder, crash_at)
    run(cfg, folder)


def protocol(settings: dict):
    """The protocol `settings["name"]` names (held_out if none), built with its settings checked."""
    from memrl_bench.core import registry
    from memrl_bench.core.config import validated

    cls = registry.get("protocol", settings.get("name", "held_out"))
    return cls(validated(cls.Settings, settings, "protocol"))


def build_schedule(settings: dict, roles: dict, tasks: dict, task_order_seed: int, env=None) -> list:
    """The schedule of the protocol `settings` describe (tests of schedules, without a run)."""
    return protocol(settings).schedule(roles, tasks, task_order_seed, env)


def record(task: str, epoch: int, success: bool, phase: str = "train", **extra) -> Episode:
    """A minimal episode record as the runner writes it, read back."""
    ep = Episode(
        episode_id=f"{phase}-e{epoch:02d}-{task}",
        task_id=task,
        split=phase if phase != "test" else extra.pop("split", "test"),
        phase=phase,  # type: ignore[arg-type]
        epoch=epoch,
        batch_index=0,
        order_index=0,
        success=success,
        reward=float(success),
        status="ok",
    )
    return Episode.from_dict({**ep.to_dict(), **extra})


def composed(*overrides: str) -> dict:
    """The resolved config the CLI would run, composed from conf/ with Hydra's API."""
    from omegaconf import OmegaConf

    from memrl_bench.cli.hydra_support import compose, composing

    with composing():
        cfg = compose(list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)


def tiny_mmlu(folder: Path, questions: int = 2) -> Path:
    """An MMLU data folder (dev, validation, test) of `questions` made-up questions per split, for env.data_dir."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    for split in ("dev", "validation", "test"):
        records = [
            {
                "id": f"demo/{split}/{i}",
                "subject": "demo",
                "question": f"Which letter is number {i} of {split}?",
                "choices": ["one", "two", "three", "four"],
                "answer": "B",
            }
            for i in range(questions)
        ]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def install_distribution(site: Path, name: str, entry_points: dict[str, dict[str, str]], files: dict[str, str]) -> None:
    """A distribution as pip installs one into `site` (its modules and a dist-info with its entry
    points: {group: {name: "module:attribute"}}), for tests that put `site` on sys.path."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"  # as wheels name it: the name ends at the first '-'
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "".join(f"[{group}]\n" + "".join(f"{n} = {v}\n" for n, v in points.items()) for group, points in entry_points.items())
    )
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)


def default_sigint() -> None:
    """preexec_fn of a command a test interrupts with SIGINT, as a terminal's Ctrl-C would: a test suite started as a
    background job of a non-interactive shell (`pytest &` in a script) inherits SIGINT ignored (POSIX), the command
    would inherit that too, and Python keeps an ignored SIGINT ignored: the Ctrl-C would never arrive."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def readme_command(text: str, start: str) -> list[str]:
    """The words of the command in `text` whose line starts with `start`, its backslash-continued lines joined."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    command = [lines[first]]
    while command[-1].endswith("\\"):
        command.append(lines[first + len(command)])
    return shlex.split(" ".join(line.rstrip("\\") for line in command))


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.name.isdigit() and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is no zombie (from /proc)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
