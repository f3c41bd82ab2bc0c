"""The official MemRL code, run unmodified beside memrl_bench's MemRL (tests only).

The official repository (MemTensor/MemRL at 7c3beba, MIT) lies in
../shared/reference/memrl_official; it is imported from there, never copied. Only what
it needs around it is stubbed: MemOS storage (an in-memory item store), the embedder
(vectors given per text), the LLM writer (a fixed script and reflection), and two
sources of nondeterminism of memory_service.py: its `random`, which replays
memrl_bench's exploration draws so that configurations with epsilon > 0 compare too,
and the `as_completed` of update_values, which yields the Q updates in the order they
were submitted (batch order). Unstubbed, as_completed hands finished updates over in
set order, so for a memory injected into several episodes of one batch the Q cache
that retrieval reads keeps an arbitrary one of its successive values, while the stored
Q (which the next update reads) has them all: the official code's completion-order
nondeterminism. `OfficialMemRL(..., submission_order=False)` leaves it unstubbed
(scripts/measure_q_cache_order.py measures it).
"""

from __future__ import annotations

import functools
import os
import sys
import types
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from memrl_bench.methods.base import MethodContext

# $MEMRL_OFFICIAL_DIR first, as for actor.prompt=memrl_alfworld (a worktree has no ../shared of its own).
OFFICIAL_DIR = Path(
    os.environ.get("MEMRL_OFFICIAL_DIR") or Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "memrl_official"
)
# Official config file per memrl_bench preset (conf/memrl_preset/<env>.yaml).
CONFIG_FILES = {
    "alfworld": "rl_alf_config.yaml",
    "bigcodebench": "rl_bcb_config.yaml",
    "llb_os": "rl_llb_config.yaml",
    "llb_db": "rl_llb_config.yaml",
    "mmlu": "rl_hle_config.yaml",
}


def require_official() -> Path:
    """The reference folder, or a skip naming what is missing."""
    if not (OFFICIAL_DIR / "memrl" / "service" / "memory_service.py").is_file():
        pytest.skip(f"official MemRL code not found at {OFFICIAL_DIR} (../shared/reference/memrl_official or $MEMRL_OFFICIAL_DIR)")
    return OFFICIAL_DIR


@functools.cache
def official_yaml(preset: str) -> dict[str, Any]:
    return yaml.safe_load((require_official() / "configs" / CONFIG_FILES[preset]).read_text())


# ---- the MemOS stubs ------------------------------------------------------------------
class TextualMemoryMetadata:
    """MemOS's metadata model as the official code uses it: any fields, read through model_extra / model_dump."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    @property
    def model_extra(self) -> dict[str, Any]:
        return self.__dict__

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return dict(self.__dict__)


class TextualMemoryItem:
    def __init__(self, memory: str, metadata: TextualMemoryMetadata | dict, id: str | None = None) -> None:
        self.id = id or str(uuid.uuid4())
        self.memory = memory
        self.metadata = metadata if isinstance(metadata, TextualMemoryMetadata) else TextualMemoryMetadata(**metadata)


class _TextMemory:
    def __init__(self) -> None:
        self.items: dict[str, TextualMemoryItem] = {}

    def add(self, items: list[TextualMemoryItem]) -> None:
        self.items.update((item.id, item) for item in items)

    def get(self, memory_id: str) -> TextualMemoryItem:
        return self.items[memory_id]

    def update(self, memory_id: str, data: dict) -> None:
        self.items[memory_id] = TextualMemoryItem(**data)


class _Cube:
    def __init__(self, config: Any = None) -> None:
        self.text_mem = _TextMemory()

    def dump(self, path: str) -> None:
        pass


class _MOS:
    def __init__(self, config: Any) -> None:
        self.mem_cubes: dict[str, _Cube] = {}

    def create_user(self, user_id: str) -> None:
        pass

    def register_mem_cube(self, cube: _Cube, mem_cube_id: str, user_id: str) -> None:
        self.mem_cubes[mem_cube_id] = cube

    def get(self, mem_cube_id: str, memory_id: str, user_id: str) -> TextualMemoryItem:
        return self.mem_cubes[mem_cube_id].text_mem.get(memory_id)


class _MOSConfig:
    chat_model = types.SimpleNamespace(backend="stub", config=types.SimpleNamespace(model_dump=dict, api_key="stub", api_base="stub"))

    @classmethod
    def from_json_file(cls, path: str) -> _MOSConfig:
        return cls()


def _install_memos_stubs() -> None:
    parts = {
        "memos": {},
        "memos.utils": {},
        "memos.configs": {},
        "memos.configs.mem_os": {"MOSConfig": _MOSConfig},
        "memos.configs.mem_cube": {"GeneralMemCubeConfig": lambda **kwargs: kwargs},
        "memos.mem_os": {},
        "memos.mem_os.main": {"MOS": _MOS},
        "memos.mem_cube": {},
        "memos.mem_cube.general": {"GeneralMemCube": _Cube},
        "memos.memories": {},
        "memos.memories.textual": {},
        "memos.memories.textual.item": {"TextualMemoryItem": TextualMemoryItem, "TextualMemoryMetadata": TextualMemoryMetadata},
    }
    for name, attributes in parts.items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        sys.modules.setdefault(name, module)


def official_modules() -> tuple[types.ModuleType, types.ModuleType]:
    """memrl.service.memory_service and memrl.configs.config, imported from the reference folder."""
    root = str(require_official())
    if root not in sys.path:
        sys.path.insert(0, root)
    _install_memos_stubs()
    import memrl.configs.config as config
    import memrl.service.memory_service as memory_service

    return memory_service, config


# ---- the other stubs -------------------------------------------------------------------
class _Embedder:
    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]


class _Writer:
    def generate_script(self, trajectory: str) -> str:
        return "1. do what worked"

    def generate(self, messages: list[dict], **kwargs: Any) -> str:
        return "it failed"


class _ReplayedRandom:
    """memory_service's `random`, drawing what memrl_bench's MemRL draws for the same episode."""

    def __init__(self, ctx: MethodContext) -> None:
        self.ctx = ctx
        self.episode_id = ""

    def random(self) -> float:
        return float(self.ctx.rng_for("epsilon", self.episode_id).random())

    def sample(self, population: list, k: int) -> list:
        return [population[i] for i in self.ctx.rng_for("sample", self.episode_id).choice(len(population), size=k, replace=False)]


def _in_submission_order(futures):
    """concurrent.futures.as_completed, but in the order the futures were submitted."""
    for future in futures:
        future.result()
        yield future


# ---- the driver --------------------------------------------------------------------------
@dataclass
class OfficialRetrieval:
    ids: list[str]  # selected, in order (memrl_bench ids)
    similarities: list[float]
    q_values: list[float]
    scores: list[float]
    candidates: int  # the pool after q_min
    returned: bool  # retrieve_query returned its phase A list (it does not when it returns no memory)
    phase_a: list[tuple[str, float]]  # (group text, sim) as add_memories gets it: [] when not returned


class OfficialMemRL:
    """MemoryService with a preset's official settings, driven as the official ALFWorld runner drives it.

    Memories are named by memrl_bench's ids on the way out; `vectors` maps every task
    text to its key (the embedder). `submission_order=False` runs update_values with the
    real as_completed (the official completion-order nondeterminism).
    """

    def __init__(self, preset: str, ctx: MethodContext, user_id: str, submission_order: bool = True) -> None:
        memory_service, config = official_modules()
        self.module = memory_service
        cfg = official_yaml(preset)
        experiment = cfg.get("experiment", {})
        rl = dict(cfg["rl_config"])
        if experiment.get("llb_q_floor") is not None:  # the LLB runner's override of rl_config.q_floor
            rl["q_floor"] = experiment["llb_q_floor"]
        self.rl = config.RLConfig(**rl)
        self.k_retrieve = int(cfg["memory"]["k_retrieve"])
        self.vectors: dict[str, list[float]] = {}
        self.random = _ReplayedRandom(ctx)
        self.submission_order = submission_order
        self.service = memory_service.MemoryService(
            mos_config_path="stub",
            llm_provider=_Writer(),
            embedding_provider=_Embedder(self.vectors),
            user_id=user_id,
            add_similarity_threshold=cfg["memory"]["add_similarity_threshold"],
            sim_norm_mean=cfg["memory"]["sim_norm_mean"],
            sim_norm_std=cfg["memory"]["sim_norm_std"],
            enable_value_driven=True,
            rl_config=self.rl,
            use_z_score_normalization=experiment.get("llb_use_z_score_normalization", True),
            dedup_by_task_id=experiment.get("llb_dedup_by_task_id", False),
        )
        self.ours: dict[str, str] = {}  # official memory id -> memrl_bench id
        self.theirs: dict[str, str] = {}

    @property
    def text_memory(self) -> _TextMemory:
        return self.service.mos.mem_cubes[self.service.default_cube_id].text_mem

    def load_bank(self, groups: list[tuple[str, np.ndarray, list[tuple[str, float, bool]]]]) -> None:
        """Groups (text, key, members (id, Q, success)) in order, loaded as a snapshot is (_rebuild_local_memory_index)."""
        items = []
        for text, key, members in groups:
            self.vectors[text] = np.asarray(key).tolist()
            for our_id, q, success in members:
                now = datetime.now().isoformat()
                item = TextualMemoryItem(
                    memory=text,
                    metadata=TextualMemoryMetadata(success=success, q_value=q, q_visits=0, last_used_at=now, full_content=f"Task: {text}"),
                )
                items.append(item)
                self._name(item.id, our_id)
        self.text_memory.add(items)
        self.service._rebuild_local_memory_index([{"memories": items}])

    def retrieve(self, text: str, key: np.ndarray, episode_id: str) -> OfficialRetrieval:
        self.vectors[text] = np.asarray(key).tolist()
        self.random.episode_id = episode_id
        saved, self.module.random = self.module.random, self.random
        try:
            result = self.service.retrieve_query(text, k=self.k_retrieve, threshold=self.rl.sim_threshold)
        finally:
            self.module.random = saved
        payload, phase_a = result if isinstance(result, tuple) else (result, [])  # as the ALFWorld runner reads it
        chosen = payload["selected"]
        return OfficialRetrieval(
            ids=[self.ours[c["memory_id"]] for c in chosen],
            similarities=[c["similarity"] for c in chosen],
            q_values=[c["q_estimate"] for c in chosen],
            scores=[c["score"] for c in chosen],
            candidates=len(payload["candidates"]),
            returned=isinstance(result, tuple),
            phase_a=list(phase_a),
        )

    def learn(self, episodes: list[tuple[str, str, bool, list[str], list[tuple[str, float]]]]) -> None:
        """(episode id, task text, success, injected ids, its retrieval's phase A list) per episode, in batch order:
        update_values, then add_memories, with the ALFWorld runner's arguments."""
        successes = [success for _, _, success, _, _ in episodes]
        used = [[self.theirs[i] for i in injected] for _, _, _, injected, _ in episodes]
        saved = self.module.as_completed
        if self.submission_order:
            self.module.as_completed = _in_submission_order
        try:
            self.service.update_values(successes, used)
        finally:
            self.module.as_completed = saved
        now = datetime.now().isoformat()
        metadatas = [
            {
                "source_benchmark": "memrl_bench",
                "success": s,
                "q_value": float(self.rl.q_init_pos if s else self.rl.q_init_neg),
                "q_visits": 0,
                "q_updated_at": now,
                "last_used_at": now,
                "reward_ma": 0.0,
            }
            for s in successes
        ]
        results = self.service.add_memories(
            task_descriptions=[text for _, text, _, _, _ in episodes],
            trajectories=["[]" for _ in episodes],
            successes=successes,
            retrieved_memory_queries=[phase_a for _, _, _, _, phase_a in episodes],
            retrieved_memory_ids_list=used,
            metadatas=metadatas,
        )
        assert len(results) == len(episodes), "add_memories failed (it prints its traceback)"
        for (episode_id, *_), (_, official_id) in zip(episodes, results):
            self._name(official_id, episode_id)

    def groups(self) -> list[tuple[str, list[str]]]:
        """(task text, member ids) of every group, in the dict's order."""
        return [(text, [self.ours[i] for i in ids]) for text, ids in self.service.dict_memory.items()]

    def q_values(self) -> dict[str, float]:
        """Every stored memory's current Q (the Q cache first, as retrieval reads it)."""
        cache = self.service._q_cache
        return {self.ours[i]: cache[i] if i in cache else item.metadata.q_value for i, item in self.text_memory.items.items()}

    def _name(self, official_id: str, our_id: str) -> None:
        self.ours[official_id] = our_id
        self.theirs[our_id] = official_id
