"""A run's transcripts: every prompt and completion of every episode, in one compressed file.

`transcripts.jsonl.gz` in the run folder holds one JSON line per episode (TranscriptRecord:
the acting calls, and the memory-management calls made for it: retrieval-time ones and,
for training episodes, those of learn(), with the operations learn() made without an LLM,
such as MemRL's Q updates). Each batch is appended as one whole gzip member,
written and fsynced before the batch's lines reach episodes.jsonl, so a crash leaves a
readable prefix (a torn last member is ignored) that holds at least the logged batches. On
resume the file is cut back to the episodes the log holds, as the log is cut to whole
batches; the run folder's lock makes the runner its only writer.

Messages repeat from call to call (an episode's system prompt and memory block, the growing
history), so gzip keeps a batch small: BENCHMARKS.md, "Transcripts", gives bytes per episode.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TRANSCRIPTS = "transcripts.jsonl.gz"


def transcript_record(episode: dict[str, Any], acting: list[dict[str, Any]], memory_calls: list[dict[str, Any]], memory_ops: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One episode's line: where it sits in the run, its acting calls (messages, completion,
    finish_reason, tokens, trimmed_tokens, cache_hit), its memory calls (methods.base.memory_call)
    and, when learn() made any, its memory operations (methods.base.memory_op)."""
    keys = ("episode_id", "task_id", "phase", "split", "epoch", "batch_index", "sample_index")
    return {**{k: episode[k] for k in keys}, "acting": acting, "memory_calls": memory_calls, **({"memory_ops": memory_ops} if memory_ops else {})}


class TranscriptLog:
    def __init__(self, run_dir: Path, enabled: bool = True):
        self.path = Path(run_dir) / TRANSCRIPTS
        self.enabled = enabled  # the config's `transcripts`; when false nothing is appended

    def append(self, records: list[dict[str, Any]]) -> None:
        """One batch as one gzip member, in one write, then fsync; records without any LLM call
        or memory operation (an env that plays its own actor, a method that learned nothing) are left out."""
        records = [r for r in records if r["acting"] or r["memory_calls"] or r.get("memory_ops")]
        if not records or not self.enabled:
            return
        member = gzip.compress("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode(), mtime=0)
        with open(self.path, "ab") as f:
            f.write(member)
            f.flush()
            os.fsync(f.fileno())

    def read(self) -> list[dict[str, Any]]:
        """Every record of the whole members (a torn last member, from a crash, is left out)."""
        return [json.loads(line) for line in self._whole_members()[0].splitlines()]

    def by_episode(self) -> dict[str, dict[str, Any]]:
        """The records by episode id, for readers that show what they can (the viewer): as
        read(), but a line that is not a JSON object with an episode id is skipped."""
        records = {}
        for line in self._whole_members()[0].splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("episode_id"), str):
                records[record["episode_id"]] = record
        return records

    def keep_only(self, episode_ids: Iterable[str]) -> None:
        """Cut the file to the records of these episodes (on resume: those the log holds)."""
        if not self.path.exists():
            return
        wanted = set(episode_ids)
        text, size = self._whole_members()
        lines = text.splitlines(keepends=True)
        kept = [line for line in lines if json.loads(line)["episode_id"] in wanted]
        if len(kept) == len(lines) and self.path.stat().st_size == size:
            return
        partial = self.path.with_name(self.path.name + ".tmp")
        with open(partial, "wb") as f:
            if kept:
                f.write(gzip.compress("".join(kept).encode(), mtime=0))
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, self.path)

    def _whole_members(self) -> tuple[str, int]:
        """The text of the whole members, and the bytes they take."""
        if not self.path.exists():
            return "", 0
        data = self.path.read_bytes()
        texts, size = [], 0
        while size < len(data):
            decoder = zlib.decompressobj(wbits=31)  # one gzip member
            try:
                text = decoder.decompress(data[size:])
            except zlib.error:
                break
            if not decoder.eof:  # cut short by a crash
                break
            texts.append(text)
            size = len(data) - len(decoder.unused_data)
        return b"".join(texts).decode(errors="replace"), size
