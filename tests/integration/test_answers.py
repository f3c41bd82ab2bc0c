"""The answer-reading policy (memrl_bench/core/answers.py) on real completions labelled by hand.

tests/fixtures/answers_corpus.jsonl holds every distinct completion of results/critique_real (as
first shipped and as re-shipped; Qwen2.5-Coder-0.5B on MMLU marketing) and of Qwen2.5-Coder-1.5B
on 40 MMLU marketing questions and 33 BigCodeBench tasks (scripts/collect_answer_corpus.py;
BENCHMARKS.md, "Answer corpus"), each labelled by reading: two readers labelled every MMLU
completion independently, a third read the ones they disagreed on or found hard (`label_note`
says so); one reader labelled the code completions. The reader must agree with the labels on at least 99% of the completions as they occur
(weighted by `occurrences`); the entries where it does not are listed with the reason
(`reader_disagrees`) and checked to stay so, so that a change of the reader that fixes or breaks
one is seen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrl_bench.core.answers import read_answer

CORPUS = [json.loads(line) for line in (Path(__file__).parents[1] / "fixtures" / "answers_corpus.jsonl").read_text().splitlines()]
MARKETING = [
    "Zero price elasticity of demand.",
    "Infinite price elasticity of demand.",
    "Unit price elasticity of demand.",
    "Indefinite price elasticity of demand.",
]


def expected(entry: dict) -> str | None:
    """The answer the label stands for: a letter, the code the label points at, or None."""
    label = entry["label"]
    if entry["env"] == "bigcodebench":
        if label == "block":
            return entry["completion"].split("```", 2)[1].split("\n", 1)[1].strip("\n")
        return entry["completion"].strip("\n") if label == "whole" else None
    return None if label == "none" else label


def read(entry: dict) -> str | None:
    answer_format = "letter" if entry["env"] == "mmlu" else "code"
    return read_answer(
        entry["completion"],
        answer_format,
        finished=entry["finish_reason"] != "length",
        choices=entry.get("choices"),
        question=entry.get("question", ""),
    ).answer


def test_the_corpus_is_real_distinct_and_labelled():
    # Both Qwen sizes of the catalogue, letters and code blocks (issue 27).
    assert len(CORPUS) >= 400
    assert len({(e["model"], e["task_id"], e["completion"], e["finish_reason"]) for e in CORPUS}) == len(CORPUS)
    unlabelled = [e["id"] for e in CORPUS if e["label"] is None]
    assert not unlabelled, f"label these completions by reading them (scripts/collect_answer_corpus.py): {unlabelled}"
    assert {(e["model"], e["env"]) for e in CORPUS} == {
        ("qwen2.5-coder-0.5b", "mmlu"),
        ("qwen2.5-coder-1.5b", "mmlu"),
        ("qwen2.5-coder-1.5b", "bigcodebench"),
    }
    assert {e["model"] for e in CORPUS if e["finish_reason"] == "length" and e["env"] == "mmlu"} == {
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-1.5b",
    }


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e["id"])
def test_the_reader_reads_each_completion_as_labelled(entry):
    if entry.get("reader_disagrees"):
        assert read(entry) != expected(entry), f"the reader now agrees with the label: drop reader_disagrees from {entry['id']}"
        pytest.xfail(entry["reader_disagrees"])
    assert read(entry) == expected(entry)


def test_the_reader_agrees_with_the_labels_on_99_percent_of_completions_as_they_occur():
    total = sum(e["occurrences"] for e in CORPUS)
    agreeing = sum(e["occurrences"] for e in CORPUS if read(e) == expected(e))
    assert agreeing / total >= 0.99


def test_an_answer_line_of_the_form_letter_dot_text_counts():
    # Qwen 0.5B, MMLU marketing test/71: restates the question, then its answer line (scored "no answer" before).
    completion = "The term marketing refers to:\nC. a philosophy that stresses customer value and satisfaction."
    choices = [
        "new product concepts and improvements.",
        "advertising and promotion activities.",
        "a philosophy that stresses customer value and satisfaction.",
        "planning sales campaigns.",
    ]
    assert read_answer(completion, "letter", choices=choices).answer == "C"
    listing = "A. new product concepts\nB. advertising\nC. a philosophy\nD. planning sales campaigns"
    assert read_answer(listing, "letter", choices=choices).answer is None  # listing the choices answers nothing


def test_an_answer_stated_as_an_option_text_counts():
    # Qwen 0.5B, MMLU marketing test/40: the option's text without its letter (scored 0 before).
    completion = "The process by which individuals accept and use new propositions is referred to as adoption."
    choices = ["Decision.", "Adoption.", "Acquisition.", "Awareness."]
    assert (
        read_answer(
            completion,
            "letter",
            choices=choices,
            question="The process by which individuals accept and use new propositions is referred to as:",
        ).answer
        == "B"
    )
    both = "It is either adoption or awareness."
    assert read_answer(both, "letter", choices=choices).answer is None  # two options named: no single answer


def test_letters_are_matched_case_sensitively_so_the_article_a_is_no_answer():
    # Qwen 0.5B, MMLU marketing test/88: "answer is given because ... to use a brand" was scored A before.
    completion = (
        "The correct answer is:\nC. Trade name\nThis answer is given because trade names are legally recognized trademarks and are "
        "exclusive rights by law to use a brand."
    )
    assert read_answer(completion, "letter", choices=["Brand loyalty", "Brand mark", "Trade name", "Trademark"]).answer == "C"
    assert read_answer("The answer is to use a brand.", "letter").answer is None
    assert read_answer("The answer is A because it fits.", "letter").answer == "A"


def test_a_completion_cut_while_walking_through_the_options_is_not_scored():
    # The case: cut at max_tokens on its first option (scored A before).
    cut = "To answer this, let's look at each option:\n\n**A. Zero price elasticity:** This is incorrect because"
    reading = read_answer(cut, "letter", finished=False, choices=MARKETING)
    assert reading.answer is None and reading.cut
    stated = "Answer: C\n\nExplanation: a 10% rise in price and a 10% fall in quantity means the elasticity is"
    assert read_answer(stated, "letter", finished=False, choices=MARKETING).answer == "C"  # stated before the cut


def _mmlu_run(tmp_path: Path, replies, **actor) -> tuple[list[dict], object]:
    from memrl_bench.core.records import read_run
    from memrl_bench.runner.loop import run
    from tests.helpers import tiny_mmlu
    from tests.scripted_llm import ScriptedChatModel

    llm = ScriptedChatModel(replies)
    cfg = {
        "env": {
            "name": "mmlu",
            "data_dir": str(tiny_mmlu(tmp_path / "mmlu", questions=4)),
            "roles": {"train": "train", "validation": None, "test": ["test"]},
        },
        "method": {"name": "none"},
        "llm": {"name": "none"},
        "embedder": {"name": "minilm"},
        "protocol": {"epochs": 1, "batch_size": 4, "checkpoint_interval_s": 0},
        "actor": actor,
        "seed": 0,
        "task_order_seed": 0,
        "progress": False,
    }
    run(cfg, tmp_path / "run", llm=llm)
    return [e.to_dict() for e in read_run(tmp_path / "run").episodes], llm


def test_constrained_answers_score_the_schema_reply_and_keep_the_free_reading(tmp_path):
    # Every free completion walks through two options (no answer a reader can take); the
    # constrained reply then names B, the key of every tiny question.
    def reply(messages):
        return '{"answer": "B"}' if messages[-1]["content"].startswith("What is your final answer?") else "A. one: maybe.\nB. two: maybe."

    episodes, llm = _mmlu_run(tmp_path, reply, answer_constraint="json_schema")
    assert episodes and all(e["success"] and e["info"]["answer"] == "B" and e["info"]["free_answer"] is None for e in episodes)
    constrained = [c for c in llm.calls if "response_format" in c.overrides]
    assert len(constrained) == len(episodes)
    assert constrained[0].overrides["response_format"]["json_schema"]["schema"]["properties"]["answer"]["enum"] == ["A", "B", "C", "D"]
    assert constrained[0].messages[-2] == {"role": "assistant", "content": "A. one: maybe.\nB. two: maybe."}


def test_without_a_constraint_the_reader_decides_and_a_reply_out_of_schema_is_no_answer(tmp_path):
    episodes, llm = _mmlu_run(tmp_path / "free", ["A. one: maybe.\nB. two: maybe."] * 8)
    assert all(e["status"] == "parse_error" and not e["success"] for e in episodes)
    assert not any("response_format" in c.overrides for c in llm.calls)
    from memrl_bench.core.answers import read_constrained

    assert read_constrained('{"answer": "E"}', "ABCD").answer is None
    assert read_constrained("B", "ABCD").answer is None  # the server did not hold the schema: no reading decides
    assert read_constrained('{"answer": "C"}', "ABCD").answer == "C"


def test_the_report_shows_the_key_letters_best_constant_letter_and_answered_letters(tmp_path):
    from memrl_bench.report.load import load
    from memrl_bench.report.tables import choice_table

    _mmlu_run(tmp_path, ["Answer: A"] * 8)  # key B everywhere: SR 0, every answer A
    table = choice_table(load(tmp_path))
    reference, row = table.view.iloc[0], table.view.iloc[1]
    assert reference["variant"].startswith("key letters (test, 4 questions)")
    assert reference["SR %"] == "best constant letter B: 100.0" and reference["B %"] == "100.0"
    assert row["SR %"] == "0.0" and row["A %"] == "100.0" and row["no answer %"] == "0.0"


@pytest.mark.slow
@pytest.mark.llm
def test_a_real_local_server_holds_the_constrained_answer_to_the_schema(tmp_path):
    """llama.cpp turns the JSON schema into a grammar: with SmolLM2, which seldom writes an
    "Answer: X" line, every constrained reply is a choice letter and no episode is unanswered."""
    from memrl_bench.core.records import read_run
    from memrl_bench.runner.loop import run
    from tests.helpers import composed, tiny_mmlu

    cfg = composed(
        "env=mmlu",
        f"env.data_dir={tiny_mmlu(tmp_path / 'mmlu', questions=3)}",
        "method=none",
        "llm=local",
        "llm.threads=1",
        "llm.max_tokens=48",
        f"llm.cache_path={tmp_path / 'cache.sqlite'}",
        "embedder=minilm",
        "+actor.answer_constraint=json_schema",
        "protocol.epochs=1",
        "protocol.batch_size=3",
        "protocol.validate_every_epoch=false",
        "progress=false",
    )
    run(cfg, tmp_path / "run")
    episodes = read_run(tmp_path / "run").episodes
    assert episodes and all(e.status == "ok" and e.info["answer"] in "ABCD" and e.info["answer_rule"] == "constrained" for e in episodes)
