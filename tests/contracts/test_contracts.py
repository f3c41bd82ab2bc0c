"""memrl_bench.cli.contracts: the contract checks by name, class or built part, and its command."""

from __future__ import annotations

import pytest

from memrl_bench.cli.contracts import check_env, check_method, main
from memrl_bench.envs.checker import SplitsError
from memrl_bench.envs.synthetic import SyntheticEnv
from memrl_bench.methods.checker import InterfaceError, SettingsError
from memrl_bench.methods.none import NoMemory

SMALL = {"tasks": {"train": 4, "validation": 2, "test_in_distribution": 2, "test_out_of_distribution": 2}}


class NoSplits(SyntheticEnv):
    def splits(self):
        return {}


def test_parts_are_checked_by_name_reference_or_class():
    check_method("none")
    check_method("memrl_bench.methods.none:NoMemory")
    check_env("synthetic", SMALL)
    check_env(SyntheticEnv(SMALL))
    with pytest.raises(SplitsError, match="splits\\(\\) must be a non-empty dict"):
        check_env(NoSplits, SMALL)
    with pytest.raises(SettingsError, match="^RAG: method.top_k: Input should be greater than or equal to 1 \\(got 0\\)$"):
        check_method("rag", {"top_k": 0})
    with pytest.raises(SettingsError, match="^NoMemory: settings given \\(k\\) but the method has none"):
        check_method(NoMemory, {"k": 1})
    with pytest.raises(InterfaceError, match="is not a MemoryMethod subclass"):
        check_method(SyntheticEnv)


def test_the_command_takes_a_parts_yaml_then_the_pairs_and_exits_by_outcome(capsys):
    main(["method", "rag", "top_k=2", "index.kind=hnsw"])
    assert capsys.readouterr().out == (
        "method rag keeps its contract (check_interface, check_retrieval_changes_no_state, check_learn_replays, "
        "check_snapshot_restores, check_items)\n"
    )
    main(["env", "synthetic", "tasks.train=4"])
    assert capsys.readouterr().out.startswith("env synthetic keeps its contract (check_splits, ")
    for argv, code, line in (
        (
            ["method", "rag", "top_k=0"],
            1,
            "method rag breaks its contract: SettingsError: RAG: method.top_k: Input should be greater than or equal to 1 (got 0)\n",
        ),
        (["method", "rag", "top_n=2"], 2, "error: Could not override 'method.top_n'. To append to your config use +method.top_n=2\n"),
        (["method", "nope"], 2, "error: unknown method 'nope'; valid methods: "),
        (["method"], 2, "usage: python -m memrl_bench.cli.contracts method|env NAME [key=value ...]\n"),
        # round 28b: a seed that is no integer ended in a traceback
        (["env", "synthetic", "seed=abc"], 2, "error: seed='abc': the seed is an integer\n"),
        (["env", "synthetic", "seed=1e400"], 2, "error: seed=inf: the seed is an integer\n"),
        (["env", "synthetic", "seed=[1,2]"], 2, "error: seed=[1, 2]: the seed is an integer\n"),
    ):
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == code and capsys.readouterr().err.startswith(line), argv
