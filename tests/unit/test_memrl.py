"""MemRL's phase B, Q update and selection on hand-computed numbers."""

import copy
import dataclasses

import numpy as np
import pytest

from memrl_bench.core.config import ConfigError, validated
from memrl_bench.core.schema import Episode, RetrievedItem, Task
from memrl_bench.core.vector_index import unit_rows
from memrl_bench.methods.base import Experience, MethodContext, Query
from memrl_bench.methods.memrl import MemRL


def make(**cfg) -> MemRL:
    return MemRL(cfg, MethodContext(seed=0))


def add(method: MemRL, item_id: str, q: float, key: np.ndarray, success: bool = True) -> None:
    """Store one memory (a learn batch of one, nothing injected) and set its Q."""
    ep = Episode(item_id, f"task-{item_id}", "train", "train", 1, 0, 0, success, 1.0, "ok")
    method.learn([Experience(ep, Task(f"task-{item_id}", "train", item_id), np.asarray(key, dtype=np.float32))])
    method.store.get(item_id).fields["q_value"] = q


def at(cosine: float, axis: int = 1) -> np.ndarray:
    """A unit key at `cosine` to QUERY, the rest of its length on `axis`: keys on other axes
    are not near duplicates of each other, so they found separate intent groups."""
    key = np.zeros(8)
    key[0], key[axis] = cosine, np.sqrt(1 - cosine**2)
    return key


QUERY = np.eye(8, dtype=np.float32)[0]


def ranking(m: MemRL, key: np.ndarray = QUERY, episode_id: str = "ep") -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Phase B's whole ranking for a query: ids, sims, Q estimates and scores, best first (a greedy twin retrieving every candidate)."""
    twin = copy.deepcopy(m)
    twin.config = m.config.model_copy(update={"k_select": len(m.store), "epsilon": 0.0, "selection": "greedy"})
    items = twin.retrieve(Query(Task("q", "train", "q"), np.asarray(key, dtype=np.float32), episode_id, "train")).items
    return (
        [r.item_id for r in items],
        np.array([r.similarity for r in items]),
        np.array([r.q_value for r in items]),
        np.array([r.score for r in items]),
    )


def test_phase_b_ranks_by_hand_computed_scores():
    m = make(**{"lambda": 0.5})
    for i, q, key in zip("ABC", [0.9, 0.6, 0.1], [at(0.9), at(0.9), at(0.7, axis=2)]):
        add(m, i, q, key)  # A and B share a key, so an intent group
    ranked, sims, q, scores = ranking(m)
    # sim_z = (sim - 0.5187) / 0.1203; q_z = (Q - 0.5333) / 0.32998 (population std)
    expected = {"A": 0.5 * (3.16958 + 1.11118), "B": 0.5 * (3.16958 + 0.20203), "C": 0.5 * (1.50706 - 1.31321)}
    assert ranked == ["A", "B", "C"] and sims == pytest.approx([0.9, 0.9, 0.7])
    assert scores == pytest.approx([expected[i] for i in ranked], abs=1e-4)


def test_q_min_drops_after_the_q_statistics_of_the_whole_pool():
    """Officially Q's mean and std come from the whole pool, before q_min drops B; the correction takes them after."""
    for after, q_z in ((False, 1.0), (True, 0.0)):  # pool [0.5, -0.5]: mean 0, std 0.5 / A alone: std taken as 1
        m = make(q_min=0.0, q_stats_after_q_min=after)
        add(m, "A", 0.5, at(0.8))
        add(m, "B", -0.5, at(0.8))
        ranked, _, q, scores = ranking(m)
        assert ranked == ["A"]  # B has Q < q_min
        assert scores[0] == pytest.approx(0.5 * (0.8 - 0.5187) / 0.1203 + 0.5 * q_z)


def test_q_floor_recency_boost_and_gamma_as_the_official_code():
    m = make(q_floor=0.0, recency_boost=0.25, gamma=0.9, alpha=0.5, q_init=0.5, q_init_failure=0.25, reward_failure=-1.0)
    add(m, "A", -0.4, np.eye(4)[0])
    add(m, "B", 0.2, np.eye(4)[0])
    ranked, _, q, _ = ranking(m, np.eye(4)[0])
    assert dict(zip(ranked, q.tolist())) == {"A": 0.0, "B": 0.45}  # max(q_floor, Q + boost): -0.15 -> 0.0, 0.45
    used = RetrievedItem.of(m.store.get("B"), 0.9, 0.45, 1.0)
    loss = Episode("e1", "t1", "train", "train", 1, 0, 0, False, 0.0, "ok", retrieved=[used])
    m.learn([Experience(loss, Task("t1", "train", "t1"), np.eye(4)[2])])
    assert m.store.get("B").fields["q_value"] == 0.0  # (1 - 0.5) * 0.2 + 0.5 * (-1 + 0.9 * 0) = -0.4, floored
    assert m.store.get("e1").fields["q_value"] == 0.25  # q_init_failure


def test_pool_z_scores_similarity_within_the_pool():
    m = make(sim_normalisation="pool")
    add(m, "A", 0.0, at(0.9))
    add(m, "B", 0.0, at(0.7, axis=2))
    _, _, _, scores = ranking(m)
    assert scores == pytest.approx([0.5, -0.5])


def test_monte_carlo_q_update_and_new_memories():
    m = make(alpha=0.3)
    add(m, "A", 0.6, np.eye(4)[0])
    add(m, "B", 0.6, np.eye(4)[0])
    used_a = RetrievedItem.of(m.store.get("A"), 0.9, 0.6, 1.0)
    used_b = RetrievedItem.of(m.store.get("B"), 0.9, 0.6, 1.0)
    win = Episode("e1", "t1", "train", "train", 1, 0, 0, True, 1.0, "ok", retrieved=[used_a])
    loss = Episode("e2", "t2", "train", "train", 1, 0, 1, False, 0.0, "ok", retrieved=[used_b])
    m.learn([Experience(win, Task("t1", "train", "x"), np.eye(4)[0]), Experience(loss, Task("t2", "train", "y"), np.eye(4)[1])])
    assert m.store.get("A").fields["q_value"] == pytest.approx(0.72)  # 0.6 + 0.3 * (1 - 0.6)
    assert m.store.get("B").fields["q_value"] == pytest.approx(0.6 + 0.3 * (-1 - 0.6))
    assert m.store.get("e1").fields["group"] == m.store.get("A").fields["group"]  # sim 1.0 >= 0.9 joins
    assert m.store.get("e2").fields["group"] != m.store.get("A").fields["group"]  # orthogonal: new group
    assert m.store.get("e2").fields["q_value"] == 0.0 and m.stats().items == 4


def test_phase_a_threshold_and_k_groups():
    m = make(k_groups=2, sim_threshold=0.5)
    keys = np.array([[1, 0, 0], [0.8, 0.6, 0], [0.55, 0, 0.835], [0, 0, 1]], dtype=np.float32)
    for i, k in enumerate(keys):
        add(m, f"m{i}", 0.0, k)
    ids, sims, _, _ = ranking(m, np.array([1, 0, 0]))
    assert ids == ["m0", "m1"]  # the top 2 groups above 0.5; m2 (0.55) is third, m3 (0.0) below threshold
    assert sims == pytest.approx([1.0, 0.8])


def test_epsilon_zero_is_greedy_top_k_and_deterministic():
    m = make(k_select=3, epsilon=0.0)
    rng = np.random.default_rng(1)
    for i in range(12):
        add(m, f"m{i}", float(rng.normal()), rng.normal(size=8))
    query = Query(Task("q", "train", "q"), m.store.keys[0], "train-e01-00000-s0", "train")
    first = m.retrieve(query)
    assert [r.item_id for r in first.items] == ranking(m, query.key)[0][:3]
    assert [r.item_id for r in m.retrieve(query).items] == [r.item_id for r in first.items]


def test_epsilon_one_samples_uniformly_and_depends_on_the_seed():
    picks = set()
    for seed in range(20):
        m = MemRL({"epsilon": 1.0, "k_select": 1, "sim_threshold": -1.0}, MethodContext(seed=seed))
        for i in range(5):
            add(m, f"m{i}", 0.0, np.eye(5)[i])
        key = np.ones(5, dtype=np.float32) / np.sqrt(5)
        picks.add(m.retrieve(Query(Task("q", "train", "q"), key, "ep", "train")).items[0].item_id)
    assert len(picks) >= 3


@pytest.mark.parametrize("selection", ["greedy", "softmax", "ucb", "thompson"])
def test_an_empty_pool_retrieves_nothing(selection):
    m = make(selection=selection, q_min=0.0)
    query = Query(Task("q", "train", "q"), np.eye(4, dtype=np.float32)[0], "ep", "train")
    assert m.retrieve(query).items == []  # no memory yet
    add(m, "A", -0.5, np.eye(4)[0])
    assert m.retrieve(query).items == []  # the only candidate is below q_min


def test_retrieve_does_not_change_state(tmp_path):
    from memrl_bench.methods.base import fingerprint

    m = make(selection="thompson")
    for i in range(6):
        add(m, f"m{i}", 0.1 * i, np.eye(6)[i] + 0.5)
    before = fingerprint(m, tmp_path / "a")
    m.retrieve(Query(Task("q", "train", "q"), np.ones(6, dtype=np.float32) / np.sqrt(6), "ep", "validation"))
    assert fingerprint(m, tmp_path / "b") == before


def test_snapshot_restore_round_trip(tmp_path):
    m = make()
    for i in range(5):
        add(m, f"m{i}", 0.2 * i, np.eye(5)[i])
    (tmp_path / "s").mkdir()
    m.snapshot(tmp_path / "s")
    other = make()
    other.restore(tmp_path / "s")
    assert [i.to_dict() for i in other.items()] == [i.to_dict() for i in m.items()]
    assert np.array_equal(other.group_keys.keys, m.group_keys.keys)


def experience(episode_id: str, text: str, key: np.ndarray, success: bool = True, used: list | None = None) -> Experience:
    ep = Episode(episode_id, f"task/{text}", "train", "train", 1, 0, 0, success, float(success), "ok", retrieved=used or [])
    return Experience(ep, Task(f"task/{text}", "train", text), np.asarray(key, dtype=np.float32))


def members(m: MemRL) -> list[tuple[str, list[str]]]:
    return [(g.content, g.fields["members"]) for g in m.group_keys.items]


def test_a_new_memory_joins_only_groups_its_own_retrieval_found():
    """Two new tasks at cosine 0.95 in one batch found two groups (official); group_within_batch joins them."""
    near = np.array([0.95, np.sqrt(1 - 0.95**2), 0, 0])
    for within, expected in ((False, [("a", ["e1"]), ("b", ["e2"])]), (True, [("a", ["e1", "e2"])])):
        m = make(write_with_llm=False, group_within_batch=within)
        m.learn([experience("e1", "a", np.eye(4)[0]), experience("e2", "b", near)])
        assert members(m) == expected
        m.learn([experience("e3", "c", near)])  # a later batch: its retrieval finds a group at 0.95 (or 1.0)
        assert members(m)[-1][1][-1] == "e3" and len(m.group_keys) == len(expected)


def test_the_same_task_text_twice_in_a_batch_orphans_the_first_memory():
    """Officially the text's group is taken over by the second memory, the first kept but never retrieved."""
    m = make(write_with_llm=False)
    ops = m.learn([experience("e1", "a", np.eye(4)[0]), experience("e2", "a", np.eye(4)[0])]).ops_by_episode
    assert members(m) == [("a", ["e2"])] and m.store.get("e1").fields["group"] == -1 and m.stats().items == 2
    assert ops == {
        "e1": [{"op": "add", "item_id": "e1", "q": 0.0, "group": -1}],
        "e2": [{"op": "add", "item_id": "e2", "q": 0.0, "group": 0, "orphaned": ["e1"]}],
    }
    query = Query(Task("task/a", "train", "a"), np.eye(4, dtype=np.float32)[0], "q", "validation")
    assert [r.item_id for r in m.retrieve(query).items] == ["e2"]
    fixed = make(write_with_llm=False, keep_repeated_task_members=True)
    fixed.learn([experience("e1", "a", np.eye(4)[0]), experience("e2", "a", np.eye(4)[0])])
    assert members(fixed) == [("a", ["e1", "e2"])] and fixed.labels == ("memrl_keep_repeated_task_members",)


def test_a_retrieval_left_empty_by_q_min_founds_a_group():
    """Every candidate below q_min: officially the retrieval counts as empty, so the new memory founds a group
    (here its text's, taking it over); join_after_empty_retrieval lets it join the group its phase A found."""
    for join, expected in ((False, [("a", ["e2"]), ("b", ["e3"])]), (True, [("a", ["e1", "e2"]), ("b", ["e0", "e3"])])):
        m = make(write_with_llm=False, q_min=-0.5, join_after_empty_retrieval=join)
        m.learn([experience("e1", "a", np.eye(4)[0]), experience("e0", "b", np.eye(4)[1])])
        m.store.get("e0").fields["q_value"] = -0.6  # b's only memory is below q_min
        m.store.get("e1").fields["q_value"] = -0.6
        query = Query(Task("task/a", "train", "a"), np.eye(4, dtype=np.float32)[0], "e2", "train")
        (retrieval,) = m.retrieve_batch([query])
        assert retrieval.items == []
        played = experience("e2", "a", np.eye(4)[0])
        played.retrieval = retrieval
        m.learn([played, experience("e3", "b", np.eye(4)[1])])  # e3: not retrieved for, redone
        assert members(m) == expected


def test_learn_uses_the_retrieval_it_is_given_and_redoes_a_missing_one_against_the_same_memory():
    """Given each episode's retrieval, learn searches no group; a batch replayed without them (a resume)
    is grouped by the retrieval redone before its writes, so both twins end equal."""
    rng = np.random.default_rng(0)
    centres = unit_rows(rng.standard_normal((5, 16)))
    retrieving, replaying = make(write_with_llm=False), make(write_with_llm=False)
    searches = []
    search = retrieving.group_keys.search
    retrieving.group_keys.search = lambda queries, k, floor=-np.inf: searches.append(len(queries)) or search(queries, k, floor)
    for r in range(8):
        keys = centres[rng.integers(0, 5, 8)] + 0.2 * rng.standard_normal((8, 16)) / 4  # cos ~0.9 within a topic
        batch = [experience(f"r{r}-{j}", f"task {r} {j % 5}", key, bool(rng.random() < 0.5)) for j, key in enumerate(keys)]
        found = retrieving.retrieve_batch([Query(e.task, e.key, e.episode.episode_id, "train") for e in batch])
        for exp, retrieval in zip(batch, found):
            exp.episode.retrieved = retrieval.items
        calls = len(searches)
        retrieving.learn([dataclasses.replace(e, retrieval=r) for e, r in zip(batch, found)])
        assert len(searches) == calls  # nothing searched again
        replaying.learn(batch)
    assert members(retrieving) == members(replaying) and len(retrieving.group_keys) > 5
    assert {i.id: i.fields["q_value"] for i in retrieving.items()} == {i.id: i.fields["q_value"] for i in replaying.items()}
    assert any(len(g) > 1 for _, g in members(retrieving))


def test_learn_reports_each_q_update_and_write_as_the_state_holds_them():
    """The memory_op records learn returns: per item, its updates in batch order run from its Q
    before learn to its Q after (an item injected twice in one batch chains), with the reward of
    each episode; every new memory with its stored Q and group; Q nobody used is unchanged."""
    rng = np.random.default_rng(1)
    centres = unit_rows(rng.standard_normal((4, 16)))
    m = make(write_with_llm=False, q_floor=-0.5, reward_failure=-2.0)
    chained = floored = 0
    for r in range(6):
        keys = centres[rng.integers(0, 4, 8)] + 0.05 * rng.standard_normal((8, 16))
        batch = [experience(f"r{r}-{j}", f"task {r} {j}", key, bool(rng.random() < 0.5)) for j, key in enumerate(keys)]
        found = m.retrieve_batch([Query(e.task, e.key, e.episode.episode_id, "train") for e in batch])
        for exp, retrieval in zip(batch, found):
            exp.episode.retrieved, exp.retrieval = retrieval.items, retrieval
        before = {i.id: i.fields["q_value"] for i in m.items()}
        ops = m.learn(batch).ops_by_episode
        after = {i.id: i.fields["q_value"] for i in m.items()}
        assert list(ops) == [e.episode.episode_id for e in batch]
        q_now = dict(before)
        for exp in batch:
            *updates, write = ops[exp.episode.episode_id]
            assert [u["item_id"] for u in updates] == [x.item_id for x in exp.episode.retrieved]
            for u in updates:
                chained += u["q_before"] != before[u["item_id"]]
                floored += u["q_after"] == -0.5
                assert (
                    u["op"] == "q_update" and u["q_before"] == q_now[u["item_id"]] and u["reward"] == (1.0 if exp.episode.success else -2.0)
                )
                q_now[u["item_id"]] = u["q_after"]
            stored = m.store.get(exp.episode.episode_id).fields
            assert write == {"op": "add", "item_id": exp.episode.episode_id, "q": after[write["item_id"]], "group": stored["group"]}
        assert {i: q_now[i] for i in before} == {i: after[i] for i in before}
        assert min(after.values()) >= -0.5
    assert chained and floored  # some memory was injected into two episodes of one batch; some Q hit q_floor


def test_epsilon_samples_in_the_order_drawn():
    m = make(write_with_llm=False, epsilon=1.0, k_select=3, sim_threshold=-1.0)
    for i in range(6):
        add(m, f"m{i}", 0.1 * i, np.eye(6)[i])
    query = Query(Task("q", "train", "q"), np.ones(6, dtype=np.float32), "ep-7", "train")
    drawn = m.ctx.rng_for("sample", "ep-7").choice(6, size=3, replace=False)
    ranked, *_ = ranking(m, query.key)
    assert [r.item_id for r in m.retrieve(query).items] == [ranked[i] for i in drawn]


def test_orphans_survive_a_snapshot(tmp_path):
    m = make(write_with_llm=False)
    m.learn([experience("e1", "a", np.eye(4)[0]), experience("e2", "a", np.eye(4)[0]), experience("e3", "b", np.eye(4)[1])])
    (tmp_path / "s").mkdir()
    m.snapshot(tmp_path / "s")
    other = make(write_with_llm=False)
    other.restore(tmp_path / "s")
    for method in (m, other):
        method.learn([experience("e4", "a", np.eye(4)[0], success=False), experience("e5", "a", np.eye(4)[2])])
    # e4 joined e2 in a; e5 (same text, found nothing) took a over, orphaning e2 and e4 of its own batch
    assert members(other) == members(m) == [("a", ["e5"]), ("b", ["e3"])]
    assert {i.id for i in m.items() if i.fields["group"] == -1} == {"e1", "e2", "e4"}
    assert [i.to_dict() for i in other.items()] == [i.to_dict() for i in m.items()]
    assert np.array_equal(other.group_keys.keys, m.group_keys.keys) and m.group_keys.keys[0].tolist() == [0, 0, 1, 0]


def test_a_runs_transcripts_replay_to_its_final_q_values(tmp_path):
    """A synthetic run (no LLM) writes its training episodes' Q updates and writes to
    transcripts.jsonl.gz, and only those (the poisoning experiment's unplayed memories
    included): applied in order, they give the final snapshot's Q."""
    from memrl_bench.core.records import read_run
    from memrl_bench.core.transcripts import TranscriptLog
    from tests.helpers import config, run_to

    _, folder = run_to(
        tmp_path,
        "run",
        config(
            protocol={"name": "poison", "epochs": 2, "batch_size": 8, "checkpoint_interval_s": 0, "poison_share": 0.25, "poison_epoch": 2}
        ),
    )
    run, records = read_run(folder), TranscriptLog(folder).read()
    train = [e for e in run.episodes if e.phase == "train"]
    assert any(not e.played for e in train)
    assert [r["episode_id"] for r in records] == [e.episode_id for e in train]
    q: dict[str, float] = {}
    for record, episode in zip(records, train):
        *updates, write = record["memory_ops"]
        assert [u["item_id"] for u in updates] == [x.item_id for x in episode.retrieved]
        for update in updates:
            assert update["q_before"] == q[update["item_id"]]
            q[update["item_id"]] = update["q_after"]
        q[write["item_id"]] = write["q"]
    assert sum(len(r["memory_ops"]) > 1 for r in records) > len(records) / 2
    assert q == {item.id: item.fields["q_value"] for item in run.items}


def test_a_corrected_quirk_is_labelled_in_the_manifest(tmp_path):
    import json

    from tests.helpers import config, run_to

    _, folder = run_to(
        tmp_path,
        "run",
        config(method={"name": "memrl", "group_within_batch": True}, protocol={"epochs": 1, "batch_size": 8, "checkpoint_interval_s": 0}),
    )
    assert json.loads((folder / "manifest.json").read_text())["labels"] == ["synthetic", "memrl_group_within_batch"]


@pytest.mark.parametrize(
    "cfg, key",
    [
        ({"epsilon": -0.1}, "method.epsilon"),
        ({"k_select": 0}, "method.k_select"),
        ({"lambda": 2}, "method.lambda"),
        ({"alpah": 0.3}, "method.alpah"),
    ],
)
def test_bad_hyperparameters_name_the_key(cfg, key):
    from memrl_bench.methods.memrl import MemRLConfig

    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        validated(MemRLConfig, cfg, "method")
