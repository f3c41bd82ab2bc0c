"""SkillBank (SkillRL's skill bank): reading real model-style replies, the bank's organisation,
template and embedding retrieval, the evolution trigger, the Q switch, resume, a whole run."""

import asyncio
import dataclasses
import json
import os
from pathlib import Path

import pytest

from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import strip_measured
from memrl_bench.envs.llb_db import LLBDBEnv, instruction_category
from memrl_bench.methods.base import MethodContext, fingerprint
from memrl_bench.methods.memrl import MemRLConfig, updated_q
from memrl_bench.methods.skillbank import SkillBank, category_of
from tests.memory_llm_helpers import (
    ScriptedModel,
    answer,
    context,
    embed,
    experience,
    is_prompt,
    query,
    run_synthetic,
    used,
    whole_and_resumed,
)


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def skill(title: str, principle: str = "Check the state before acting.", when: str = "Any task.") -> dict:
    return {"title": title, "principle": principle, "when_to_apply": when}


def mistake(description: str) -> dict:
    return {"description": description, "why_it_happens": "The agent hurries.", "how_to_avoid": "Look at the result first."}


def first_task(prompt: str) -> str:
    return prompt.split("Task: ")[1].split("\n")[0]


def scripted(prompt: str) -> str:
    """A model that names each skill after the first task it was shown, so every call adds new ones."""
    task = first_task(prompt)
    if is_prompt(prompt, "skillbank_skills"):
        return answer({"general_skills": [skill(f"General {task}")], "task_specific_skills": [skill(f"Specific {task}")]})
    if is_prompt(prompt, "skillbank_mistakes"):
        return answer({"common_mistakes": [mistake(f"Rushing {task}")]})
    if is_prompt(prompt, "skillbank_evolve"):
        return answer({"new_skills": [skill(f"Evolved {task}"), skill(f"Evolved again {task}")]})
    raise AssertionError(f"unexpected prompt: {prompt[:80]}")


def make(loop, model=None, text_embed=True, **cfg) -> SkillBank:
    return SkillBank(cfg, context(model or ScriptedModel(scripted), loop, text_embed=text_embed))


def exp(n: int, task: str, success: bool, category: str | None = None, retrieved=()):
    """Training episode n; `category` as an env gives it in Task.data."""
    e = experience(n, task, success, retrieved=retrieved)
    return dataclasses.replace(e, task=dataclasses.replace(e.task, data={"category": category} if category else {}))


def categorised_query(task: str, category: str | None, episode_id: str = "validation-e01-00000-s0"):
    q = query(task, episode_id)
    return dataclasses.replace(q, task=dataclasses.replace(q.task, data={"category": category} if category else {}))


def test_needs_an_llm_and_embedding_mode_needs_a_text_embedder(loop):
    with pytest.raises(ConfigError, match="method skillbank manages memory with an LLM"):
        SkillBank({}, MethodContext(seed=0))
    with pytest.raises(ConfigError, match="method.retrieval_mode=embedding .* set embedder=minilm"):
        make(loop, text_embed=False, retrieval_mode="embedding")


def test_the_category_is_the_envs_and_general_without_one():
    assert category_of(exp(0, "clean the mug", True, "clean").task) == "clean"
    assert category_of(exp(0, "clean the mug", True).task) == "general"


LLB_DATA = Path(os.environ.get("MEMRL_BENCH_LLB_DIR") or Path(__file__).resolve().parents[3] / "shared" / "data" / "llb")


def test_llb_db_categories_come_from_the_instruction_wording():
    assert [instruction_category(t) for t in ("Insert a row", "increase the price by 5", "Delete all", "What is", "")] == [
        "insert",
        "update",
        "delete",
        "query",
        "query",
    ]
    task = LLBDBEnv._make_task(
        "7", {"instruction": "Update the status.", "answer_info": {"sql": "SELECT 1", "direct": [], "md5": ""}, "table_info": {}}, "train"
    )
    assert task.data["category"] == "update"  # the wording, not the gold SQL


@pytest.mark.skipif(not LLB_DATA.exists(), reason=f"shared LLB data not at {LLB_DATA}")
def test_llb_db_categories_agree_with_the_gold_statement_on_every_task():
    gold_kind = {"SELECT": "query", "INSERT": "insert", "UPDATE": "update", "DELETE": "delete"}
    for name in ("db_train.json", "db_val.json"):
        for entry in json.loads((LLB_DATA / name).read_text()).values():
            assert instruction_category(entry["instruction"]) == gold_kind[entry["answer_info"]["sql"].split()[0].upper()]


REAL_SKILLS_REPLY = """Looking at the successful trajectories, a few patterns stand out.

```json
{
  "general_skills": [
    {"title": "Inspect Before Acting", "principle": "Read the table schema first; queries on guessed columns fail.",
     "when_to_apply": "At the start of every task."},
    {"title": "Verify The Result", "principle": "Run a SELECT after a change to confirm it."}
  ],
  "task_specific_skills": [
    {"title": "Filter Then Aggregate", "principle": "Apply WHERE before GROUP BY so counts cover only matching rows.",
     "when_to_apply": "Questions asking for counts of a subset."}
  ]
}
```

These skills should transfer well."""


def test_a_fenced_reply_with_prose_and_a_missing_key_is_read(loop):
    model = ScriptedModel([REAL_SKILLS_REPLY])
    m = make(loop, model)
    m.learn([exp(0, "count the orders of 2020", True, "query"), exp(1, "count the users", True, "query")])
    bank = m.bank()
    assert [s["title"] for s in bank["general_skills"]] == ["Inspect Before Acting", "Verify The Result"]
    assert bank["general_skills"][1]["when_to_apply"] == ""  # the missing key, read as empty
    assert [s["skill_id"] for s in bank["task_specific_skills"]["query"]] == ["query_001"]
    assert [s["skill_id"] for s in bank["general_skills"]] == ["gen_001", "gen_002"]
    assert m.store.get("gen_001").content == (
        "- **Inspect Before Acting**: Read the table schema first; queries on guessed columns fail. Apply when: At the start of every task."
    )


def test_the_writers_calls_take_max_tokens_and_temperature(loop):
    """The LLB-DB families study's first skill-bank arms: the world's 256 completion tokens cut all 72 distillation answers
    (finish_reason length), and the bank stayed empty. The writer's calls get their own cap."""
    model = ScriptedModel(scripted)
    make(loop, model, max_tokens=1024, temperature=0.2).learn([exp(0, "count the orders", True, "query"), exp(1, "drop a row", False)])
    assert model.overrides and all(o == {"temperature": 0.2, "max_tokens": 1024} for o in model.overrides), model.overrides
    model = ScriptedModel(scripted)
    make(loop, model).learn([exp(0, "count the orders", True, "query")])
    assert model.overrides == [{}]  # unset: the LLM config's own


def test_a_bad_reply_is_repaired_once_then_skipped_and_counted(loop):
    no_principle = answer({"general_skills": [{"title": "Look First"}]})
    model = ScriptedModel([no_principle, answer({"new_skills": []}), "I cannot help with that."])
    m = make(loop, model)
    first = m.learn([exp(0, "heat the soup", True)])
    assert len(model.calls) == 2 and 'entry 0: "principle" must be a non-empty string' in model.calls[1][-1]["content"]
    assert first.op_errors_by_episode == {"train-e01-00000-s0": 1} and not m.items()  # a valid JSON of the wrong shape, twice
    assert first.usage_by_episode["train-e01-00000-s0"].calls == 2


def test_a_bare_list_of_skills_is_asked_again_for_its_lists(loop):
    model = ScriptedModel([answer([skill("Look First")]), answer({"general_skills": [skill("Look First")]})])
    m = make(loop, model)
    m.learn([exp(0, "heat the soup", True, "heat")])
    assert 'lists under "general_skills" and "task_specific_skills"' in model.calls[1][-1]["content"]
    assert [i.id for i in m.items()] == ["gen_001"]  # the repaired answer, task_specific_skills left out


def test_an_evolution_reply_may_be_a_bare_list(loop):
    model = ScriptedModel(lambda p: answer([skill("Search Every Room")]) if is_prompt(p, "skillbank_evolve") else scripted(p))
    m = make(loop, model, evolve_min_episodes=2, max_common_mistakes=0)
    m.learn([exp(0, "find the key", False, "find"), exp(1, "find the coin", False, "find")])
    assert [i.fields["title"] for i in m.items() if i.fields["dynamic"]] == ["Search Every Room"]


def test_the_bank_is_organised_as_skillrl_keeps_it_with_provenance_and_cost(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model, enable_dynamic_update=False)
    batch = [
        exp(0, "clean the mug", True, "clean"),
        exp(1, "heat the soup", True, "heat"),
        exp(2, "clean the plate", True, "clean"),
        exp(3, "heat the bread", False, "heat"),
    ]
    result = m.learn(batch)
    bank = m.bank()
    assert sorted(bank) == ["common_mistakes", "general_skills", "task_specific_skills"]
    assert [s["title"] for s in bank["general_skills"]] == ["General clean the mug", "General heat the soup"]
    assert {c: [s["title"] for s in skills] for c, skills in bank["task_specific_skills"].items()} == {
        "clean": ["Specific clean the mug"],
        "heat": ["Specific heat the soup"],
    }
    assert [(x["mistake_id"], x["description"]) for x in bank["common_mistakes"]] == [("err_001", "Rushing heat the bread")]
    clean = m.store.get("clean_001")
    assert clean.provenance.episode_id == "train-e01-00000-s0"
    assert clean.fields["source_episodes"] == ["train-e01-00000-s0", "train-e01-00002-s0"]  # both successes fed the call
    assert clean.fields["kind"] == "task_specific" and clean.fields["category"] == "clean"
    assert m.store.get("err_001").provenance.episode_id == "train-e01-00003-s0"
    # Three calls (clean's successes, heat's successes, heat's failure), each charged to its first episode.
    assert sorted(result.usage_by_episode) == ["train-e01-00000-s0", "train-e01-00001-s0", "train-e01-00003-s0"]
    assert sum(u.calls for u in result.usage_by_episode.values()) == len(model.calls) == 3
    assert m.stats().items == 5 and m.stats().groups == 4  # general, clean, heat, mistakes


def test_distillation_stops_at_the_banks_sizes_and_repeats_are_dropped(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model, max_general_skills=1, max_task_specific_skills=1, enable_dynamic_update=False)
    m.learn([exp(0, "clean the mug", True, "clean")])
    m.learn([exp(1, "clean the mug", True, "clean")])  # the same titles again: no call, the lists are full
    assert len(model.calls) == 1 and [i.id for i in m.items()] == ["gen_001", "clean_001"]
    m.learn([exp(2, "heat the soup", True, "heat")])  # general is full: only heat's own skill is asked for
    assert '"general_skills": leave it empty' in model.calls[-1][0]["content"]
    assert [i.id for i in m.items()] == ["gen_001", "clean_001", "heat_001"]


def bank_for_retrieval(loop, **cfg) -> SkillBank:
    m = make(loop, enable_dynamic_update=False, **cfg)
    m.learn([exp(0, "clean the mug", True, "clean"), exp(1, "heat the soup", True, "heat"), exp(2, "cool the milk", False, "cool")])
    return m


def test_template_retrieval_shows_general_skills_the_categorys_and_mistakes(loop):
    m = bank_for_retrieval(loop)
    r = m.retrieve(categorised_query("clean the cup", "clean"))
    assert [i.item_id for i in r.items] == ["gen_001", "gen_002", "clean_001", "err_001"]
    assert "### General principles" in r.prompt_block and "### Skills for clean tasks" in r.prompt_block
    mistakes = "### Mistakes to avoid\n- Don't: Rushing cool the milk Why: The agent hurries. Instead: Look at the result first."
    assert r.prompt_block.endswith(mistakes)
    # No category: general skills and mistakes only; top_k caps the general ones.
    r = bank_for_retrieval(loop, top_k=1).retrieve(categorised_query("clean the cup", None))
    assert [i.item_id for i in r.items] == ["gen_001", "err_001"]


def test_embedding_retrieval_takes_the_nearest_skills_of_any_category(loop):
    m = bank_for_retrieval(loop, retrieval_mode="embedding", top_k=1, mistakes_top_k=0)
    r = m.retrieve(categorised_query("Specific heat the soup", "clean"))  # the category does not matter here
    sims = m.store.similarities(embed(["Specific heat the soup"])[0])
    assert [i.item_id for i in r.items] == ["gen_002", "heat_001"]
    assert r.items[1].similarity == pytest.approx(sims[m.store.index_of("heat_001")])
    assert "### Task-relevant skills" in r.prompt_block


def test_evolution_adds_skills_to_a_category_below_the_threshold_and_resets_its_window(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model, evolve_min_episodes=3, max_new_skills=1, max_common_mistakes=0)
    m.learn([exp(0, "clean the mug", True, "clean"), exp(1, "clean the pan", False, "clean")])
    assert not any(is_prompt(c[0]["content"], "skillbank_evolve") for c in model.calls)  # 2 episodes < evolve_min_episodes
    second = m.learn([exp(2, "clean the cup", False, "clean"), exp(3, "heat the soup", False, "heat")])  # clean: 1 of 3 < 0.4
    # charged to a failure of the batch that evolved it: the first failure (episode 1) was logged with the first batch (an
    # LLB-DB study stopped on "charged memory calls to ... not an episode of the batch")
    charged = {e: [c["purpose"] for c in calls] for e, calls in second.calls_by_episode.items()}
    assert "skillbank_evolve" in charged["train-e01-00002-s0"] and set(charged) <= {"train-e01-00002-s0", "train-e01-00003-s0"}
    evolve = [c[0]["content"] for c in model.calls if is_prompt(c[0]["content"], "skillbank_evolve")]
    assert len(evolve) == 1 and 'category "clean" it succeeded 1 times in its last 3 attempts' in evolve[0]
    assert first_task(evolve[0]) == "clean the pan"
    (evolved,) = [i for i in m.items() if i.fields["dynamic"]]
    assert (evolved.id, evolved.fields["kind"], evolved.fields["category"]) == ("dyn_001", "task_specific", "clean")
    assert evolved.provenance.episode_id == "train-e01-00001-s0" and evolved.fields["source_episodes"] == [
        "train-e01-00001-s0",
        "train-e01-00002-s0",
    ]
    assert "clean" not in m.window and m.window["heat"]["episodes"] == 1


def test_no_evolution_at_or_above_the_threshold_nor_when_switched_off(loop):
    for cfg in ({"update_threshold": 0.5}, {"update_threshold": 0.6, "enable_dynamic_update": False}):
        model = ScriptedModel(scripted)
        m = make(loop, model, evolve_min_episodes=2, **cfg)
        m.learn([exp(0, "clean the mug", True, "clean"), exp(1, "clean the pan", False, "clean")])  # 0.5
        assert not any(is_prompt(c[0]["content"], "skillbank_evolve") for c in model.calls)


def test_evolved_general_skills_come_first_and_are_never_cut(loop):
    m = make(loop, evolve_min_episodes=1, top_k=1, max_common_mistakes=0)
    m.learn([exp(0, "take the key", True)])  # no category: a general skill; 1 of 1 solved, no evolution
    m.learn([exp(1, "open the door", False), exp(2, "open the gate", False)])  # 1 of 3 < 0.4: two evolved general skills
    r = m.retrieve(categorised_query("open the gate", None))
    assert [i.item_id for i in r.items] == ["dyn_001", "dyn_002"]  # two evolved skills fill past top_k=1: no static one


def test_q_learning_updates_used_skills_by_memrls_rule_and_ranks_by_its_score(loop):
    m = make(loop, q_learning=True, enable_dynamic_update=False, max_common_mistakes=0)
    m.learn([exp(0, "clean the mug", True, "clean"), exp(1, "clean the pan", True, "clean")])
    rule = MemRLConfig(alpha=0.3)
    assert [i.id for i in m.items()] == ["gen_001", "clean_001"]
    before = m.retrieve(categorised_query("clean the cup", "clean"))
    assert [i.q_value for i in before.items] == [0.0, 0.0] and all(i.score is not None for i in before.items)
    m.learn([exp(2, "clean the cup", False, "clean", retrieved=[used(m, "clean_001")])])
    assert m.store.get("clean_001").fields["q_value"] == updated_q(rule, 0.0, -1.0) == pytest.approx(-0.3)
    assert m.store.get("clean_001").fields["uses"] == 1 and m.store.get("gen_001").fields["q_value"] == 0.0
    off = make(loop, enable_dynamic_update=False, max_common_mistakes=0)
    off.learn([exp(0, "clean the mug", True, "clean")])
    off.learn([exp(2, "clean the cup", False, "clean", retrieved=[used(off, "clean_001")])])
    assert off.store.get("clean_001").fields["q_value"] == 0.0 and off.store.get("clean_001").fields["uses"] == 1


def test_with_q_a_section_is_ordered_by_score(loop):
    m = make(loop, q_learning=True, enable_dynamic_update=False, max_common_mistakes=0, max_general_skills=2, max_task_specific_skills=2)
    m.learn([exp(0, "clean the bowl", True, "clean")])
    m.learn([exp(1, "clean the plate", True, "clean")])  # a second clean skill, and a second general one
    assert [i.id for i in m.items()] == ["gen_001", "clean_001", "gen_002", "clean_002"]
    sims = m.store.similarities(embed(["clean the cup"])[0])
    assert sims[0] == sims[2] and sims[1] == sims[3]  # bowl and plate are as far from the cup: only Q can order them
    m.learn([exp(2, "clean the cup", True, "clean", retrieved=[used(m, "clean_002"), used(m, "gen_002")])])  # the bank is full
    r = m.retrieve(categorised_query("clean the cup", "clean"))
    assert [i.item_id for i in r.items] == ["gen_002", "gen_001", "clean_002", "clean_001"]  # the used ones gained Q
    plain = make(loop, enable_dynamic_update=False, max_common_mistakes=0)
    plain.learn([exp(0, "clean the bowl", True, "clean")])
    plain.learn([exp(1, "clean the plate", True, "clean")])
    assert [i.item_id for i in plain.retrieve(categorised_query("clean the cup", "clean")).items] == [
        "gen_001",
        "gen_002",
        "clean_001",
        "clean_002",
    ]  # without Q: as written


def test_snapshot_restore_continue_equals_an_uninterrupted_run(loop, tmp_path):
    batches = [
        [exp(0, "clean the mug", False, "clean"), exp(1, "heat the soup", True, "heat")],
        [exp(2, "clean the pan", False, "clean"), exp(3, "clean the cup", True, "clean")],
    ]
    whole, resumed = whole_and_resumed(lambda: make(loop, evolve_min_episodes=3, q_learning=True), batches, tmp_path)
    assert any(i.fields["dynamic"] for i in whole.items())  # the restored window made the same evolution
    assert fingerprint(resumed, tmp_path / "a") == fingerprint(whole, tmp_path / "b")


@pytest.mark.parametrize("method", [{"name": "skillbank"}, {"name": "skillbank", "q_learning": True, "evolve_min_episodes": 4}])
def test_a_whole_synthetic_run_is_audited_costed_and_reproducible(tmp_path, method):
    metrics, records, model = run_synthetic(tmp_path, "a", method)
    _, again, _ = run_synthetic(tmp_path, "b", method)
    assert metrics["usage"]["memory"]["calls"] == len(model.calls) > 0
    assert all(r["memory_usage"]["calls"] == 0 for r in records if r["phase"] != "train")
    assert metrics["memory_final"]["items"] > 0 and any(r["retrieved"] for r in records if r["phase"] == "test")
    assert [strip_measured(r) for r in records] == [strip_measured(r) for r in again]
