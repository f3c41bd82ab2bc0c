"""The run folder: manifest, append-only episode log, memory snapshots, completion marker.

Crash safety: every file except the log is replaced atomically (write, fsync,
rename); the log gets whole batches in one write followed by fsync, and on resume a
torn last line or an incomplete last batch is cut off, so the log is always a prefix
of the run's schedule. Memory snapshots carry the sha256 of each of their files
(SHA256SUMS, the format `sha256sum -c` reads), verified before they are used.

The manifest carries the size of the run's schedule (`schedule_episodes`) and the sha256
of all of itself (`manifest_sha256`, over its canonical JSON), checked whenever it is read:
a label, a split hash or a schedule edited by hand is refused, as an edited config is by
its config hash. COMPLETE carries the sha256 of metrics.json, of the log, of the final snapshot's SHA256SUMS and of the
manifest, written before it (so a final snapshot or a manifest swapped for another run's, itself whole, is refused). A folder
marked COMPLETE is checked against its log, its metrics (their count and their digest) and its
final snapshot (`verify_complete`) by the runner and by every reader alike.

One writer: a run holds an exclusive lock on the folder's `.lock` file (flock) for
its whole life; the kernel releases it when the process ends, however it ends.

What the harness deletes: only folders that this invocation created, and only while
they hold no run (no manifest.json) — after a start that failed. A folder that
existed before is never removed (`remove_if_created`, the one place that deletes one).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import itertools
import json
import os
import re
import shutil
import stat
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from memrl_bench.core.config import InputError, config_hash, fits_64_bits
from memrl_bench.core.errors import resolved

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
METRICS = "metrics.json"
COMPLETE = "COMPLETE"
TRANSCRIPTS = "transcripts.jsonl.gz"  # every prompt and completion (core.transcripts)
LOCK = ".lock"
CHECKSUMS = "SHA256SUMS"
FINAL_CHECKSUMS = f"memory/final/{CHECKSUMS}"  # the final snapshot's checksums: their digest binds every file of it
# what COMPLETE holds the sha256 of (the manifest too: another run's, whole in itself, was read as this run's)
COMPLETE_DIGESTS = {
    METRICS: "metrics_sha256",
    EPISODES: "episodes_sha256",
    FINAL_CHECKSUMS: "final_memory_sha256",
    MANIFEST: "manifest_file_sha256",
}
# ...and of the transcripts, when the run wrote them (transcripts_format 3): a record edited by hand, its episode's digest
# kept, was shown as what the model said (48b)
TRANSCRIPTS_DIGEST = "transcripts_sha256"
REBUILD_HINT = "delete the folder memory/ and re-run the same command: memory is rebuilt from the episode log"
FINAL_REBUILD_HINT = (
    f"delete the folder memory/ and the {COMPLETE} file, and re-run the same command: memory is rebuilt from the episode log"
)
DIGEST = "manifest_sha256"  # the manifest's own digest, a field of it
SCHEDULE_EPISODES = "schedule_episodes"  # the episodes of the run's whole schedule, recorded in its manifest
SEAL_HINT = "if it is as its run wrote it, add the digest with `python scripts/seal_run_folders.py FOLDER` (a memrl-bench checkout)"
# What a reader accepts of each kind of file, so a huge or sparse file is one error line, not a MemoryError.
MAX_SNAPSHOT_DEPTH = 64  # folders below a memory snapshot's top (the methods shipped write one level)
MAX_HASHED_FILE_BYTES = 16 << 30  # a snapshot's file, episodes.jsonl: hashed whole before they are read (~16 s at 1 GB/s)
MAX_SMALL_FILE_BYTES = 16 << 20  # manifest.json, metrics.json, SHA256SUMS, the gold cache: a run writes kilobytes
MAX_LINE_BYTES = (
    64 << 20
)  # one line of episodes.jsonl or items.jsonl: kilobytes as a rule; max_steps turns of capped completions (64 Ki chars at least) at most
_SHA256 = re.compile(r"[0-9a-f]{64}")


class CorruptRunFolderError(InputError, RuntimeError):
    """A run folder's files are damaged in a way no crash of the harness produces."""


class EpisodeTooLargeError(InputError, RuntimeError):
    """An episode whose log line would pass MAX_LINE_BYTES: refused before it is written, so the log stays readable."""


class FileTooLargeError(CorruptRunFolderError):
    """A file, or a line of one, past the size its kind of file is read up to (MAX_SMALL_FILE_BYTES, MAX_LINE_BYTES...)."""


class RunFolderBusyError(InputError, RuntimeError):
    """Another process holds the run folder's lock."""


class UnreadableJSONError(ValueError):
    """Bytes that are not one JSON value Python can hold; its message is the reason, in a few words."""


def parse_json(data: bytes | str, strict: bool = False) -> Any:
    """JSON from a file that may be damaged or hostile; every way it fails is one UnreadableJSONError.

    Beyond malformed JSON and bytes that are not UTF-8, json.loads fails with a ValueError on a
    number of more digits than Python converts (4,300) and with a RecursionError on arrays or
    objects nested deeper than the interpreter's stack: each reader reports all of these as it
    reports malformed JSON, never as a traceback. `strict` (run files: what their tables hold):
    an integer past 64 bits, or a lone surrogate escape (`"\\ud800"`, legal JSON but no text), is
    unreadable too (each ended report or export in a traceback: eighteenth and nineteenth rounds).
    """
    try:
        value = json.loads(data, parse_int=_int64 if strict else None)
        if strict and ("\\ud" in data or "\\uD" in data if isinstance(data, str) else b"\\ud" in data or b"\\uD" in data):
            json.dumps(value, ensure_ascii=False).encode()  # paired surrogate escapes are text; a lone one fails here
        return value
    except json.JSONDecodeError as err:
        raise UnreadableJSONError(f"{err.msg}: line {err.lineno} column {err.colno}") from None
    except UnicodeDecodeError as err:
        raise UnreadableJSONError(f"not UTF-8 text at byte {err.start}") from None
    except RecursionError:
        raise UnreadableJSONError("arrays or objects nested too deeply to read") from None
    except UnicodeEncodeError:
        raise UnreadableJSONError("a lone surrogate escape, which is no text") from None
    except ValueError as err:  # int(): "Exceeds the limit (4300 digits) for integer string conversion..."
        raise UnreadableJSONError(str(err).split(":")[0]) from None


def _int64(digits: str) -> int:
    """An integer of a run file, as the tables hold it (64 bits): a line's `epoch` of 10**30 ended report and export in an
    OverflowError traceback (eighteenth probe round)."""
    value = int(digits)
    if not fits_64_bits(value):
        raise ValueError(f"an integer past 64 bits ({digits[:20]}...)")
    return value


def open_regular(path: Path) -> IO[bytes]:
    """`path` opened for reading in binary if it is a regular file; CorruptRunFolderError if it is
    something else (a FIFO or a device would block or never end a read, so it is never read) or a
    file of /proc or /sys. Symbolic links are followed; FileNotFoundError as open() raises it."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise CorruptRunFolderError(
            f"{path} is not a regular file (a FIFO, a device, a folder...); a run writes only regular files, so it was put there by hand"
        )
    f = open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb")  # O_NONBLOCK: a FIFO swapped in since the stat cannot block the open
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        f.close()
        raise CorruptRunFolderError(
            f"{path} is not a regular file (a FIFO, a device, a folder...); a run writes only regular files, so it was put there by hand"
        )
    if os.fstatvfs(f.fileno()).f_blocks == 0:  # /proc, /sys, cgroups: files that say 0 bytes and never end (/proc/kmsg spun forever)
        f.close()
        raise CorruptRunFolderError(
            f"{path} is a file of a file system with no storage (/proc, /sys...), reached through a link; a run writes no link, "
            "so it was put there by hand"
        )
    return f


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of `path`, a regular file (`open_regular`) of at most `limit` bytes; FileTooLargeError
    if it is larger (a sparse file of gigabytes is refused before a byte is read, never loaded whole)."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(size + 1) if size <= limit else b""  # read(limit + 1) would allocate the limit's bytes
        if len(data) > size:  # it grew since the fstat
            data += f.read(limit + 1 - len(data))
    if size > limit or len(data) > limit:  # the second: it grew since the fstat
        raise FileTooLargeError(
            f"{path} is larger than {limit} bytes ({max(size, len(data))} bytes); a run writes far less, so it was put there by hand or "
            "damaged"
        )
    return data


def regular_lines(path: Path, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes]]:
    """(line number, line with its newline) of a regular file (`open_regular`), read one line at a time,
    never the whole file; FileTooLargeError naming the line if one is longer than `limit` bytes."""
    with open_regular(path) as f:
        for number in itertools.count(1):
            raw = f.readline(limit + 1)
            if not raw:
                return
            if len(raw) > limit:
                raise FileTooLargeError(
                    f"{path} line {number} is longer than {limit} bytes; a run writes far shorter lines, so it was put there by hand or "
                    "damaged"
                )
            yield number, raw


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON so that a crash leaves either the old file or the new one."""
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True, default=str))


def write_text_atomic(path: Path, text: str) -> None:
    """Write a file so that a crash leaves either the old file or the new one."""
    with replacing(path, "w", path.with_name(path.name + ".tmp")) as f:  # one writer per run folder (its lock): one name
        f.write(text)


def write_texts_atomic(files: dict[Path, str]) -> None:
    """Write files that belong together (a study's findings.md, findings.html and timing.json): every one written and
    fsync'd under a temporary name before the first is renamed, so a kill leaves the old set or the new one (but for the
    microseconds between two renames), never new findings beside old ones."""
    with contextlib.ExitStack() as renamed_when_all_are_written:  # each `replacing` renames as the stack unwinds
        for path, text in files.items():
            f = renamed_when_all_are_written.enter_context(replacing(path, "w"))  # under `.<name>.tmp-<pid>`, as the export's
            f.write(text)
            f.flush()
            os.fsync(f.fileno())  # here, not as the stack unwinds between renames


@contextlib.contextmanager
def replacing(path: Path, mode: str = "wb", tmp: Path | None = None) -> Iterator[IO[Any]]:
    """A file that replaces `path` whole when the block ends: written under a temporary name
    beside it (default `.<name>.tmp-<pid>`), fsync'd, then renamed, so a kill at any moment
    leaves the old file or the new one, never a part; the temporary file is removed if the block fails."""
    if not path.name:  # "" or "/": a folder, not a file (with_name would raise a ValueError naming nothing)
        raise IsADirectoryError(errno.EISDIR, "names a folder, not a file", str(path))
    tmp = tmp or path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with naming(tmp), open(tmp, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


RENAME_EXCHANGE, AT_FDCWD = 2, -100  # linux/fs.h, fcntl.h


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (renameat2 with RENAME_EXCHANGE: Linux 3.15, glibc 2.28),
    so no moment has neither; False, nothing changed, where the system or the file system cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


@contextlib.contextmanager
def naming(path: Path) -> Iterator[None]:
    """I/O errors inside name `path` (a full disk's write error names no file by itself)."""
    try:
        yield
    except OSError as err:
        if err.filename is None:
            raise OSError(err.errno, err.strerror or str(err), str(path)) from err
        raise


def manifest_digest(manifest: dict) -> str:
    """The sha256 of a manifest's canonical JSON (sorted keys, no spaces), its own digest field left out."""
    body = {k: v for k, v in manifest.items() if k != DIGEST}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def sealed(manifest: dict) -> dict:
    """The manifest as written (its values as JSON reads them back) with its digest added."""
    body = json.loads(json.dumps({k: v for k, v in manifest.items() if k != DIGEST}, default=str))
    return {**body, DIGEST: manifest_digest(body)}


def batch_key(record: dict) -> tuple:
    """(phase, split, epoch, batch_index) of a log or transcript record; None where a damaged one lacks a field."""
    return (record.get("phase"), record.get("split"), record.get("epoch"), record.get("batch_index"))


def scheduled_count(records: list[dict]) -> int:
    """The records of scheduled episodes: retries (protocol.retries, an `attempt` >= 1) are played on top of the schedule."""
    return sum(1 for r in records if not r.get("attempt"))


def retries_complete(records: list[dict]) -> bool:
    """Whether every scheduled episode of a batch's records is followed by all the retries its record counts
    (info.retry.attempts; a batch is one write, so a write torn at a line's end can only drop its last records)."""
    expected = sum(int(((r.get("info") or {}).get("retry") or {}).get("attempts", 1)) for r in records if not r.get("attempt"))
    return expected == len(records)


def duplicate_ids(records: list[dict]) -> list[str]:
    """Episode ids logged more than once (two writers on one folder), sorted."""
    return sorted(i for i, n in Counter(r.get("episode_id") for r in records).items() if n > 1)


# ---- what this invocation created ------------------------------------------------------

# run folder -> the topmost folder of its path that did not exist when it was first noted
# (None: the run folder existed). Noted before anything creates it, consumed by the run.
_NEW_FOLDERS: dict[Path, Path | None] = {}


def _key(path: Path | str) -> Path:
    return Path(os.path.abspath(path))


def note_new(path: Path | str) -> None:
    """Remember which part of `path` does not exist yet, before anything creates it.

    The first note of a path wins: a later one (after the folder was made) changes nothing.
    """
    key = _key(path)
    if key not in _NEW_FOLDERS:
        missing = [p for p in (key, *key.parents) if not p.exists()]
        _NEW_FOLDERS[key] = missing[-1] if missing else None


def remove_new_folders(path: Path | str) -> None:
    """The folders note_new found missing for `path`, `path` first, each only if it is empty (what lives there stays)."""
    key = _key(path)
    top = _NEW_FOLDERS.get(key)
    if top is None:
        return
    for folder in (key, *key.parents):
        if not folder.is_relative_to(top):
            break
        with contextlib.suppress(OSError):  # not empty: something else lives there now
            folder.rmdir()


def forget_new(path: Path | str) -> None:
    _NEW_FOLDERS.pop(_key(path), None)


class RunFolder:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._created_lock = False  # whether lock() created the lock file

    @property
    def episodes_path(self) -> Path:
        return self.path / EPISODES

    def is_complete(self) -> bool:
        return (self.path / COMPLETE).exists()

    def has_manifest(self) -> bool:
        return (self.path / MANIFEST).exists()

    # ---- one writer ----------------------------------------------------------------------
    @staticmethod
    def _open_existing_lock(path: Path) -> int:
        """The lock file there, opened where it is: a link is not followed (its target, outside the folder, had its text
        replaced by a PID: round 25b) and anything but a regular file (a FIFO, /dev/null) is refused by name."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as err:
            if err.errno != errno.ELOOP:
                raise
            raise CorruptRunFolderError(f"{path} is a link, not the run folder's lock file; remove it and run again") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise CorruptRunFolderError(f"{path} is not a regular file, so not the run folder's lock file; remove it and run again")
        return fd

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the folder's exclusive lock (creating the folder); RunFolderBusyError if another process has it."""
        path = self.path / LOCK
        for _ in range(10):
            with naming(path):
                self.path.mkdir(parents=True, exist_ok=True)
                try:
                    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                    self._created_lock = True
                except FileExistsError:
                    fd = self._open_existing_lock(path)
                    self._created_lock = False
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise RunFolderBusyError(
                    f"{self.path} is in use by another memrl-bench process (PID {holder}); wait for it to end, "
                    "or use another results_dir / experiment_name"
                ) from None
            if os.path.exists(path) and os.stat(path).st_ino == os.fstat(fd).st_ino:
                break
            os.close(fd)  # the folder was removed by a failed start meanwhile: lock the new one
        else:
            raise RunFolderBusyError(f"{self.path}: could not lock {LOCK} (the folder keeps being removed)")
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)

    def remove_if_created(self) -> None:
        """After a failed start (holding the lock): remove the run folder and the empty
        folders above it if this invocation created them and no run was written."""
        if self.has_manifest():
            return
        top = _NEW_FOLDERS.get(_key(self.path))
        if top is None:  # the folder was there before: only the lock file may be ours
            if self._created_lock:
                (self.path / LOCK).unlink(missing_ok=True)  # safe while held: lockers check the file they hold is still there
            return
        shutil.rmtree(self.path, ignore_errors=True)
        remove_new_folders(self.path)

    def remove_if_new(self) -> None:
        """A start that failed before the run began (a config that does not resolve): what remove_if_created removes,
        under the lock (another process may have made the folder since)."""
        with contextlib.suppress(RunFolderBusyError), self.lock():
            self.remove_if_created()

    # ---- manifest --------------------------------------------------------------------------
    def read_manifest(self) -> dict | None:
        """The manifest, its config hash checked against its config and its digest against the whole (None if there is none)."""
        path = self.path / MANIFEST
        if not path.exists():
            return None
        try:
            manifest = parse_json(read_regular(path, MAX_SMALL_FILE_BYTES), strict=True)
        except UnreadableJSONError as err:
            raise CorruptRunFolderError(
                f"{path} is not valid JSON ({err}); it is written atomically, so it was edited or damaged"
            ) from None
        if not isinstance(manifest, dict) or not isinstance(manifest.get("config"), dict):
            raise CorruptRunFolderError(f"{path} holds no config; it is written atomically, so it was edited or damaged")
        if manifest.get("config_hash") != config_hash(manifest["config"]):
            raise CorruptRunFolderError(
                f"{path}: its config_hash does not match its config, so the manifest was edited by hand; the run's results cannot be "
                "attributed to that config"
            )
        if DIGEST not in manifest:
            raise CorruptRunFolderError(
                f"{path} has no {DIGEST} (written before manifests carried a digest, or the digest was removed); {SEAL_HINT}"
            )
        if manifest[DIGEST] != manifest_digest(manifest):
            raise CorruptRunFolderError(
                f"{path}: its {DIGEST} does not match its contents, so the manifest (labels, split hashes, schedule...) was edited by hand "
                "or damaged"
            )
        return manifest

    def write_manifest(self, manifest: dict) -> None:
        """Write the manifest with its digest (`sealed`)."""
        self.path.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path / MANIFEST, sealed(manifest))

    # ---- the episode log -------------------------------------------------------------------
    def read_episodes(self) -> list[dict]:
        """Every whole line of the log (a torn last line, from a crash mid-write, is ignored)."""
        return self.read_log()[0]

    def read_log(self) -> tuple[list[dict], bool]:
        """(records of the whole lines, whether a torn last line follows them)."""
        if not self.episodes_path.exists():
            return [], False
        records = []
        for number, raw in regular_lines(self.episodes_path):
            if not raw.endswith(b"\n"):
                return records, True
            try:
                record = parse_json(raw, strict=True)
            except UnreadableJSONError as err:
                record = err
            if not isinstance(record, dict):  # `[]`, `1`, `null`: JSON, but no record (a traceback in every reader: 32nd round)
                reason = record if isinstance(record, UnreadableJSONError) else "a JSON value that is not an object"
                raise CorruptRunFolderError(
                    f"{self.episodes_path} line {number} is not valid JSON ({reason}); only a torn last line comes from a crash, so "
                    "this folder was edited or damaged"
                )
            records.append(record)
        return records, False

    def truncate_to_batches(self, expected_size: Callable[[tuple], int | None]) -> list[dict]:
        """Cut the log to its complete batches; return their records.

        `expected_size(key)` gives the number of episodes a batch has in the schedule
        (None: the batch is not in the schedule, an error).
        """
        records, torn = self.read_log()
        keep: list[dict] = []
        current: list[dict] = []

        def whole(batch: list[dict]) -> bool:
            size = expected_size(batch_key(batch[0]))
            if size is None:
                raise CorruptRunFolderError(f"{self.episodes_path}: batch {batch_key(batch[0])} is not in this run's schedule")
            return scheduled_count(batch) == size and retries_complete(batch) and not duplicate_ids(batch)

        for record in records:
            if current and batch_key(record) != batch_key(current[0]):
                # a batch is one write: only the last can be cut; one cut or grown before others was edited (a line removed
                # from a middle batch was played to COMPLETE over 599 of 600 episodes: twentieth independent round)
                if not whole(current):
                    raise CorruptRunFolderError(
                        f"{self.episodes_path}: batch {batch_key(current[0])} is not whole ({scheduled_count(current)} of its "
                        f"{expected_size(batch_key(current[0]))} episodes, or one twice) and later batches were logged after it: "
                        "the log was edited or damaged; it cannot be resumed (run it again in another folder)"
                    )
                keep.extend(current)
                current = []
            current.append(record)
        if current and whole(current):
            keep.extend(current)
        if torn or len(keep) != len(records):
            write_text_atomic(self.episodes_path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in keep))
        return keep

    def log_position(self) -> dict[str, Any]:
        """Where the log stands, for a checkpoint to carry: its size and sha256. A checkpoint binds itself to its run this way:
        another run's checkpoint, whole in itself, was restored by a resume without a word (the thirty-second round)."""
        size = self.episodes_path.stat().st_size if self.episodes_path.exists() else 0
        return {"log_bytes": size, "log_sha256": self._log_prefix_sha256(size)}

    def verify_log_position(self, snapshot: Path, position: dict[str, Any]) -> None:
        """CorruptRunFolderError unless the log begins with the bytes `position` (log_position()'s, saved with `snapshot`) says."""
        size, digest = position.get("log_bytes"), position.get("log_sha256")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0 or self._log_prefix_sha256(size) != digest:
            raise CorruptRunFolderError(
                f"{snapshot} was not written beside this run's {EPISODES} (another run's, or written before checkpoints carried the "
                f"log's digest); {REBUILD_HINT}"
            )

    def _log_prefix_sha256(self, size: int) -> str | None:
        """The sha256 of the log's first `size` bytes (None if it is shorter)."""
        digest = hashlib.sha256()
        if size:
            if not self.episodes_path.exists():
                return None
            with open_regular(self.episodes_path) as f:
                left = size
                while left and (chunk := f.read(min(left, 1 << 20))):
                    digest.update(chunk)
                    left -= len(chunk)
            if left:
                return None
        return digest.hexdigest()

    def append_episodes(self, records: list[dict]) -> None:
        """Append one batch's records in a single write, then fsync; a line past what the log's readers take (a model's
        long outputs over many steps: 43b made one of 1 GB, which the run then refused to resume) is refused first."""
        lines = [json.dumps(r, sort_keys=True) + "\n" for r in records]  # ASCII: a character is a byte
        for record, line in zip(records, lines, strict=True):
            if len(line) > MAX_LINE_BYTES:
                raise EpisodeTooLargeError(
                    f"{self.episodes_path}: episode {record.get('episode_id')}'s line would be {len(line):,} bytes, past the "
                    f"{MAX_LINE_BYTES:,} a reader of the log takes (the model's outputs and the observations of its steps are "
                    "that long); nothing of its batch was written: lower actor.max_steps or env.max_output_chars"
                )
        text = "".join(lines)
        with naming(self.episodes_path), open(self.episodes_path, "a") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())

    def verify_complete(self, manifest: dict | None, log: tuple[list[dict], bool] | None = None) -> None:
        """Check a folder marked COMPLETE against its log (`log`: read_log()'s, when the caller read it),
        the schedule size its (verified) manifest records, its metrics and its final snapshot;
        CorruptRunFolderError if they disagree."""
        records, torn = log if log is not None else self.read_log()
        metrics = self.read_metrics()
        expected = (manifest or {}).get(SCHEDULE_EPISODES)
        problem = None
        if manifest is None:
            problem = f"it has no {MANIFEST}"
        elif not self.episodes_path.exists():
            problem = f"it has no {EPISODES}"
        elif torn:
            problem = f"the last line of {EPISODES} is torn"
        elif duplicate_ids(records):
            problem = f"{EPISODES} logs {len(duplicate_ids(records))} episode ids more than once (two processes wrote it)"
        elif not isinstance(expected, int) or isinstance(expected, bool):
            problem = f"its {MANIFEST} records no {SCHEDULE_EPISODES}"
        elif scheduled_count(records) != expected:
            problem = f"{EPISODES} holds {scheduled_count(records)} episodes, its schedule {expected}"
        elif metrics is None or _logged_by_metrics(metrics) != scheduled_count(records):
            problem = f"{METRICS} is missing or counts other episodes than the log"
        if problem is not None:
            raise CorruptRunFolderError(f"{self.path} is marked {COMPLETE}, but {problem}; delete its {COMPLETE} file to resume the run")
        final = self.path / "memory" / "final"  # never .final.old: COMPLETE is written after the final snapshot's swap
        if not final.is_dir():
            raise CorruptRunFolderError(
                f"{self.path} is marked {COMPLETE}, but memory/final is missing; delete its {COMPLETE} file to resume the run"
            )
        self.verify_snapshot(final, FINAL_REBUILD_HINT)
        problem = self._digest_problem()
        if problem is not None:
            raise CorruptRunFolderError(f"{self.path} is marked {COMPLETE}, but {problem[0]}; {problem[1]}")

    # ---- memory snapshots ------------------------------------------------------------------
    def save_snapshot(self, name: str, write: Callable[[Path], None], meta: dict | None = None) -> Path:
        """Write memory/<name>/ atomically via a temporary folder; `meta` goes to position.json."""
        target = self.path / "memory" / name
        tmp = self.path / "memory" / f".{name}.tmp"
        with naming(tmp):
            _remove_leftover(tmp)
            tmp.mkdir(parents=True)
            write(tmp)
            if meta is not None:
                (tmp / "position.json").write_text(json.dumps(meta, sort_keys=True))
            (tmp / CHECKSUMS).write_text("".join(f"{digest}  {name}\n" for name, digest in _digests(tmp).items()))
        old = self.path / "memory" / f".{name}.old"
        _remove_leftover(old)
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
        _remove_leftover(old)
        return target

    def snapshot_path(self, name: str) -> Path | None:
        """memory/<name>, or its previous version if a crash interrupted the swap."""
        for candidate in (self.path / "memory" / name, self.path / "memory" / f".{name}.old"):
            if candidate.exists():
                return candidate
        return None

    def verify_snapshot(self, path: Path, hint: str = REBUILD_HINT) -> None:
        """Every file of a snapshot against its SHA256SUMS; CorruptRunFolderError naming the first that differs."""
        sums = path / CHECKSUMS
        if not sums.is_file():  # a sealed manifest's run writes one with every snapshot (scripts/seal_run_folders.py seals no other)
            raise CorruptRunFolderError(f"{sums} is missing: the memory snapshot was damaged or edited; {hint}")
        expected = _read_checksums(sums, hint)
        actual = _digests(path, hint)
        for name in sorted(set(expected) | set(actual)):
            if expected.get(name) != actual.get(name):
                state = (
                    "is missing"
                    if name not in actual
                    else "is not listed in its checksums"
                    if name not in expected
                    else "does not match its checksum"
                )
                raise CorruptRunFolderError(f"{path / name} {state}: the memory snapshot was damaged or edited; {hint}")

    # ---- metrics and completion ------------------------------------------------------------
    def write_metrics(self, metrics: dict) -> None:
        write_json_atomic(self.path / METRICS, metrics)

    def read_metrics(self) -> dict | None:
        path = self.path / METRICS
        if not path.exists():
            return None
        try:
            metrics = parse_json(read_regular(path, MAX_SMALL_FILE_BYTES), strict=True)
        except UnreadableJSONError as err:
            raise CorruptRunFolderError(
                f"{path} is not valid JSON ({err}); it is written atomically, so it was edited or damaged"
            ) from None
        if not isinstance(metrics, dict):
            raise CorruptRunFolderError(f"{path} holds no JSON object; it is written atomically, so it was edited or damaged")
        return metrics

    def mark_complete(self) -> None:
        """Write COMPLETE with the sha256 of metrics.json, episodes.jsonl, the final snapshot's SHA256SUMS and manifest.json (all
        written before), which every reader checks, and of the transcripts when there are any, which the viewer checks."""
        digests = "".join(f"{key} {_sha256(self.path / name)}\n" for name, key in COMPLETE_DIGESTS.items())
        if (self.path / TRANSCRIPTS).exists():
            digests += f"{TRANSCRIPTS_DIGEST} {_sha256(self.path / TRANSCRIPTS)}\n"
        write_text_atomic(self.path / COMPLETE, f"complete\n{digests}")

    def transcripts_as_completed(self) -> bool:
        """Whether the transcripts are those whose digest COMPLETE records (False without the digest)."""
        recorded = self.completion_digests().get(TRANSCRIPTS_DIGEST)
        return recorded is not None and recorded == _sha256(self.path / TRANSCRIPTS)

    def completion_digests(self) -> dict[str, str]:
        """The digests COMPLETE records, by their key."""
        text = read_regular(self.path / COMPLETE, MAX_SMALL_FILE_BYTES).decode(errors="replace")
        return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)

    def _digest_problem(self) -> tuple[str, str] | None:
        """(what is wrong with the files COMPLETE records the digests of, what to do), or None: as the run wrote them."""
        recorded = self.completion_digests()
        for name, key in COMPLETE_DIGESTS.items():
            if key not in recorded:
                return f"its {COMPLETE} records no {key} (written before it did, or the digest was removed)", _MIGRATE_HINT
            if recorded[key] != _sha256(self.path / name):
                problem = f"its {name} does not match the {key} its {COMPLETE} records: it was edited, damaged or copied from another run"
                return problem, _MISMATCH_HINTS.get(name, _MIGRATE_HINT)
        return None


# What to do when a digest COMPLETE holds is missing (a run written before it was), or a file does not match it: the
# metrics and the log are checked and computed again; another run's snapshot or manifest must not be sealed as this one's.
_MIGRATE_HINT = f"delete its {COMPLETE} file to check the log and compute the metrics again (the same command), or {SEAL_HINT}"
_MISMATCH_HINTS = {
    FINAL_CHECKSUMS: FINAL_REBUILD_HINT,
    MANIFEST: f"put back the run's own {MANIFEST}: this one was written for another run or edited",
}


def _logged_by_metrics(metrics: dict) -> int | None:
    """The scheduled log lines metrics.json accounts for: its played episodes (first attempts) and the memories fed to
    learn() unplayed (poison)."""
    played, poison = metrics.get("episodes"), metrics.get("poison") or {}
    unplayed = poison.get("memories", 0) if isinstance(poison, dict) else None
    return played + unplayed if isinstance(played, int) and isinstance(unplayed, int) else None


def damaged_by_writing(out: Path) -> Path | None:
    """The run folder that writing at `out` would damage (None if none): `out` is that folder or inside its memory snapshots,
    where a file no SHA256SUMS lists makes every reader refuse the run (export, report and findings check their outputs)."""
    target = resolved(out)
    for folder in (target, *target.parents):
        if (folder / MANIFEST).is_file():
            return folder if folder == target or target.is_relative_to(folder / "memory") else None
    return None


def _remove_leftover(folder: Path) -> None:
    """A snapshot's leftover (a crash's temporary folder or previous version) removed; CorruptRunFolderError naming it when
    it holds folders nested past what shutil.rmtree's recursion reaches (3,000 of them made every resume a traceback: 46b),
    or is a FIFO, a device or a socket, which shutil.rmtree opens and waits on for good (47b)."""
    with contextlib.suppress(FileNotFoundError):
        kind = os.lstat(folder).st_mode
        if not (stat.S_ISDIR(kind) or stat.S_ISLNK(kind) or stat.S_ISREG(kind)):
            raise CorruptRunFolderError(
                f"{folder} is a FIFO, a device or a socket, which a run never writes: it was put there by hand; remove it and run "
                "the same command again"
            )
    try:
        shutil.rmtree(folder, ignore_errors=True)
    except RecursionError:
        raise CorruptRunFolderError(
            f"{folder} holds folders nested too deep to remove here, which a run never writes: it was put there by hand; remove "
            "it (rm -rf) and run the same command again"
        ) from None


def walk(root: Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk(root), top down, links not followed, unreadable folders passed over, with a stack where os.walk (Python
    3.10, 3.11) recursed: 990 nested folders ended report, export, findings and a resume in RecursionError (45b). Emptying
    or narrowing `dirs` prunes as in os.walk."""
    stack = [os.fspath(root)]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as entries:
                listed = list(entries)
        except OSError:
            continue
        dirs, files = [], []
        for entry in listed:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
        yield here, dirs, files
        stack += reversed([os.path.join(here, d) for d in dirs if not os.path.islink(os.path.join(here, d))])


def run_folders(root: Path) -> list[Path]:
    """The run folders (holding manifest.json) at or under `root`, sorted; hidden folders and a run's own subfolders are not searched."""
    found = []
    for here, dirs, files in walk(root):
        if MANIFEST in files:
            found.append(Path(here))
            dirs.clear()  # a run folder's subfolders are its own (memory/, .hydra/)
        else:
            dirs[:] = [d for d in dirs if not d.startswith(".")]
    return sorted(found)


def _read_checksums(sums: Path, hint: str) -> dict[str, str]:
    """SHA256SUMS as {file: sha256}; CorruptRunFolderError naming it if it is not that file's format."""
    try:
        text = read_regular(sums, MAX_SMALL_FILE_BYTES).decode()
    except UnicodeDecodeError as err:
        raise CorruptRunFolderError(
            f"{sums} is not UTF-8 text (byte {err.start}): the memory snapshot was damaged or edited; {hint}"
        ) from None
    expected = {}
    for number, line in enumerate(text.splitlines(), start=1):
        digest, _, name = line.partition("  ")
        if not _SHA256.fullmatch(digest) or not name or name in expected:
            raise CorruptRunFolderError(
                f"{sums} line {number} is not '<sha256>  <file>' (once per file): the memory snapshot was damaged or edited; {hint}"
            )
        expected[name] = digest
    return expected


def _digests(folder: Path, hint: str = REBUILD_HINT) -> dict[str, str]:
    """sha256 of every file below `folder` (but SHA256SUMS), by relative path, sorted. Folders nested deeper than a
    snapshot's are refused: removing them (a resume replaces its checkpoint) recursed past Python's limit (45b)."""
    paths = []
    for here, _, files in walk(folder):
        if len(Path(here).relative_to(folder).parts) > MAX_SNAPSHOT_DEPTH:
            raise CorruptRunFolderError(
                f"{here} is nested more than {MAX_SNAPSHOT_DEPTH} folders deep in a memory snapshot, which the harness never writes: "
                f"it was put there by hand or damaged; {hint}"
            )
        paths += [path for path in (Path(here, name) for name in files) if path.is_file() and path.name != CHECKSUMS]
    return {path.relative_to(folder).as_posix(): _sha256(path) for path in sorted(paths)}


def _sha256(path: Path) -> str:
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_HASHED_FILE_BYTES:  # a sparse file of terabytes would be read for hours
            raise FileTooLargeError(
                f"{path} is larger than {MAX_HASHED_FILE_BYTES} bytes ({size} bytes); a run writes far less, so it was "
                "put there by hand or damaged"
            )
        return hashlib.file_digest(f, "sha256").hexdigest()


def is_disk_full(err: OSError) -> bool:
    return err.errno in (errno.ENOSPC, errno.EDQUOT)
