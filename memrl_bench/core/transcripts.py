"""A run's transcripts: every prompt and completion of every episode, in one compressed file.

`transcripts.jsonl.gz` in the run folder holds one JSON line per episode (TranscriptRecord:
the acting calls, and the memory-management calls made for it: retrieval-time ones and,
for training episodes, those of learn(), with the operations learn() made without an LLM,
such as MemRL's Q updates). Each batch is appended as one whole gzip member,
written and fsynced before the batch's lines reach episodes.jsonl, so a crash leaves a
readable prefix (a torn last member is ignored) that holds at least the logged batches. On
resume the file is cut back to the episodes the log holds, as the log is cut to whole
batches; the run folder's lock makes the runner its only writer. A torn last member that
holds episodes the log already has was cut after the fact (no crash does that): the resume
(and a reader given the log: the viewer) keeps the whole lines that still decode from it and
says so; when none decodes (a cut in its first bytes), it says so if the log holds batches
after the last whole member in a phase whose batches write transcripts (`_logged_batches_after`).

Damage no crash makes (bytes changed in the middle of the file) costs only the members it
hits: a reader skips a member that fails to decode or its CRC, finds the next member's
header and reads on, keeping every whole member after it, and says what it dropped (one
warning line); a resume then writes the salvaged records back.

Messages repeat from call to call (an episode's system prompt and memory block, the growing
history), so gzip keeps a batch small: BENCHMARKS.md, "Transcripts", gives bytes per episode.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrl_bench.core.runfolder import (
    TRANSCRIPTS,
    CorruptRunFolderError,
    FileTooLargeError,
    UnreadableJSONError,
    batch_key,
    parse_json,
    read_regular,
)

# Read whole to salvage around damage; what it inflates to is held as records: both far past a run's
# (BENCHMARKS.md, "Transcripts": at most ~32 kB of JSON an episode), short of exhausting memory.
MAX_TRANSCRIPTS_BYTES = 1 << 30
MAX_TRANSCRIPT_TEXT_BYTES = 1 << 30  # inflated, the whole file: a 1.6 MB gzip bomb inflates to 1.5 GiB
# ...and the memory its records take, bounded before a line is parsed (`_estimated_bytes`): lines of empty objects take
# 24 times their text once parsed (a 125 kB file took the report to 3 GB); a run's records take 1.2-1.5 times theirs,
# and are estimated at 6-7 times (this bound allows ~15,000 ALFWorld episodes in a run).
MAX_TRANSCRIPT_RECORDS_BYTES = 3 << 30
_BYTES_PER_JSON_VALUE = 64  # more than a parsed JSON value takes beside its text (measured: at most 38)
_BYTES_PER_TEXT_BYTE = 4  # a string holding one character past U+FFFF takes 4 bytes for each of its characters
_INFLATE_CHUNK_BYTES = 1 << 20
GZIP_HEADER = b"\x1f\x8b\x08"  # a gzip member's magic and its method (deflate): where a skipped member's successor may start


@dataclass
class Salvage:
    """What a reading of the file kept and dropped."""

    records: list[dict[str, Any]] = field(default_factory=list)  # JSON objects with an episode id, in file order
    damaged_places: int = 0  # stretches of bytes skipped because no whole member decodes there
    damaged_bytes: int = 0
    bad_lines: int = 0  # lines of whole members that are not a transcript record (`_is_record`)
    torn_tail: bool = False  # the last member is cut short (a crash while it was written)
    torn_records: list[dict[str, Any]] = field(default_factory=list)  # the whole lines that decode from that cut member
    estimated_bytes: int = 0  # what the records read so far take in memory, at most (`_estimated_bytes`)
    text_bytes: int = 0  # the lines read so far, inflated

    @property
    def damaged(self) -> bool:
        return bool(self.damaged_places or self.bad_lines)

    def warning(self, path: Path, what: str, kept: int, logged_tail: int = 0, lost_batches: int = 0) -> str:
        """One line: what was skipped, and that `what` the `kept` records around it; `logged_tail`:
        the records kept from a cut last member whose episodes the log holds; `lost_batches`: the
        logged batches a cut last member of which no whole line decodes may have held."""
        parts = []
        if self.damaged_places:
            parts.append(
                f"skipped {self.damaged_bytes} damaged bytes in {self.damaged_places} place(s) where no gzip member decodes (the records "
                "in them are lost)"
            )
        if self.bad_lines:
            parts.append(f"skipped {self.bad_lines} line(s) that are not a transcript record")
        if logged_tail:
            parts.append(
                "its last gzip member is cut short though the log holds its episodes (damage: a crash cuts only a batch not yet logged), "
                f"so the records after its first {logged_tail} whole line(s) are lost"
            )
        if lost_batches:
            parts.append(
                f"its last gzip member is cut short before its first whole line, though the log holds {lost_batches} batch(es) after the "
                "last whole member"
                " in a phase that writes transcripts (damage: a crash cuts only a batch not yet logged), so their records are lost; their "
                "episodes are in the log"
            )
        return f"memrl-bench: warning: {path}: {' and '.join(parts)}; {what} the {kept} records that decode"


# 2: every record carries the sha256 of its episode's log line (`episode_sha256`), and a run's manifest says so
# (`transcripts_format`); runs before it hold records joined to the log by what they say (agrees_with_log). 3: COMPLETE
# records the file's sha256 too (runfolder.TRANSCRIPTS_DIGEST).
TRANSCRIPTS_FORMAT = 3


def episode_digest(episode: dict[str, Any]) -> str:
    """The sha256 of an episode's log line as JSON reads it back (sorted keys, no spaces)."""
    text = json.dumps(episode, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def transcript_record(
    episode: dict[str, Any],
    acting: list[dict[str, Any]],
    memory_calls: list[dict[str, Any]],
    memory_ops: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One episode's line: where it sits in the run, the digest of its log line, its acting calls (messages, completion,
    finish_reason, tokens, trimmed_tokens, cache_hit), its memory calls (methods.base.memory_call)
    and, when learn() made any, its memory operations (methods.base.memory_op)."""
    keys = ("episode_id", "task_id", "phase", "split", "epoch", "batch_index", "sample_index")
    return {
        **{k: episode[k] for k in keys},
        "episode_sha256": episode_digest(episode),
        "acting": acting,
        "memory_calls": memory_calls,
        **({"memory_ops": memory_ops} if memory_ops else {}),
    }


TOKEN_KEYS = ("prompt_tokens", "completion_tokens")  # a call's, as its record and the episode's usage count them alike


def agrees_with_log(record: dict[str, Any], episode: dict[str, Any], bound: bool = True) -> bool:
    """Whether a transcript record is the one its episode's log line was written with. Records are joined to the log by
    episode id, which every run with the same schedule shares: another run's transcripts put in a run folder were shown
    beside this run's log (the thirty-second round), another method's memory calls when the acting model's completions
    were the same (the thirty-fourth), and another run's memory operations when it made no LLM call (the thirty-sixth). A
    record of a run whose transcripts are `bound` (TRANSCRIPTS_FORMAT 2), or one carrying a digest, agrees when it holds
    the digest of the episode's line; an older run's when it names the same task, every completion the log's turns quote
    (`raw_output`) is among its acting calls' completions, and the tokens of its acting calls and of its memory calls
    (when it holds any) are those the log charged the episode."""
    if bound or "episode_sha256" in record:
        return record.get("episode_sha256") == episode_digest(episode)
    acting = _calls(record.get("acting"))
    said = Counter(c.get("completion") for c in acting)
    quoted = Counter(t.get("raw_output") for t in episode.get("turns") or [] if isinstance(t, dict) and t.get("raw_output") is not None)
    if record.get("task_id") != episode.get("task_id") or quoted - said:
        return False
    for calls, usage in ((acting, episode.get("act_usage")), (_calls(record.get("memory_calls")), episode.get("memory_usage"))):
        usage = usage if isinstance(usage, dict) else {}
        if calls and [_tokens(calls, key) for key in TOKEN_KEYS] != [usage.get(key) for key in TOKEN_KEYS]:
            return False
    return True


def _calls(calls: Any) -> list[dict[str, Any]]:
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _tokens(calls: list[dict[str, Any]], key: str) -> int:
    """The calls' `key` tokens, summed (a failed memory call's are None: it used none)."""
    return sum(c.get(key) for c in calls if isinstance(c.get(key), int))


class TranscriptLog:
    def __init__(self, run_dir: Path, enabled: bool = True):
        self.path = Path(run_dir) / TRANSCRIPTS
        self.enabled = enabled  # the config's `transcripts`; when false nothing is appended
        # what the file holds, as its readers count it (keep_only sets them on a resume): appends stop short of their bounds
        self.text_bytes = self.estimated_bytes = 0
        self.full = False

    def append(self, records: list[dict[str, Any]]) -> None:
        """One batch as one gzip member, in one write, then fsync; records without any LLM call
        or memory operation (an env that plays its own actor, a method that learned nothing) are left out. A batch that
        would take the file past what its readers take (MAX_TRANSCRIPT_TEXT_BYTES inflated, MAX_TRANSCRIPT_RECORDS_BYTES
        parsed) is not written, nor any after it, with one warning: a model's long outputs made a file the run's resume
        then refused, so the run could never finish (43b: 11 episodes of 65,000 emoji a completion)."""
        records = [r for r in records if r["acting"] or r["memory_calls"] or r.get("memory_ops")]
        if not records or not self.enabled or self.full:
            return
        lines = [json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records]
        text_bytes = self.text_bytes + sum(len(line) for line in lines)
        estimated_bytes = self.estimated_bytes + sum(_estimated_bytes(line[:-1]) for line in lines)
        if text_bytes > MAX_TRANSCRIPT_TEXT_BYTES or estimated_bytes > MAX_TRANSCRIPT_RECORDS_BYTES:
            self.full = True
            print(
                f"memrl-bench: warning: {self.path}: no more records from episode {records[0]['episode_id']} on: the file would "
                f"pass what its readers take ({MAX_TRANSCRIPT_TEXT_BYTES:,} bytes of text, {MAX_TRANSCRIPT_RECORDS_BYTES:,} in "
                "memory); the episode log holds every episode",
                file=sys.stderr,
            )
            return
        self.text_bytes, self.estimated_bytes = text_bytes, estimated_bytes
        member = gzip.compress(b"".join(lines), mtime=0)
        with open(self.path, "ab") as f:
            f.write(member)
            f.flush()
            os.fsync(f.fileno())

    def read(self, logged: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Every record of the whole members (a torn last member, from a crash, is left out;
        damaged members and lines are skipped with one warning; a file that is not a regular file
        is never read: one warning, no records). `logged`: the run's log records, where the reader
        has them: a cut last member the log shows was logged is damage, not a crash's (`_cut_tail`):
        its whole lines are kept and the loss said, as a resume does."""
        try:
            salvage = self.salvage()
        except CorruptRunFolderError as err:
            print(f"memrl-bench: warning: {err}; read without its transcripts", file=sys.stderr)
            return []
        tail, lost_batches = _cut_tail(salvage, logged) if logged is not None else ([], 0)
        records = salvage.records + tail
        if salvage.damaged or tail or lost_batches:
            print(salvage.warning(self.path, "read", len(records), len(tail), lost_batches), file=sys.stderr)
        return records

    def by_episode(self, logged: list[dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
        """The records by episode id, for readers that show what they can (the viewer); `logged` as in `read`."""
        return {r["episode_id"]: r for r in self.read(logged)}

    def keep_only(self, logged: list[dict[str, Any]]) -> None:
        """Cut the file to the records of the episodes the log holds (`logged`: its records, in its
        order), keeping every whole member around damage, with one warning saying what was dropped."""
        if not self.path.exists():
            return
        wanted = {r["episode_id"] for r in logged}
        salvage = self.salvage()
        self.text_bytes, self.estimated_bytes = salvage.text_bytes, salvage.estimated_bytes  # at most what is kept
        kept = [r for r in salvage.records if r["episode_id"] in wanted]
        if len(kept) == len(salvage.records) and not salvage.damaged and not salvage.torn_tail:
            return
        logged_tail, lost_batches = _cut_tail(salvage, logged)
        kept += logged_tail
        if salvage.damaged or logged_tail or lost_batches:
            print(salvage.warning(self.path, "the resume keeps", len(kept), len(logged_tail), lost_batches), file=sys.stderr)
        partial = self.path.with_name(self.path.name + ".tmp")
        with open(partial, "wb") as f:
            if kept:
                f.write(gzip.compress("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept).encode(), mtime=0))
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, self.path)

    def salvage(self) -> Salvage:
        """Every whole member's records; where no member decodes (bad deflate data, a CRC or
        length that does not match), the bytes up to the next gzip header are skipped and
        reading goes on from there."""
        out = Salvage()
        if not self.path.exists():
            return out
        data = read_regular(self.path, MAX_TRANSCRIPTS_BYTES)
        view = memoryview(data)  # members are decoded in place, not copied out
        start = inflated = 0
        skipped: list[
            list
        ] = []  # [start, end, whether it decodes without error to the end of the file, what it decodes to] of each stretch skipped
        while start < len(data):
            decoder = zlib.decompressobj(wbits=31)  # one gzip member
            try:
                text, clean = self._inflate(decoder, view[start:], MAX_TRANSCRIPT_TEXT_BYTES - inflated), True
            except zlib.error:
                text, clean = b"", False
            inflated += len(text)
            if clean and decoder.eof:
                self._add_lines(text, out)
                start = len(data) - len(decoder.unused_data)
                continue
            following = data.find(GZIP_HEADER, start + 1)
            end = len(data) if following < 0 else following
            if skipped and skipped[-1][1] == start:  # a false header inside the same damage
                skipped[-1][1] = end
            else:
                skipped.append([start, end, clean, text])
            start = end
        if skipped and skipped[-1][1] == len(data) and skipped[-1][2]:
            # the last member, cut short: by a crash while it was written (not damage), unless the log holds its episodes (keep_only)
            out.torn_tail = True
            torn, text = Salvage(estimated_bytes=out.estimated_bytes), skipped.pop()[3]
            self._add_lines(text[: text.rfind(b"\n") + 1], torn)  # its whole lines, up to the one the cut went through
            out.torn_records = torn.records
        out.damaged_places, out.damaged_bytes = len(skipped), sum(stretch[1] - stretch[0] for stretch in skipped)
        return out

    def _inflate(self, decoder: Any, data: memoryview, budget: int) -> bytes:
        """What `decoder` inflates `data` to, a chunk at a time, or FileTooLargeError past `budget` bytes."""
        parts, size, tail = [], 0, data
        while True:
            chunk = decoder.decompress(tail, _INFLATE_CHUNK_BYTES)
            size += len(chunk)
            if size > budget:
                raise FileTooLargeError(
                    f"{self.path}: inflates past {MAX_TRANSCRIPT_TEXT_BYTES:,} bytes (a gzip bomb? no run writes that much)"
                )
            parts.append(chunk)
            tail = decoder.unconsumed_tail
            if decoder.eof or not (tail or len(chunk) == _INFLATE_CHUNK_BYTES):  # the member's end, or its input used up
                return b"".join(parts)

    def _add_lines(self, text: bytes, out: Salvage) -> None:
        for line in text.splitlines():
            out.estimated_bytes += _estimated_bytes(line)
            out.text_bytes += len(line) + 1
            if out.estimated_bytes > MAX_TRANSCRIPT_RECORDS_BYTES:
                raise FileTooLargeError(
                    f"{self.path}: its records would take more than {MAX_TRANSCRIPT_RECORDS_BYTES:,} bytes of memory (lines of "
                    "empty objects? no run writes that much)"
                )
            try:
                record = parse_json(line, strict=True)
            except UnreadableJSONError:
                record = None
            if _is_record(record):
                out.records.append(record)
            else:
                out.bad_lines += 1


def _is_record(record: Any) -> bool:
    """A transcript record as readers take it: an object with an episode id whose lists of calls are lists of objects, and
    a call's messages a list of objects (a number in either place ended the report in a traceback: the eighteenth and the
    nineteenth probe rounds)."""
    if not isinstance(record, dict) or not isinstance(record.get("episode_id"), str):
        return False
    for key in ("acting", "memory_calls", "memory_ops"):
        calls = record.get(key)
        if calls is None:
            continue
        if not isinstance(calls, list) or not all(isinstance(call, dict) for call in calls):
            return False
        for call in calls:
            messages = call.get("messages")
            if messages is not None and not (isinstance(messages, list) and all(isinstance(m, dict) for m in messages)):
                return False
    return True


def _estimated_bytes(line: bytes) -> int:
    """At most what `line` takes in memory once parsed: its text's characters, and a bound for each JSON value in it
    (every value but the first follows a '[', ':' or ',', and every object starts with '{'; those inside strings count too)."""
    marks = line.count(b"{") + line.count(b"[") + line.count(b":") + line.count(b",") + 1
    return _BYTES_PER_TEXT_BYTE * len(line) + _BYTES_PER_JSON_VALUE * marks


def _cut_tail(salvage: Salvage, logged: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """What a cut last member tells against the log (`logged`): its whole lines of logged episodes (damage: a crash cuts only
    a batch not yet logged, so these are kept), and when it has none, the logged batches it may have held
    (`_logged_batches_after`)."""
    if not salvage.torn_tail:
        return [], 0
    wanted = {r["episode_id"] for r in logged}
    tail = [r for r in salvage.torn_records if r["episode_id"] in wanted]
    return tail, 0 if tail else _logged_batches_after(salvage.records, logged)


def _logged_batches_after(records: list[dict[str, Any]], logged: list[dict[str, Any]]) -> int:
    """The logged batches after the last whole member's batch, in a phase some whole member has records of.

    A cut last member of which no line decodes names no episode; but a crash cuts only the member
    of a batch not yet logged, and a phase's batches write transcripts alike (acting calls, or
    learn()'s operations in training), so such batches mean the cut member was one of them. With no
    whole member, nothing tells which phases write transcripts: 0."""
    if not records:
        return 0
    phases = {r.get("phase") for r in records}
    batches = list(dict.fromkeys(batch_key(r) for r in logged))
    last = batch_key(records[-1])
    if last not in batches:
        return 0
    return sum(1 for key in batches[batches.index(last) + 1 :] if key[0] in phases)
