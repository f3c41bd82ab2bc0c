"""transcripts.jsonl.gz: whole gzip members per batch, a readable prefix after a crash, cut back with the log on resume;
damage in the middle costs only the members it hits."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest

from memrl_bench.core import transcripts
from memrl_bench.core.runfolder import FileTooLargeError
from memrl_bench.core.transcripts import MAX_TRANSCRIPTS_BYTES, TranscriptLog, transcript_record
from memrl_bench.runner.loop import run
from tests.helpers import config, crash_in_learn


def record(episode_id: str, calls: int = 1, batch: int = 0, phase: str = "train") -> dict:
    episode = {
        "episode_id": episode_id,
        "task_id": "t",
        "phase": phase,
        "split": phase,
        "epoch": 1,
        "batch_index": batch,
        "sample_index": 0,
    }
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
    assert log.salvage().torn_tail and not log.salvage().damaged  # what a crash leaves is not damage: no warning


def test_resume_cuts_the_transcripts_to_the_logged_episodes(tmp_path):
    log = TranscriptLog(tmp_path)
    log.append([record("a"), record("b")])
    log.append([record("c")])  # a batch whose episodes never reached episodes.jsonl
    log.keep_only([record("a"), record("b")])
    log.append([record("c")])  # played again
    assert [r["episode_id"] for r in log.read()] == ["a", "b", "c"]


def test_episodes_without_llm_calls_and_disabled_logs_write_nothing(tmp_path):
    TranscriptLog(tmp_path, enabled=False).append([record("a")])
    TranscriptLog(tmp_path).append([transcript_record(record("b"), [], [])])
    assert not (tmp_path / "transcripts.jsonl.gz").exists()


def members(path: Path) -> list[tuple[int, int, list[str]]]:
    """(start, end, episode ids) of each gzip member of a whole file, decoded one by one."""
    data, start, out = path.read_bytes(), 0, []
    while start < len(data):
        decoder = zlib.decompressobj(wbits=31)
        text = decoder.decompress(data[start:])
        end = len(data) - len(decoder.unused_data)
        out.append((start, end, [line.split('"episode_id": "', 1)[1].split('"', 1)[0] for line in text.decode().splitlines()]))
        start = end
    return out


def flip(path: Path, at: int, count: int) -> None:
    data = bytearray(path.read_bytes())
    for i in range(at, at + count):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_reading_keeps_every_whole_member_around_damage_and_says_so(tmp_path, capsys):
    log = TranscriptLog(tmp_path)
    for batch in range(5):
        log.append([record(f"b{batch}-{i}", calls=20) for i in range(3)])
    hit = members(log.path)[2]
    flip(log.path, (hit[0] + hit[1]) // 2, 40)
    assert [r["episode_id"] for r in log.read()] == [f"b{b}-{i}" for b in (0, 1, 3, 4) for i in range(3)]
    warning = capsys.readouterr().err.strip()
    assert (
        warning.count("\n") == 0
        and "transcripts.jsonl.gz: skipped" in warning
        and "damaged bytes in 1 place(s)" in warning
        and "12 records" in warning
    )


def test_resume_salvages_transcripts_after_flipped_bytes(tmp_path, monkeypatch, capsys):
    """40 bytes flipped in the middle of a crashed run's transcripts: the resume keeps every
    record of the members the damage missed (those after it too), drops only the members it
    hit, says so in one line, and the run goes on to the end."""
    cfg, folder = config(protocol={"epochs": 4, "batch_size": 4, "checkpoint_interval_s": 0}), tmp_path / "run"
    crash_in_learn(monkeypatch, cfg, folder, 30)  # in epoch 3: the batch is in neither file
    log = TranscriptLog(folder)
    written = log.read()
    by_member = members(log.path)
    middle = log.path.stat().st_size // 2
    flip(log.path, middle, 40)
    hit = {i for i, (start, end, _) in enumerate(by_member) if start < middle + 40 and middle < end}
    lost = {e for i in hit for e in by_member[i][2]}
    after = [e for i, (start, _, ids) in enumerate(by_member) if start >= middle + 40 for e in ids]
    assert 1 <= len(hit) <= 2 and len(after) >= 40
    capsys.readouterr()
    run(cfg, folder)
    warnings = [line for line in capsys.readouterr().err.splitlines() if "transcripts.jsonl.gz" in line]
    assert len(warnings) == 1 and "the resume keeps the" in warnings[0], warnings
    resumed = log.read()
    kept = [r for r in resumed if r["episode_id"] in {w["episode_id"] for w in written}]
    assert kept == [r for r in written if r["episode_id"] not in lost]  # every intact record, after the damage too, unchanged
    assert not lost & {r["episode_id"] for r in resumed}
    assert len(resumed) > len(kept)  # and the rest of the run added its own


def test_resume_keeps_the_decodable_records_of_a_cut_last_member_the_log_holds(tmp_path, capsys):
    """A last member cut short although the log holds its episodes is damage, not a crash (a
    batch's member is fsynced before its log lines): the resume keeps the whole lines that still
    decode from it and says so in one line. Before, they were deleted with no word."""
    log = TranscriptLog(tmp_path)
    log.append([record("a"), record("b")])
    log.append([record(f"c{i}", calls=3) for i in range(8)])
    start, end, _ = members(log.path)[-1]
    data = log.path.read_bytes()
    log.path.write_bytes(data[: start + (end - start) * 9 // 10])
    torn = log.salvage()
    assert torn.torn_tail and not torn.damaged and 1 <= len(torn.torn_records) < 8
    decodable = ["a", "b"] + [r["episode_id"] for r in torn.torn_records]
    log.keep_only([record(i) for i in ["a", "b"] + [f"c{i}" for i in range(8)]])
    assert [r["episode_id"] for r in log.read()] == decodable
    warning = capsys.readouterr().err.strip()
    assert (
        warning.count("\n") == 0
        and "last gzip member is cut short though the log holds its episodes" in warning
        and f"keeps the {len(decodable)} records" in warning
    ), warning


def test_resume_drops_a_cut_last_member_the_log_does_not_hold_without_a_word(tmp_path, capsys):
    """What a crash leaves (the member of a batch not yet logged, cut mid-write) is cut away silently."""
    log = TranscriptLog(tmp_path)
    log.append([record("a")])
    log.append([record(f"c{i}", calls=3) for i in range(8)])
    start, end, _ = members(log.path)[-1]
    log.path.write_bytes(log.path.read_bytes()[: start + (end - start) * 9 // 10])
    log.keep_only([record("a")])
    assert [r["episode_id"] for r in log.read()] == ["a"] and not log.salvage().torn_tail
    assert capsys.readouterr().err == ""


def test_resume_says_a_last_member_cut_in_its_first_bytes_lost_logged_batches(tmp_path, capsys):
    """torn7v.py 5 / 12: a last member cut before any line decodes names no episode, so the resume
    dropped it without a word although the log holds its batch. The log holding a batch after the
    last whole member, in a phase that writes transcripts, tells damage from a crash: one warning."""
    for cut in (5, 12):
        (tmp_path / str(cut)).mkdir()
        log = TranscriptLog(tmp_path / str(cut))
        log.append([record("a", batch=0), record("b", batch=0)])
        log.append([record(f"c{i}", calls=3, batch=1) for i in range(8)])
        start, _, _ = members(log.path)[-1]
        log.path.write_bytes(log.path.read_bytes()[: start + cut])
        assert log.salvage().torn_tail and not log.salvage().torn_records
        log.keep_only(
            [record("a", batch=0), record("b", batch=0), record("v", phase="validation")] + [record(f"c{i}", batch=1) for i in range(8)]
        )
        assert [r["episode_id"] for r in log.read()] == ["a", "b"]
        warning = capsys.readouterr().err.strip()
        assert (
            warning.count("\n") == 0
            and "cut short before its first whole line, though the log holds 1 batch(es) after the last whole member" in warning
        ), warning
        assert "keeps the 2 records" in warning


def test_resume_drops_a_member_a_crash_cut_in_its_first_bytes_without_a_word(tmp_path, capsys):
    """The crash case beside it: the log holds after the last whole member only batches of a phase
    that writes no transcripts (a validation batch without LLM calls); the cut member is the unlogged next one."""
    log = TranscriptLog(tmp_path)
    log.append([record("a", batch=0)])
    log.append([record("c", calls=3, batch=1)])
    start, _, _ = members(log.path)[-1]
    log.path.write_bytes(log.path.read_bytes()[: start + 5])
    log.keep_only([record("a", batch=0), record("v", phase="validation")])
    assert [r["episode_id"] for r in log.read()] == ["a"] and capsys.readouterr().err == ""


def test_resume_of_a_run_keeps_the_records_of_its_cut_last_member(tmp_path, monkeypatch, capsys):
    """torn7 in a whole run: a crashed run whose last member (its episodes logged) is cut at 9/10:
    the resume keeps every record that decodes, warns once, and runs to the end."""
    cfg, folder = config(protocol={"epochs": 2, "batch_size": 4, "checkpoint_interval_s": 0}), tmp_path / "run"
    crash_in_learn(monkeypatch, cfg, folder, 12)
    log = TranscriptLog(folder)
    start, end, _ = members(log.path)[-1]
    log.path.write_bytes(log.path.read_bytes()[: start + (end - start) * 9 // 10])
    decodable = log.salvage()
    assert decodable.torn_tail and decodable.torn_records
    capsys.readouterr()
    run(cfg, folder)
    warnings = [line for line in capsys.readouterr().err.splitlines() if "transcripts.jsonl.gz" in line]
    assert len(warnings) == 1 and "cut short though the log holds its episodes" in warnings[0], warnings
    resumed = {r["episode_id"]: r for r in log.read()}
    assert all(resumed.get(r["episode_id"]) == r for r in decodable.records + decodable.torn_records)


def test_transcript_lines_python_cannot_hold_are_skipped_with_the_warning(tmp_path, capsys):
    """A line with a number of 5,000 digits (ValueError) or arrays nested 100,000 deep (RecursionError)
    is a bad line like malformed JSON: the report reads on, with one warning, no traceback."""
    log = TranscriptLog(tmp_path)
    log.append([record("a")])
    lines = b'{"episode_id": "x", "n": 1' + b"0" * 5000 + b"}\n" + b'{"episode_id": "y", "z": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    with open(log.path, "ab") as f:
        f.write(gzip.compress(lines, mtime=0))
    log.append([record("b")])
    assert [r["episode_id"] for r in log.read()] == ["a", "b"]
    warning = capsys.readouterr().err.strip()
    assert warning.count("\n") == 0 and "skipped 2 line(s) that are not a transcript record" in warning


def test_a_transcripts_fifo_is_never_read_and_reads_as_no_records_with_a_warning(tmp_path, capsys):
    """A FIFO in place of transcripts.jsonl.gz hung the report's viewer; now it is one warning."""
    import os

    log = TranscriptLog(tmp_path)
    os.mkfifo(log.path)
    assert log.read() == []
    warning = capsys.readouterr().err.strip()
    assert warning.count("\n") == 0 and "transcripts.jsonl.gz is not a regular file" in warning


def test_a_transcripts_file_past_its_cap_is_never_read_and_reads_as_no_records_with_a_warning(tmp_path, capsys):
    """A 20 GB sparse transcripts.jsonl.gz was read whole (MemoryError): refused on its size before a byte is read."""
    import os

    log = TranscriptLog(tmp_path)
    log.append([record("a")])
    os.truncate(log.path, 20 << 30)
    assert log.read() == []
    warning = capsys.readouterr().err.strip()
    assert warning.count("\n") == 0 and f"{log.path} is larger than {MAX_TRANSCRIPTS_BYTES} bytes (21474836480 bytes)" in warning, warning


def _read_with_peak(log: TranscriptLog) -> tuple[list, int]:
    """What `log` reads, and the most memory Python held while it read."""
    import tracemalloc

    tracemalloc.start()
    try:
        return log.read(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _bomb(inflated_bytes: int) -> bytes:
    """One gzip member: a record whose text is `inflated_bytes` of zeros (about 1,000 times smaller compressed)."""
    packer, piece = zlib.compressobj(9, zlib.DEFLATED, 31), b"0" * (1 << 20)
    body = packer.compress(b'{"episode_id": "bomb", "pad": "')
    body += b"".join(packer.compress(piece) for _ in range(inflated_bytes >> 20))
    return body + packer.compress(b'"}\n') + packer.flush()


def test_a_transcripts_gzip_bomb_is_refused_once_it_inflates_past_the_cap(tmp_path, monkeypatch, capsys):
    """Before (the sixth independent round): a 1.6 MB file inflating to 1.5 GiB was inflated whole; the report reached 3.3 GB."""
    monkeypatch.setattr(transcripts, "MAX_TRANSCRIPT_TEXT_BYTES", 16 << 20)
    log = TranscriptLog(tmp_path)
    log.append([record("a")])
    with open(log.path, "ab") as f:
        f.write(_bomb(256 << 20))  # 16 times the cap, 250 kB on disk
    records, peak = _read_with_peak(log)
    assert records == []
    warning = capsys.readouterr().err.strip()
    assert warning.count("\n") == 0 and "inflates past 16,777,216 bytes" in warning and "read without its transcripts" in warning, warning
    assert peak < 3 * (16 << 20), peak  # inflated a chunk at a time, not whole
    with pytest.raises(FileTooLargeError, match="inflates past"):  # a resume is refused (one line), nothing cut
        log.keep_only([record("a")])


def test_appends_stop_short_of_what_the_readers_take_so_a_resume_reads_the_file(tmp_path, monkeypatch, capsys):
    """43b: a model's long outputs (65,000 emoji a completion, 30 steps) wrote records that 11 episodes later passed what a
    reader takes; the resume refused the run's own file, so the run could never finish. The writer counts as the readers
    do and stops before their bounds, with one warning; after a resume it goes on counting from what the file holds."""
    monkeypatch.setattr(transcripts, "MAX_TRANSCRIPT_TEXT_BYTES", 1 << 20)
    log = TranscriptLog(tmp_path)
    long = [record(f"e{i}") for i in range(12)]
    for each in long:
        each["acting"][0]["completion"] = "\U0001f600" * 25_000  # 100 kB of UTF-8 a record
    for i in range(0, 12, 2):
        log.append(long[i : i + 2])
    warning = capsys.readouterr().err.strip()
    assert warning.count("\n") == 0 and "no more records from episode e10 on" in warning, warning
    assert [r["episode_id"] for r in log.read()] == [f"e{i}" for i in range(10)]
    resumed = TranscriptLog(tmp_path)
    resumed.keep_only(long[:10])  # what a resume does first: the file reads, and the count goes on from it
    resumed.append(long[10:])
    assert "no more records from episode e10 on" in capsys.readouterr().err
    assert len(resumed.read()) == 10 and resumed.salvage().text_bytes <= 1 << 20


def test_records_longer_than_an_inflated_chunk_read_whole(tmp_path):
    log = TranscriptLog(tmp_path)
    long = record("a")
    long["acting"][0]["completion"] = "x" * (3 * transcripts._INFLATE_CHUNK_BYTES + 17)
    log.append([long, record("b")])
    log.append([record("c")])
    assert [r["episode_id"] for r in log.read()] == ["a", "b", "c"] and log.read()[0] == long


SHAPES = {
    "empty objects": b'{"episode_id": "a", "acting": [' + b"{}," * 20000 + b"{}]}",
    "empty lists": b'{"episode_id": "a", "acting": [' + b"[]," * 20000 + b"[]]}",
    "empty messages": b'{"episode_id": "a", "acting": [' + b'{"role":"","content":""},' * 20000 + b"{}]}",
    "numbers": b'{"episode_id": "a", "acting": [' + b"1000," * 20000 + b"1]}",
    "floats": b'{"episode_id": "a", "acting": [' + b"1.5," * 20000 + b"1]}",
    "one wide character": b'{"episode_id": "a", "completion": "' + b"x" * 100000 + "\U0001f600".encode() + b'"}',
    "a real record": (Path(__file__).parents[2] / "results/llb_db/methods/method=rag,task_order_seed=0/transcripts.jsonl.gz"),
}


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_a_lines_estimate_bounds_the_memory_its_record_takes(shape):
    import tracemalloc

    line = gzip.decompress(shape.read_bytes()).splitlines()[0] if isinstance(shape, Path) else shape
    tracemalloc.start()
    try:
        record = json.loads(line)
        taken = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert record and taken <= transcripts._estimated_bytes(line), (taken, transcripts._estimated_bytes(line))


def test_transcript_lines_whose_records_would_take_too_much_memory_are_refused_before_parsing(tmp_path, monkeypatch, capsys):
    """Before (the seventh independent round): a 125 kB file of lines of empty objects (100 MB inflated, under the text cap)
    took the report to 2.97 GB; 312 kB ended it in a MemoryError."""
    monkeypatch.setattr(transcripts, "MAX_TRANSCRIPT_RECORDS_BYTES", 64 << 20)
    log = TranscriptLog(tmp_path)
    log.append([record("a")])
    line = b'{"episode_id": "x", "acting": [' + b"{}," * (1 << 20) + b"{}]}\n"
    with open(log.path, "ab") as f:
        f.write(gzip.compress(line * 8, mtime=0))  # 25 MB of text, 600 MB once parsed
    records, peak = _read_with_peak(log)
    assert records == []
    warning = capsys.readouterr().err.strip()
    assert warning.count("\n") == 0 and "would take more than 67,108,864 bytes of memory" in warning, warning
    assert peak < 128 << 20, peak
    with pytest.raises(FileTooLargeError, match="bytes of memory"):
        log.keep_only([record("a")])


@pytest.mark.parametrize(
    "key, value",
    [("acting", 5), ("memory_calls", True), ("memory_ops", "x"), ("acting", [{"messages": 5}]), ("memory_calls", [{"messages": [1.5]}])],
)
def test_a_record_whose_calls_are_no_list_is_skipped_with_the_warning(tmp_path, capsys, key, value):
    """The eighteenth probe round: one record with `acting`, `memory_calls` or `memory_ops` a number ended the report in a
    TypeError traceback. And an integer past 64 bits (the eighteenth too: an OverflowError in report and export)."""
    log = TranscriptLog(tmp_path)
    log.append([record("a")])
    with open(log.path, "ab") as f:
        f.write(
            gzip.compress(
                json.dumps({"episode_id": "x", key: value}).encode() + b'\n{"episode_id": "y", "n": ' + b"9" * 30 + b"}\n", mtime=0
            )
        )
    assert [r["episode_id"] for r in log.read()] == ["a"]
    assert "skipped 2 line(s) that are not a transcript record" in capsys.readouterr().err
