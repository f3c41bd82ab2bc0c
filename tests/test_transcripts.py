"""transcripts.jsonl.gz: whole gzip members per batch, a readable prefix after a crash, cut back with the log on resume."""

from __future__ import annotations

import gzip

from memrl_bench.transcripts import TranscriptLog, transcript_record


def record(episode_id: str, calls: int = 1) -> dict:
    episode = {"episode_id": episode_id, "task_id": "t", "phase": "train", "split": "train", "epoch": 1, "batch_index": 0, "sample_index": 0}
    acting = [{"messages": [{"role": "user", "content": f"prompt {episode_id} {i}"}], "completion": "Action: look"} for i in range(calls)]
    return transcript_record(episode, acting, [])


def test_each_batch_is_a_whole_gzip_member_readable_by_any_gzip_reader(tmp_path):
    log = TranscriptLog(tmp_path)
    log.append([record("a"), record("b")])
    log.append([record("c")])
    assert [r["episode_id"] for r in log.read()] == ["a", "b", "c"]
    with gzip.open(log.path, "rt") as f:  # members concatenate: plain gzip reads the whole file
        assert len(f.read().splitlines()) == 3


def test_a_torn_last_member_leaves_the_whole_batches_readable(tmp_path):
    log = TranscriptLog(tmp_path)
    log.append([record("a")])
    whole = log.path.stat().st_size
    log.append([record("b", calls=50)])
    data = log.path.read_bytes()
    log.path.write_bytes(data[: whole + (len(data) - whole) // 2])  # a crash inside the second write
    assert [r["episode_id"] for r in log.read()] == ["a"]


def test_resume_cuts_the_transcripts_to_the_logged_episodes(tmp_path):
    log = TranscriptLog(tmp_path)
    log.append([record("a"), record("b")])
    log.append([record("c")])  # a batch whose episodes never reached episodes.jsonl
    log.keep_only(["a", "b"])
    log.append([record("c")])  # played again
    assert [r["episode_id"] for r in log.read()] == ["a", "b", "c"]


def test_episodes_without_llm_calls_and_disabled_logs_write_nothing(tmp_path):
    TranscriptLog(tmp_path, enabled=False).append([record("a")])
    TranscriptLog(tmp_path).append([transcript_record(record("b"), [], [])])
    assert not (tmp_path / "transcripts.jsonl.gz").exists()
