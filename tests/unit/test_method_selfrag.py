"""Self-RAG-style retrieval: the model's Retrieve decision and IsREL judgements as real models write them,
only relevant episodes injected, every call charged to the episode's retrieval, a whole run."""

import asyncio
import json

import pytest

from memrl_bench.core.config import ConfigError
from memrl_bench.methods.base import MethodContext
from memrl_bench.methods.llm_ops import OpError
from memrl_bench.methods.selfrag import LABEL, SelfRAG, yes_or_no
from tests.memory_llm_helpers import ScriptedModel, context, experience, is_prompt, query, run_synthetic

TASKS = ["take the key from the drawer", "open the door with the key", "water the plant", "take the key from the table"]


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def make(loop, model, **cfg) -> SelfRAG:
    method = SelfRAG(cfg, context(model, loop))
    method.learn([experience(n, task, n % 2 == 0) for n, task in enumerate(TASKS)])
    return method


def judge(decision: str, relevant: dict[str, str], otherwise: str = "No.") -> ScriptedModel:
    """Answers the Retrieve decision with `decision` and IsREL by the past task's text (`relevant`: task -> answer)."""

    def reply(prompt: str) -> str:
        if is_prompt(prompt, "selfrag_retrieve"):
            return decision
        assert is_prompt(prompt, "selfrag_relevance"), prompt[:80]
        past = prompt.split("--- Task: ")[1].split(" (outcome")[0]
        return relevant.get(past, otherwise)

    return ScriptedModel(reply)


@pytest.mark.parametrize(
    "text, said",
    [
        (" Yes.", True),
        ("yes, because the past episode opened the same drawer", True),
        ("NO", False),
        ("**No**", False),
        ("No.\n\nThe earlier task was about a plant, so yes, it is different.", False),
        ("Answer: Yes", True),
        ("I think the answer is no.", False),
        ("Yes (relevant)", True),
    ],
)
def test_a_judgement_is_read_as_real_models_write_it(text, said):
    assert yes_or_no(text) is said


@pytest.mark.parametrize("text", ["Maybe.", "Not relevant.", "It depends: yes for the key, no for the door.", "```\n```"])
def test_an_answer_without_one_yes_or_no_is_an_op_error(text):
    with pytest.raises(OpError, match="answer with one word: Yes or No"):
        yes_or_no(text)


def test_needs_an_llm():
    with pytest.raises(ConfigError, match="method selfrag manages memory with an LLM"):
        SelfRAG({}, MethodContext(seed=0))


def test_only_the_episodes_judged_relevant_are_injected_and_every_call_is_charged(loop):
    model = judge(" Yes.", {"take the key from the drawer": "Yes, the same key.", "take the key from the table": "yes"})
    method = make(loop, model)
    (retrieval,) = method.retrieve_batch([query("take the key from the shelf")])
    assert sorted(i.item_id for i in retrieval.items) == ["train-e01-00000-s0", "train-e01-00003-s0"]
    similarities = [i.similarity for i in retrieval.items]
    assert similarities == sorted(similarities, reverse=True)  # most similar first
    assert "take the key from the drawer" in retrieval.prompt_block and "water the plant" not in retrieval.prompt_block
    assert (
        retrieval.candidates == 4
        and retrieval.info["retrieve"] is True
        and sorted(retrieval.info["relevant"]) == [False, False, True, True]
    )
    assert retrieval.usage.calls == len(model.calls) == 1 + 4  # the decision, then one IsREL per stored episode (top_k 5 > 4)
    assert [c["purpose"] for c in retrieval.memory_calls].count("selfrag_relevance") == 4
    assert all(o == {"temperature": 0.0, "max_tokens": 32} for o in model.overrides)


def test_a_no_retrieves_nothing_and_judges_nothing(loop):
    model = judge("No, the task is simple enough.", {})
    (retrieval,) = make(loop, model).retrieve_batch([query("water the plant")])
    assert retrieval.items == [] and retrieval.prompt_block == "" and retrieval.info == {"retrieve": False, "relevant": []}
    assert retrieval.usage.calls == 1 and len(model.calls) == 1


def test_always_retrieve_skips_the_decision_and_top_k_bounds_the_judgements(loop):
    model = judge("unused", {}, otherwise="Yes")
    (retrieval,) = make(loop, model, mode="always_retrieve", top_k=2).retrieve_batch([query("take the key")])
    assert not any(is_prompt(c[0]["content"], "selfrag_retrieve") for c in model.calls)
    assert len(model.calls) == 2 and len(retrieval.items) == 2 and retrieval.info["retrieve"] is True


def test_an_unusable_answer_is_repaired_once_then_counts_as_no(loop):
    replies = iter(["Maybe, it could help.", "Yes."] + ["I cannot tell.", "Still unsure."] * 4)
    model = ScriptedModel(lambda prompt: next(replies))
    method = make(loop, model, top_k=1)
    (retrieval,) = method.retrieve_batch([query("take the key")])
    assert retrieval.items == [] and retrieval.info == {"retrieve": True, "relevant": [None]}
    assert retrieval.usage.calls == 4  # decision + its repair, judgement + its repair
    problems = [c.get("problem") for c in retrieval.memory_calls]
    assert problems.count("answer with one word: Yes or No") == 3


def test_an_empty_memory_asks_nothing(loop):
    model = judge("Yes", {})
    method = SelfRAG({}, context(model, loop))
    assert method.retrieve_batch([query("take the key")])[0].items == [] and model.calls == []


def test_retrieval_leaves_memory_as_it_was(loop):
    method = make(loop, judge("Yes", {}, otherwise="Yes"))
    before = [(i.id, i.content) for i in method.items()]
    method.retrieve_batch([query(t, episode_id=f"validation-e01-0000{n}-s0") for n, t in enumerate(TASKS)])
    assert [(i.id, i.content) for i in method.items()] == before


def test_a_whole_run_charges_the_judgements_to_every_phase_and_labels_the_run(tmp_path):
    metrics, records, model = run_synthetic(tmp_path, "selfrag", {"name": "selfrag"})
    tested = [r for r in records if r["phase"] == "test"]
    assert tested and all(r["memory_usage"]["calls"] >= 1 for r in tested)  # memory is never empty at test time
    assert all(r["info"]["retrieval"]["retrieve"] is True for r in tested)
    injected = [r for r in tested if r["retrieved"]]
    assert injected and all(len(r["retrieved"]) <= sum(r["info"]["retrieval"]["relevant"]) for r in injected)
    assert sum(r["memory_usage"]["calls"] for r in records) == len(model.calls)
    manifest = json.loads((tmp_path / "selfrag" / "manifest.json").read_text())
    assert LABEL in manifest["labels"] and LABEL in metrics["labels"]
