"""The episode viewer beside report.html: every episode of every run, readable offline.

`write_viewer(results, out)` writes into `out` (the report's episodes/ folder):
  index.html      the runs, each linked to its page, and the comparison page
  <n>.html        one run: its episodes (task, split, epoch, success, turns, tokens,
                  latency) with a search box over task ids and task text; an episode opens
                  (#<episode id>) to what it retrieved (similarity, Q, score, and the
                  training episode each memory came from, a link), its prompt with the
                  memory section highlighted, each completion with its parsed action and
                  the observation, and the memory operations made for it (LLM calls, and
                  MemRL's Q updates and writes)
  compare.html    two runs side by side on the same task, epoch and sample
  viewer.js       the page code and style, shared by the pages
  data/<n>.js     one run's data (gzip, base64): a page loads only the runs it shows
No server, no network: the pages are files read by the browser, as inspect_ai's
`inspect view` bundle is. The transcripts (prompts and completions, memory operations)
come from the run's transcripts.jsonl.gz when it has one; without prompts (synthetic runs)
the pages show the turns episodes.jsonl holds.

A run's data is made by `run_page` from the records the report's loader has read
(memrl_bench.report.load's `keep`), so that no run folder is read twice; a Results
loaded without them has each run read here.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrl_bench import prompts
from memrl_bench.core.markup import script_json
from memrl_bench.core.records import RunRecords, read_run
from memrl_bench.core.runfolder import COMPLETE, CorruptRunFolderError, RunFolder
from memrl_bench.core.transcripts import TRANSCRIPTS, TranscriptLog, agrees_with_log
from memrl_bench.report.load import Results

MEMORY_TEMPLATES = ("react_system", "single_turn")  # the prompts that hold the method's memory block as {memory_section}
TASK_TEXT_CHARS = 400  # of the first user message, for the search box
ASSETS = Path(__file__).with_name("viewer_assets")


def read_transcripts(run_dir: Path, logged: list[dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """The transcript records of a run by episode id ({} without the file; whole gzip members only, damaged members
    and bad lines skipped with a warning; `logged`, the run's log: a cut last member it shows was logged is damage, its
    whole lines kept and the loss said).
    """
    return TranscriptLog(run_dir).by_episode(logged)


def _transcripts_as_completed(run: RunRecords) -> bool:
    """False (with a warning) for a complete run whose transcripts are not those its COMPLETE records the digest of
    (transcripts_format 3): edited, damaged or another run's. Older runs' are checked record by record alone."""
    if not (run.complete and run.manifest.transcripts_format >= 3 and (run.path / TRANSCRIPTS).exists()):
        return True
    if RunFolder(run.path).transcripts_as_completed():
        return True
    print(
        f"memrl-bench: warning: {run.path / TRANSCRIPTS} is not the file whose sha256 its {COMPLETE} records (edited, damaged "
        "or another run's); the run is shown without its transcripts",
        file=sys.stderr,
    )
    return False


def _memory_markers() -> list[str]:
    """The fixed text that follows {memory_section} in each prompt holding one (where the memory block ends)."""
    markers = []
    for name in MEMORY_TEMPLATES:
        after = prompts.load(name).split("{memory_section}", 1)[1].replace("{{", "{").replace("}}", "}").strip()
        markers.append(after.split("{", 1)[0][:60])
    return [m for m in markers if m]


def memory_spans(content: str, injected_chars: int, contents: list[str], markers: list[str]) -> list[list[int]]:
    """[start, end) spans of `content` that are the method's memory: the block that ends where a
    prompt template's fixed text begins (injected_chars long), else each retrieved memory found verbatim."""
    if injected_chars > 0:
        for marker in markers:
            at = content.find(marker)
            if at > 0:
                end = len(content[:at].rstrip())
                start = max(0, end - injected_chars)
                while start < end and content[start].isspace():
                    start += 1
                return [[start, end]]
    spans = []
    for text in contents:
        at = content.find(text) if text else -1
        if at >= 0:
            spans.append([at, at + len(text)])
    return sorted(spans)


def _task_text(acting: list[dict]) -> str:
    for call in acting:
        for message in call.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "user":
                return str(message.get("content", ""))[:TASK_TEXT_CHARS]
    return ""


def run_data(run: RunRecords, name: str) -> dict[str, Any]:
    """What the viewer shows of one run (its variant, known once the whole folder is loaded, aside)."""
    items = {item.id: item.content for item in run.items}
    logged = [e.to_dict() for e in run.episodes]
    as_completed = _transcripts_as_completed(run)
    transcripts = read_transcripts(run.path, logged) if as_completed else {}
    markers = _memory_markers()
    episodes, disagreeing = [], 0
    bound = run.manifest.transcripts_format >= 2
    for e, episode in zip(run.episodes, logged):
        record = transcripts.get(e.episode_id) or {}
        if record and not agrees_with_log(record, episode, bound):
            disagreeing += 1
            record = transcripts[e.episode_id] = {}  # not this episode's: shown without it, never beside its log
        acting = [c for c in record.get("acting") or [] if isinstance(c, dict)]
        contents = [items[r.item_id] for r in e.retrieved if r.item_id in items]
        for call in acting:
            messages = call.get("messages") if isinstance(call.get("messages"), list) else []
            call["memory_spans"] = [
                memory_spans(str(m.get("content", "")), e.injected_chars, contents, markers) if isinstance(m, dict) else []
                for m in messages
            ]
        episode["acting"] = acting
        episode["memory_calls"] = [c for c in record.get("memory_calls") or [] if isinstance(c, dict)]
        episode["memory_ops"] = [o for o in record.get("memory_ops") or [] if isinstance(o, dict)]
        episode["has_transcript"] = bool(record)
        episode["text"] = _task_text(acting)
        episodes.append(episode)
    # a COMPLETE run wrote each episode's record (one with an LLM call that answered) before the episode reached its log: one
    # missing is damage (the file emptied, a member taken out: 42b), not a crash's cut, unless the writer stopped at its
    # readers' bound. A call that failed is counted (calls, failures) and recorded nowhere (57b: a run whose every call
    # failed was said to be damaged)
    recorded = run.complete and run.manifest.config.get("transcripts", True) and as_completed
    missing = sum(
        1
        for e in run.episodes
        if e.act_usage.calls - e.act_usage.failures + e.memory_usage.calls - e.memory_usage.failures > 0 and e.episode_id not in transcripts
    )
    if recorded and missing:
        print(
            f"memrl-bench: warning: {run.path / TRANSCRIPTS}: {missing} of the log's episodes with LLM calls have no record though "
            "the run is complete (records taken out, or the file emptied or removed; or, for the last episodes, its writer stopped "
            "short of what its readers take: a model's very long outputs); shown without them",
            file=sys.stderr,
        )
    if disagreeing:
        print(
            f"memrl-bench: warning: {run.path / TRANSCRIPTS}: {disagreeing} of its records do not match the log's episodes (not "
            "the digest of the episode's line; in an older run, another task, completions the log's turns do not quote, or calls of "
            "tokens the log did not charge): another run's transcripts, or edited; shown without them",
            file=sys.stderr,
        )
    config = run.manifest.config
    return {
        "run": name,
        "method": run.manifest.method,
        "seed": config.get("seed"),
        "complete": run.complete,
        "transcripts": any(r.get("acting") or r.get("memory_calls") for r in transcripts.values()),  # prompts, not only memory operations
        "items": items,
        "episodes": episodes,
    }


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinite number as null (the page reads JSON, which has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


@dataclass
class RunPage:
    """One run's viewer data, packed as data/<n>.js carries it (gzip JSON in base64), and what index.html lists of it."""

    packed: str
    episodes: int
    successes: int
    transcripts: bool


def run_page(run: RunRecords, name: str) -> RunPage | str:
    """The viewer's data of a loaded run, or why it cannot be shown (its transcripts cannot be read)."""
    try:
        data = run_data(run, name)
    except OSError as err:
        return f"{run.path}: {err}"
    try:
        try:
            text = json.dumps(data, separators=(",", ":"), allow_nan=False)
        except ValueError:  # NaN or an infinity (a damaged transcript): no JSON, the page's parser refused it
            text = json.dumps(_finite(data), separators=(",", ":"), allow_nan=False)
    except RecursionError:
        return f"{run.path}: its transcripts nest too deeply to show"
    packed = base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode("ascii")
    return RunPage(packed, len(data["episodes"]), sum(e["success"] for e in data["episodes"]), data["transcripts"])


def _read_page(path: str, name: str) -> RunPage | str:
    """run_page of a run folder not loaded with it (Results from load() without `keep`)."""
    try:
        return run_page(read_run(path), name)
    except (CorruptRunFolderError, OSError, ValueError) as err:
        return f"{path}: {err}"


def _page(title: str, body: str, scripts: list[str]) -> str:
    tags = "".join(f'<script src="{html.escape(s)}"></script>' for s in scripts)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, '
        f'initial-scale=1"><title>{html.escape(title)}</title><script '
        f'src="viewer.js"></script></head>\n<body><main>{body}</main>{tags}</body></html>\n'
    )


def write_viewer(results: Results, out: Path) -> list[str]:
    """Write the viewer's pages for every run of `results` into `out`; the runs that cannot be shown (named on index.html)."""
    (out / "data").mkdir(parents=True, exist_ok=True)
    (out / "viewer.js").write_text((ASSETS / "viewer.js").read_text())
    rows, skipped, index = [], [], []
    for n, run_row in enumerate(results.runs.itertuples(index=False)):
        page = results.kept.get(run_row.run) or _read_page(run_row.path, run_row.run)
        if isinstance(page, str):
            skipped.append(page)
            continue
        (out / "data" / f"{n}.js").write_text(f'memrlViewer.add({n}, "{page.packed}", {json.dumps({"variant": run_row.variant})});\n')
        title = f"{run_row.run} — episodes"
        (out / f"{n}.html").write_text(
            _page(
                title,
                '<p class="meta"><a href="index.html">all runs</a> · <a href="../report.html">report</a></p><div id="app" '
                f'data-run="{n}">loading…</div>',
                [f"data/{n}.js"],
            )
        )
        rate = page.successes / page.episodes if page.episodes else 0.0
        index.append({"n": n, "run": run_row.run, "variant": run_row.variant})
        rows.append(
            f'<tr><td class="text"><a href="{n}.html">{html.escape(run_row.run)}</a></td><td '
            f'class="text">{html.escape(run_row.variant)}</td><td>{html.escape(str(run_row.seed))}</td>'
            f"<td>{page.episodes}</td><td>{rate:.3f}</td><td>{'yes' if page.transcripts else 'no'}</td>"
            f"<td>{'complete' if run_row.complete else 'incomplete'}</td></tr>"
        )
    runs_json = script_json(index)  # run names are folder names: any text, "<!--" and "</script" included
    table = (
        '<table><thead><tr><th class="text">run</th><th class="text">variant</th><th>seed</th><th>episodes</th><th>success '
        "rate</th><th>transcripts</th><th>status</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
    # the runs the loader left out (damaged: a COMPLETE run failing its checks, a snapshot failing its checksum) and those no page could be
    # made of
    notes = "".join(f'<p class="warn">Left out (damaged or cannot be read): {html.escape(s)}</p>' for s in [*results.skipped, *skipped])
    (out / "index.html").write_text(
        _page(
            "memrl-bench episodes",
            '<h1>Episodes</h1><p class="meta"><a href="../report.html">report</a> · <a href="compare.html">compare two runs on the same '
            f'tasks</a></p>{notes}<div class="scroll">{table}</div>',
            [],
        )
    )
    (out / "compare.html").write_text(
        _page(
            "memrl-bench: compare two runs",
            f'<p class="meta"><a href="index.html">all runs</a></p><script type="application/json" id="runs">{runs_json}</script><div '
            'id="compare">loading…</div>',
            [],
        )
    )
    return skipped
