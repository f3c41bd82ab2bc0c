"""The episode viewer (memrl_bench/report/viewer.py) in headless Chromium: a synthetic run's
episodes with their retrieved memories, provenance links and MemRL's Q updates, two runs side
by side, and an LLM run whose transcripts.jsonl.gz has its prompts with the memory section
marked; the report's loaded runs are not read again for the viewer."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
import zlib
from pathlib import Path

import pytest

from memrl_bench.core.runfolder import RunFolder
from memrl_bench.core.transcripts import TRANSCRIPTS, episode_digest
from memrl_bench.report import load_for_report, report
from memrl_bench.report import viewer as viewer_module
from memrl_bench.report.load import load
from memrl_bench.report.viewer import read_transcripts, write_viewer
from memrl_bench.runner.loop import run
from tests.helpers import config
from tests.integration.test_report_render import _chromium
from tests.memory_llm_helpers import WordBagEmbedder
from tests.scripted_llm import ScriptedChatModel

METHODS = ("memrl", "rag")
MEMORY_HEADER = "Past episodes of similar tasks"  # rag_memory_block's first line
MEMORY_END = "\n\nAnswer the question"  # single_turn's text after {memory_section}


def _logged(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]


def _data(episodes_dir: Path, n: int) -> dict:
    packed = re.search(r'"([A-Za-z0-9+/=]+)"', (episodes_dir / "data" / f"{n}.js").read_text()).group(1)
    return json.loads(gzip.decompress(base64.b64decode(packed)))


def _page_of(episodes_dir: Path, run: str) -> int:
    return next(n for n in range(len(list((episodes_dir / "data").iterdir()))) if _data(episodes_dir, n)["run"] == run)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("viewer")
    for method in METHODS:
        run(
            config(
                method={"name": method},
                protocol={"epochs": 2, "batch_size": 8, "checkpoint_interval_s": 0},
                hydra={"overrides": [f"method={method}"]},
            ),
            root / f"method={method}",
        )
    report(root)
    return root


def _gzip_members(records: list[dict]) -> bytes:
    return gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode(), mtime=0)


def _sealed(folder: Path) -> None:
    """COMPLETE's digests made again, as if the run had written the transcripts as they are now: what the viewer makes of
    the records themselves is tested (a file changed after COMPLETE shows none: test_transcripts_edited_after_...)."""
    RunFolder(folder).mark_complete()


WHOLE_FILE_WARNING = "is not the file whose sha256 its COMPLETE records (edited, damaged or another run's)"


@pytest.fixture(scope="module")
def llm_run(tmp_path_factory) -> Path:
    """A small MMLU run (RAG, a scripted model answering "Answer: A") with transcripts.jsonl.gz.

    The test then adds a memory-call record as Mem0's update writes one and cuts the last
    member before its first whole line (damage in a COMPLETE run: the viewer says so).
    """
    root = tmp_path_factory.mktemp("viewer_llm")
    folder = root / "method=rag,env=mmlu"
    cfg = config(
        method={"name": "rag"},
        llm={"name": "openai", "model": "scripted", "base_url": "http://127.0.0.1:9/v1"},
        embedder={"name": "openai", "model": "hashed-bag-of-words"},
        protocol={"epochs": 1, "batch_size": 2, "checkpoint_interval_s": 0},
        transcripts=True,
        hydra={"overrides": ["method=rag", "env=mmlu"]},
    )
    cfg["env"] = {"name": "mmlu", "tasks_per_split": 4}
    run(cfg, folder, llm=ScriptedChatModel(lambda messages: "Answer: A"), embedder=WordBagEmbedder())
    logged = _logged(folder)
    records = read_transcripts(folder)  # as the runner wrote them
    assert set(records) == {e["episode_id"] for e in logged}
    records = [records[e["episode_id"]] for e in logged]
    records[0]["memory_calls"] = [
        {
            "purpose": "mem0_update",
            "messages": [{"role": "user", "content": "New facts: ..."}],
            "completion": "{}",
            "parsed": [{"event": "ADD", "text": "A fact."}],
        }
    ]
    torn = _gzip_members(records[-1:])[:12]  # the last episode's member, cut short: its header and 2 bytes
    (folder / TRANSCRIPTS).write_bytes(_gzip_members(records[:2]) + _gzip_members(records[2:-1]) + torn)
    _sealed(folder)
    report(root)
    return folder


def test_transcripts_are_read_from_whole_members_and_bad_lines_are_skipped(tmp_path):
    good = [{"episode_id": f"e{i}", "acting": []} for i in range(3)]
    damaged = gzip.compress(b'{"episode_id": "e3"}\nnot json\n[1, 2]\n{"no id": true}\n', mtime=0)
    (tmp_path / TRANSCRIPTS).write_bytes(
        _gzip_members(good[:2]) + _gzip_members(good[2:]) + damaged + _gzip_members([{"episode_id": "e9"}])[:-5]
    )
    assert sorted(read_transcripts(tmp_path)) == ["e0", "e1", "e2", "e3"]
    assert read_transcripts(tmp_path / "nowhere") == {}


@pytest.mark.parametrize("cut", ["inside", "before_its_first_line"])
def test_a_cut_last_transcripts_member_the_log_holds_is_said_and_its_whole_lines_shown(synthetic, tmp_path, capsys, cut):
    """A cut last member is what a crash leaves (dropped without a word), but a crash cuts only a batch not yet logged: a
    cut member whose episodes the log holds (here a COMPLETE run's) is damage (RELIABILITY, "Still not defended", before
    2026-12-06: dropped silently). The viewer shows the whole lines that decode from it and says what was lost."""
    from memrl_bench.core.records import read_run
    from memrl_bench.report.viewer import run_page

    folder = tmp_path / "run"
    shutil.copytree(next(p.parent for p in synthetic.rglob("manifest.json") if "memrl" in p.parent.name), folder)
    data, start = (folder / TRANSCRIPTS).read_bytes(), 0
    while True:  # to the last gzip member
        decoder = zlib.decompressobj(wbits=31)
        decoder.decompress(data[start:])
        if not decoder.unused_data:
            break
        start = len(data) - len(decoder.unused_data)
    last = [json.loads(line)["episode_id"] for line in gzip.decompress(data[start:]).splitlines()]
    (folder / TRANSCRIPTS).write_bytes(data[: len(data) - 40] if cut == "inside" else data[: start + 12])
    _sealed(folder)
    capsys.readouterr()
    episodes = {e["episode_id"]: e for e in _unpacked(run_page(read_run(folder), "run"))["episodes"]}
    err = capsys.readouterr().err
    shown = [e for e in last if episodes[e]["has_transcript"]]
    if cut == "inside":
        assert 0 < len(shown) < len(last) and "cut short though the log holds its episodes" in err, (len(shown), len(last), err)
    else:
        assert shown == [] and "cut short before its first whole line, though the log holds" in err, err


@pytest.mark.parametrize("damage", ["emptied", "a member taken out", "removed"])
def test_records_missing_from_a_complete_runs_transcripts_are_said(llm_run, tmp_path, capsys, damage):
    """Every episode with an LLM call has its record written before it is logged, so in a logged run a record missing is
    damage. 42b: the file emptied (0 of 160 episodes shown with a transcript), or a whole member taken out of the middle
    (154 of 160), and the viewer said nothing. Since COMPLETE records the file's digest (48b) such a file shows no record at
    all; sealed as the run's own, the records missing are counted."""
    from memrl_bench.core.records import read_run
    from memrl_bench.report.viewer import run_page

    folder = tmp_path / "run"
    shutil.copytree(llm_run, folder)
    logged = _logged(folder)
    records = [read_transcripts(llm_run)[e["episode_id"]] for e in logged[:-1]]  # the fixture's last member is cut
    members = {"emptied": b"", "a member taken out": _gzip_members(records[:1]) + _gzip_members(records[3:])}
    if damage == "removed":
        (folder / TRANSCRIPTS).unlink()
    else:
        (folder / TRANSCRIPTS).write_bytes(members[damage])
    missing = {"emptied": len(logged), "a member taken out": 3, "removed": len(logged)}[damage]
    if damage != "removed":
        capsys.readouterr()
        episodes = _unpacked(run_page(read_run(folder), "run"))["episodes"]
        assert not any(e["has_transcript"] for e in episodes) and WHOLE_FILE_WARNING in capsys.readouterr().err
        _sealed(folder)
    capsys.readouterr()
    episodes = _unpacked(run_page(read_run(folder), "run"))["episodes"]
    err = capsys.readouterr().err
    assert sum(not e["has_transcript"] for e in episodes) == missing
    assert f"{missing} of the log's episodes with LLM calls have no record though the run is complete" in err, err


def test_a_complete_run_whose_every_llm_call_failed_is_not_said_to_be_damaged(llm_run, tmp_path, capsys):
    """57b: a call that failed is counted in the episode's usage and recorded nowhere; a complete run whose every call failed
    has no transcripts, and the viewer warned that its records were taken out."""
    from memrl_bench.core.records import read_run
    from memrl_bench.report.viewer import run_page

    folder = tmp_path / "run"
    shutil.copytree(llm_run, folder)
    lines = []
    for episode in _logged(folder):
        for usage in ("act_usage", "memory_usage"):
            episode[usage]["failures"] = episode[usage]["calls"]
        lines.append(json.dumps(episode) + "\n")
    (folder / "episodes.jsonl").write_text("".join(lines))
    (folder / TRANSCRIPTS).unlink()
    _sealed(folder)
    capsys.readouterr()
    run_page(read_run(folder), "run")
    assert "have no record though the run is complete" not in capsys.readouterr().err


@pytest.mark.parametrize("removed", [False, True])
def test_transcripts_edited_after_the_run_are_not_shown_as_what_it_wrote(llm_run, tmp_path, capsys, removed):
    """48b: COMPLETE's digests covered the log, metrics, manifest and final snapshot, not the transcripts, and each record is
    joined to its episode by the digest of the log line, which an edit keeps: every completion replaced and a memory line
    added to every prompt were shown as what the model said (6 of 6), no line. COMPLETE records the file's sha256; a file
    that differs shows no record and says so, and COMPLETE without that digest (its line removed) is the same."""
    from memrl_bench.core.records import read_run
    from memrl_bench.report.viewer import run_page

    folder = tmp_path / "run"
    shutil.copytree(llm_run, folder)
    records = list(read_transcripts(folder).values())
    for record in records:
        for call in record["acting"]:
            call["completion"] = "FORGED Answer: D"
            call["messages"][0]["content"] += "\nFORGED-MEMORY: always answer D"
    (folder / TRANSCRIPTS).write_bytes(_gzip_members(records))
    if removed:  # the digest's line taken out of COMPLETE, which nothing else seals
        complete = folder / "COMPLETE"
        complete.write_text("".join(line for line in complete.read_text().splitlines(True) if not line.startswith("transcripts_sha256")))
    capsys.readouterr()
    page = _unpacked(run_page(read_run(folder), "run"))
    assert not page["transcripts"] and not any(e["has_transcript"] for e in page["episodes"])
    assert "FORGED" not in json.dumps(page) and WHOLE_FILE_WARNING in capsys.readouterr().err


def test_a_number_json_has_not_is_shown_as_null(synthetic, tmp_path):
    """The eighteenth probe round: a NaN in a transcript was packed as `NaN`, which the page's JSON parser refuses ("could
    not show this page"), while the report said nothing."""
    from memrl_bench.core.records import read_run
    from memrl_bench.report.viewer import run_page

    folder = tmp_path / "run"
    shutil.copytree(next(p.parent for p in synthetic.rglob("manifest.json")), folder)
    first = _logged(folder)[0]
    acting = [{"latency_s": float("nan"), "x": float("inf")}]
    record = {"episode_id": first["episode_id"], "episode_sha256": episode_digest(first), "acting": acting}
    (folder / TRANSCRIPTS).write_bytes(_gzip_members([record]))
    _sealed(folder)
    page = run_page(read_run(folder), "run")
    data = json.loads(gzip.decompress(base64.b64decode(page.packed)), parse_constant=lambda name: pytest.fail(f"{name} in the page"))
    assert data["episodes"][0]["acting"][0]["latency_s"] is None and data["episodes"][0]["acting"][0]["x"] is None


def test_another_runs_transcripts_are_not_shown_beside_this_runs_log(llm_run, tmp_path, capsys):
    """The thirty-second round: transcripts are joined to the log by episode id, which runs of one schedule share; another
    run's transcripts put in a run folder showed its completions beside this run's log, 1,541 of 1,541 episodes, no line."""
    from memrl_bench.core.records import read_run
    from memrl_bench.report.viewer import run_page

    cfg = json.loads((llm_run / "manifest.json").read_text())["config"]
    other = tmp_path / "other"
    run(cfg, other, llm=ScriptedChatModel(lambda messages: "Answer: C"), embedder=WordBagEmbedder())
    own = run_page(read_run(other), "other")
    assert all(e["has_transcript"] and "Answer: C" in e["acting"][0]["completion"] for e in _unpacked(own)["episodes"])
    capsys.readouterr()
    shutil.copy(llm_run / TRANSCRIPTS, other / TRANSCRIPTS)  # the same episode ids and tasks, completions "Answer: A"
    assert not _unpacked(run_page(read_run(other), "other"))["transcripts"] and WHOLE_FILE_WARNING in capsys.readouterr().err
    _sealed(other)  # and sealed as this run's: each record is still checked against its episode
    swapped = _unpacked(run_page(read_run(other), "other"))
    assert not any(e["has_transcript"] or e["acting"] for e in swapped["episodes"]) and not swapped["transcripts"]
    records = len(read_transcripts(other))  # all but the fixture's torn last member
    assert f"{other / TRANSCRIPTS}: {records} of its records do not match the log's episodes" in capsys.readouterr().err


def test_another_methods_transcripts_with_the_same_completions_are_not_shown(llm_run, tmp_path, capsys):
    """The thirty-fourth round: a run of another method whose acting completions were the same (a model at temperature 0
    often gives them) passed the check above: a method=none run's viewer showed dynamic_cheatsheet's memory calls beside its
    log, every record, no line. Each record carries the digest of its episode's log line now (before: a record's tokens
    had to be those the log charged its episode, which a record with no call passed: the thirty-sixth round)."""
    from memrl_bench.core.records import read_run
    from memrl_bench.report.viewer import run_page

    cfg = json.loads((llm_run / "manifest.json").read_text())["config"]
    folders = {method: tmp_path / method for method in ("none", "dynamic_cheatsheet")}
    for method, folder in folders.items():
        run({**cfg, "method": {"name": method}}, folder, llm=ScriptedChatModel(lambda messages: "Answer: C"), embedder=WordBagEmbedder())
    theirs, own = read_transcripts(folders["dynamic_cheatsheet"]), read_transcripts(folders["none"])
    carrying = sum(bool(r["memory_calls"]) for r in theirs.values())
    assert carrying > 0  # what the swap would show
    capsys.readouterr()
    shutil.copy(folders["dynamic_cheatsheet"] / TRANSCRIPTS, folders["none"] / TRANSCRIPTS)
    _sealed(folders["none"])
    swapped = _unpacked(run_page(read_run(folders["none"]), "none"))
    assert not any(e["has_transcript"] or e["memory_calls"] for e in swapped["episodes"]) and len(own) == len(theirs)
    assert f"{folders['none'] / TRANSCRIPTS}: {len(theirs)} of its records do not match the log's episodes" in capsys.readouterr().err
    theirs_shown = _unpacked(run_page(read_run(folders["dynamic_cheatsheet"]), "dc"))  # each run's own records still shown
    assert all(e["has_transcript"] for e in theirs_shown["episodes"]) and any(e["memory_calls"] for e in theirs_shown["episodes"])


def test_another_runs_memory_operations_are_not_shown_and_a_record_without_its_digest_neither(tmp_path, capsys):
    """The thirty-sixth round: a run with no LLM call writes records of memory operations alone, which named the same task
    and charged no tokens, so another run's (memrl at another epsilon: q updates with its rewards) were shown beside this
    run's log, 1,951 of 2,000 not its own, no line. A record agrees when it carries its episode's digest; in a run whose
    manifest says its records carry one, a record without it is refused too."""
    from memrl_bench.core.records import read_run
    from memrl_bench.report.viewer import run_page

    folders = {epsilon: tmp_path / f"epsilon={epsilon}" for epsilon in (0.0, 0.5)}
    for epsilon, folder in folders.items():
        run(config(method={"name": "memrl", "epsilon": epsilon}, protocol={"epochs": 2, "batch_size": 8}), folder)
    own = _unpacked(run_page(read_run(folders[0.0]), "own"))
    assert json.loads((folders[0.0] / "manifest.json").read_text())["transcripts_format"] == 3
    assert all(e["has_transcript"] for e in own["episodes"] if e["phase"] == "train") and any(e["memory_ops"] for e in own["episodes"])
    theirs = read_transcripts(folders[0.5])
    shutil.copy(folders[0.5] / TRANSCRIPTS, folders[0.0] / TRANSCRIPTS)
    _sealed(folders[0.0])
    capsys.readouterr()
    swapped = _unpacked(run_page(read_run(folders[0.0]), "swapped"))
    assert not any(e["has_transcript"] or e["memory_ops"] for e in swapped["episodes"])
    assert f"{folders[0.0] / TRANSCRIPTS}: {len(theirs)} of its records do not match" in capsys.readouterr().err
    stripped = [{k: v for k, v in r.items() if k != "episode_sha256"} for r in read_transcripts(folders[0.5]).values()]
    (folders[0.5] / TRANSCRIPTS).write_bytes(_gzip_members(stripped))  # its own records, the digest taken out
    _sealed(folders[0.5])
    assert not any(e["has_transcript"] for e in _unpacked(run_page(read_run(folders[0.5]), "stripped"))["episodes"])


def _unpacked(page) -> dict:
    return json.loads(gzip.decompress(base64.b64decode(page.packed)))


def test_every_run_has_a_page_with_every_logged_episode(synthetic):
    episodes_dir = synthetic / "report" / "episodes"
    assert 'href="episodes/index.html"' in (synthetic / "report" / "report.html").read_text()
    index = (episodes_dir / "index.html").read_text()
    for method in METHODS:
        n = _page_of(episodes_dir, f"method={method}")
        assert f'href="{n}.html"' in index
        data, logged = _data(episodes_dir, n), _logged(synthetic / f"method={method}")
        assert [e["episode_id"] for e in data["episodes"]] == [e["episode_id"] for e in logged]
        assert [e["retrieved"] for e in data["episodes"]] == [e["retrieved"] for e in logged]
        assert not data["transcripts"]


@pytest.fixture(scope="module")
def browser():
    chrome = _chromium()
    yield chrome
    chrome.quit()


def _show(browser, url: str):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url)
    WebDriverWait(browser, 20).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#detail, #pairs, .warn"))
    return By


def test_an_episode_shows_its_memories_scores_and_a_provenance_link_to_the_source(synthetic, browser):
    run_dir = synthetic / "method=memrl"
    episodes_dir = synthetic / "report" / "episodes"
    n = _page_of(episodes_dir, "method=memrl")
    episode = next(e for e in _logged(run_dir) if e["phase"] == "validation" and len(e["retrieved"]) >= 2)
    By = _show(browser, f"{(episodes_dir / f'{n}.html').as_uri()}#{episode['episode_id']}")
    detail = browser.find_element(By.ID, "detail")
    assert episode["episode_id"] in detail.find_element(By.TAG_NAME, "h2").text
    rows = detail.find_elements(By.CSS_SELECTOR, "table.retrieved tbody tr")
    assert len(rows) == len(episode["retrieved"])
    for row, item in zip(rows, episode["retrieved"]):
        assert row.find_element(By.CSS_SELECTOR, ".similarity").text == f"{item['similarity']:.3f}"
        assert row.find_element(By.CSS_SELECTOR, ".q").text == f"{item['q_value']:.3f}"
        assert row.find_element(By.CSS_SELECTOR, ".score").text == f"{item['score']:.3f}"
    source = episode["retrieved"][0]["source_episode_id"]
    rows[0].find_element(By.CSS_SELECTOR, "a.provenance").click()
    shown = browser.find_element(By.CSS_SELECTOR, "#detail .episode")
    assert shown.get_attribute("data-episode") == source
    assert next(e for e in _logged(run_dir) if e["episode_id"] == source)["phase"] == "train"
    search = browser.find_element(By.ID, "search")
    search.send_keys(episode["task_id"])
    listed = [r.find_elements(By.TAG_NAME, "td")[1].text for r in browser.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")]
    assert listed and set(listed) == {episode["task_id"]}
    assert len(listed) == sum(e["task_id"] == episode["task_id"] for e in _logged(run_dir))
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []


def test_a_memrl_training_episode_shows_its_q_updates_and_write(synthetic, browser):
    """Under the episode: each injected memory's Q before and after and the reward, as the
    transcript recorded them, the memory linked to the episode it came from; then the write."""
    run_dir = synthetic / "method=memrl"
    episodes_dir = synthetic / "report" / "episodes"
    n = _page_of(episodes_dir, "method=memrl")
    ops = {i: r["memory_ops"] for i, r in read_transcripts(run_dir).items()}
    episode = next(e for e in _logged(run_dir) if e["phase"] == "train" and len(e["retrieved"]) >= 2 and not e["success"])
    *updates, write = ops[episode["episode_id"]]
    assert [u["item_id"] for u in updates] == [r["item_id"] for r in episode["retrieved"]]
    By = _show(browser, f"{(episodes_dir / f'{n}.html').as_uri()}#{episode['episode_id']}")
    rows = browser.find_elements(By.CSS_SELECTOR, "#detail li.q-update")
    assert [r.text for r in rows] == [
        f"{u['item_id']} Q {u['q_before']:.3f} -> {u['q_after']:.3f} (reward {u['reward']:g})" for u in updates
    ]
    assert updates[0]["reward"] == -1 and updates[0]["q_after"] < updates[0]["q_before"]  # a failure lowers Q
    assert (
        browser.find_element(By.CSS_SELECTOR, "#detail .memory-write").text
        == f"Written: memory {episode['episode_id']} with Q {write['q']:.3f}, group {write['group']}"
    )
    source = episode["retrieved"][1]["source_episode_id"]
    rows[1].find_element(By.CSS_SELECTOR, "a.provenance").click()
    assert browser.find_element(By.CSS_SELECTOR, "#detail .episode").get_attribute("data-episode") == source
    test_episode = next(e["episode_id"] for e in _logged(run_dir) if e["phase"] == "test")
    By = _show(browser, f"{(episodes_dir / f'{n}.html').as_uri()}#{test_episode}")
    assert not browser.find_elements(By.CSS_SELECTOR, "#detail li.q-update")
    assert "None: memory changes only in training." in browser.find_element(By.ID, "detail").text
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []


def test_the_viewer_reuses_the_runs_the_report_loaded(synthetic, tmp_path, monkeypatch):
    """Pages made from the loader's records equal those made by reading each run again, which
    the viewer does only for a Results loaded without them."""
    write_viewer(load(synthetic), tmp_path / "read_again")
    results = load_for_report(synthetic)
    monkeypatch.setattr(viewer_module, "read_run", lambda *args: pytest.fail("the viewer read a run folder again"))
    write_viewer(results, tmp_path / "reused")
    files = sorted(p.relative_to(tmp_path / "reused") for p in (tmp_path / "reused").rglob("*") if p.is_file())
    assert len(files) == 2 * len(METHODS) + 3
    for name in files:
        assert (tmp_path / "reused" / name).read_bytes() == (tmp_path / "read_again" / name).read_bytes(), name


def test_two_runs_side_by_side_on_the_same_task_and_epoch(synthetic, browser):
    episodes_dir = synthetic / "report" / "episodes"
    a, b = (_page_of(episodes_dir, f"method={m}") for m in METHODS)
    By = _show(browser, f"{(episodes_dir / 'compare.html').as_uri()}?a={a}&b={b}")
    rows = browser.find_elements(By.CSS_SELECTOR, "#pairs tbody tr")
    assert len(rows) == len(_logged(synthetic / "method=memrl")) == len(_logged(synthetic / "method=rag"))  # the same schedule
    rows[-1].find_element(By.TAG_NAME, "a").click()
    from selenium.webdriver.support.ui import WebDriverWait

    # the page draws the pair after the click's navigation: wait for it (it failed once under load)
    WebDriverWait(browser, 20).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, ".columns .episode")) >= 2)
    blocks = browser.find_elements(By.CSS_SELECTOR, ".columns .episode")
    assert len(blocks) == 2
    ids = [block.get_attribute("data-episode") for block in blocks]
    assert ids[0] == ids[1]  # same task, phase, epoch and sample: the same episode id in both runs
    tasks = [block.find_element(By.TAG_NAME, "p").text for block in blocks]
    assert tasks[0] == tasks[1]


def test_an_llm_episode_shows_its_prompt_with_the_memory_section_marked(llm_run, browser):
    episodes_dir = llm_run.parent / "report" / "episodes"
    logged = _logged(llm_run)
    transcripts = read_transcripts(llm_run)
    assert 0 < len(transcripts) < len(logged)  # the torn member is left out
    episode = next(e for e in logged if e["retrieved"] and e["episode_id"] in transcripts)
    By = _show(browser, f"{(episodes_dir / '0.html').as_uri()}#{episode['episode_id']}")
    detail = browser.find_element(By.ID, "detail")
    system = transcripts[episode["episode_id"]]["acting"][0]["messages"][0]["content"]
    expected = system[system.index(MEMORY_HEADER) : system.index(MEMORY_END)]
    marks = detail.find_elements(By.CSS_SELECTOR, "mark.memory")
    assert len(marks) == 1
    assert browser.execute_script("return arguments[0].textContent", marks[0]) == expected
    assert [c.text for c in detail.find_elements(By.CSS_SELECTOR, "pre.completion")] == ["Answer: A"]
    assert detail.find_element(By.CSS_SELECTOR, ".turn .action").text == episode["turns"][0]["action"]
    assert len(detail.find_elements(By.CSS_SELECTOR, "table.retrieved tbody tr")) == len(episode["retrieved"])
    assert len(episode["retrieved"]) == len(expected.split("--- Task:")) - 1

    first = logged[0]["episode_id"]
    By = _show(browser, f"{(episodes_dir / '0.html').as_uri()}#{first}")
    assert '"event": "ADD"' in browser.find_element(By.CSS_SELECTOR, "#detail pre.parsed").get_attribute("textContent")
    untold = next(e["episode_id"] for e in logged if e["episode_id"] not in transcripts)
    By = _show(browser, f"{(episodes_dir / '0.html').as_uri()}#{untold}")
    assert "No transcript for this episode" in browser.find_element(By.ID, "detail").text
    search = browser.find_element(By.ID, "search")
    word = transcripts[episode["episode_id"]]["acting"][0]["messages"][1]["content"].split("\n")[2].split()[0]
    search.send_keys(word)  # a word of the question, not of the task id
    assert browser.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []
