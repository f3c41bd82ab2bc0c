"""Issue 21's findings about what the harness does around a real model, one test each:
the context sized from the GGUF, a model identified by its content, memory calls and end
reasons in what the methods learn from."""

from __future__ import annotations

import asyncio
import os
import struct

import pytest

from memrl_bench.llm import catalogue as models
from memrl_bench.llm.cache import cache_key
from memrl_bench.llm.gguf import GGUFError, GGUFModel
from memrl_bench.llm.local_server import context_size
from memrl_bench.methods.memrl import MemRL
from tests.memory_llm_helpers import ScriptedModel, context, experience, query


def gguf(path, metadata: dict) -> None:
    """A GGUF v3 header holding `metadata` (u32 and string values) and no tensors."""

    def string(s: str) -> bytes:
        return struct.pack("<Q", len(s.encode())) + s.encode()

    body = b"".join(
        string(k) + (struct.pack("<I", 8) + string(v) if isinstance(v, str) else struct.pack("<II", 4, v)) for k, v in metadata.items()
    )
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(metadata)) + body)


QWEN_SHAPE = {
    "general.architecture": "qwen2",
    "qwen2.block_count": 24,
    "qwen2.attention.head_count": 14,
    "qwen2.attention.head_count_kv": 2,
    "qwen2.embedding_length": 896,
    "qwen2.context_length": 32768,
}


def test_local_context_comes_from_the_gguf_capped_by_memory(tmp_path):
    path = tmp_path / "m.gguf"
    gguf(path, QWEN_SHAPE)
    model = GGUFModel.read(path)
    assert (model.context_length, model.kv_bytes_per_token) == (32768, 24 * 2 * (64 + 64) * 2)  # 12 KB a token
    assert context_size(path, parallel=2, available_bytes=64 * 2**30) == 32768  # the training context
    assert context_size(path, parallel=2, available_bytes=2**30) == 10752  # 1/4 of 1 GB over 2 slots, in steps of 256
    gguf(path, {"general.architecture": "qwen2"})
    with pytest.raises(GGUFError, match="lacks the context"):
        GGUFModel.read(path)


def test_a_replaced_model_file_is_another_model_for_manifest_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "model.gguf"
    path.write_bytes(b"first model")
    first = models.checksum(str(path))
    assert first == models.checksum(str(path))  # the second time from the path + size + mtime record
    path.write_bytes(b"other model")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    second = models.checksum(str(path))
    assert first != second
    key = lambda sha: cache_key({"model": str(path), **sha}, [{"role": "user", "content": "hi"}], {}, 0)  # noqa: E731
    assert key(first) != key(second)


def test_the_reflection_is_told_how_the_episode_ended_and_its_call_is_kept():
    loop = asyncio.new_event_loop()
    try:
        model = ScriptedModel(lambda prompt: "Next time, COMMIT after the UPDATE.")
        method = MemRL({}, context(model, loop))
        failed = experience(1, "raise the red team's salaries", False)
        failed.episode.status = "step_limit"
        result = method.learn([failed])
    finally:
        loop.close()
    prompt = model.calls[0][0]["content"]
    assert "How the attempt ended: step limit: all 2 steps were used without finishing the task" in prompt
    (call,) = result.calls_by_episode[failed.episode.episode_id]
    assert (call["purpose"], call["completion"], call["parsed"]) == (
        "memrl_reflection",
        "Next time, COMMIT after the UPDATE.",
        "Next time, COMMIT after the UPDATE.",
    )
    assert call["messages"][0]["content"] == prompt


def test_memrl_logs_similarity_quantiles_and_warns_when_the_threshold_removes_held_out_retrievals():
    import numpy as np

    from memrl_bench.core import metrics
    from tests.helpers import record

    loop = asyncio.new_event_loop()
    try:
        method = MemRL({"write_with_llm": False}, context(None, loop))
        method.learn([experience(1, "count the rows of staff", True, key=np.array([1.0, 0.0, 0.0]))])
        (seen,) = method.retrieve_batch([query("q", key=np.array([0.4, 0.9165, 0.0]))])
    finally:
        loop.close()
    assert seen.items == [] and seen.info == {"top_similarity": pytest.approx(0.4, abs=1e-4), "threshold": 0.5}
    held_out = [
        record(f"v{i}", 1, False, phase="validation", info={"retrieval": {"top_similarity": 0.3 + i / 100, "threshold": 0.5}})
        for i in range(10)
    ]
    train = [record("t", 1, True, info={"retrieval": {"top_similarity": 0.9, "threshold": 0.5}})]
    similarity = metrics.compute(held_out + train)["retrieval_similarity"]
    assert similarity["validation"]["below_threshold_share"] == 1.0 and similarity["validation"]["q50"] == pytest.approx(0.345)
    (warning,) = metrics.similarity_warnings(similarity)
    assert "validation: the similarity threshold 0.5 removed 100% of 10 retrievals" in warning


def test_similarity_calibration_uses_training_tasks_only_and_keeps_the_official_z():
    import numpy as np

    from memrl_bench.methods.memrl import OFFICIAL_SIMILARITY, calibrate_similarity

    keys = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [1.0, 0.0]])
    c = calibrate_similarity(keys, ["a", "b", "c", "a"])  # "a" twice: its duplicate is not its neighbour
    best = np.array([0.8, 0.96, 0.96, 0.8])
    assert (c["sim_mean"], c["sim_std"]) == (pytest.approx(best.mean()), pytest.approx(best.std()))
    z = (c["sim_threshold"] - c["sim_mean"]) / c["sim_std"]
    assert z == pytest.approx((OFFICIAL_SIMILARITY["sim_threshold"] - OFFICIAL_SIMILARITY["sim_mean"]) / OFFICIAL_SIMILARITY["sim_std"])
