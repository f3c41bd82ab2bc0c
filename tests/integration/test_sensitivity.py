"""The sensitivity study (memrl_bench.report.sensitivity): the lock-in sentence and the phase diagrams'
data on hand-built grids of intervals, and the preset end to end on a tiny world."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memrl_bench.core.stats import Interval
from memrl_bench.report import sensitivity as sens
from memrl_bench.report.phase_diagrams import heatmap_data

CENTRE = {
    "env.harmful_early_share": 0.5,
    "env.harmful_quality": -1.5,
    "env.outcome_temperature": 0.0,
    "env.reward_flip_share": 0.0,
    "env.tasks.train": 40,
    "protocol.epochs": 5,
}
ABOVE, SPANS, BELOW = Interval(0.1, 0.05, 0.15, 5), Interval(0.01, -0.02, 0.04, 5), Interval(-0.1, -0.15, -0.05, 5)


def share_quality_grid(locked: set[tuple[float, float]], below: frozenset = frozenset()) -> list[sens.Cell]:
    """3 x 3 harmful_early_share x harmful_quality, plus a line of reward noise through the centre."""
    cells = []
    for share in (0.2, 0.5, 0.8):
        for quality in (-3.0, -1.5, -0.5):
            harmful = ABOVE if (share, quality) in locked else BELOW if (share, quality) in below else SPANS
            cells.append(
                sens.Cell({**CENTRE, "env.harmful_early_share": share, "env.harmful_quality": quality}, {m: harmful for m in sens.MEASURES})
            )
    cells += [sens.Cell({**CENTRE, "env.reward_flip_share": f}, {m: SPANS for m in sens.MEASURES}) for f in (0.1, 0.3)]
    return cells


def test_the_sentence_states_a_rectangle_of_lock_in_cells_as_conditions():
    grid = sens.grid_of(share_quality_grid({(0.5, -3.0), (0.8, -3.0)}, below=frozenset({(0.2, -0.5)})))
    assert [(d.x, d.y) for d in grid.diagrams] == [
        ("env.harmful_early_share", "env.harmful_quality")
    ]  # reward noise moves alone: no diagram
    sentence = sens.lock_in_sentence(grid)
    assert sentence.startswith(
        "ε = 0 locks in harmful memories when env.harmful_early_share ≥ 0.5 and env.harmful_quality = -3 (the other parameters at the "
        "centre"
    )
    assert sentence.endswith(
        "elsewhere not (2 of 11 cells lock in, 1 show ε = 0 injecting fewer harmful memories than ε = 0.1, 8 are inconclusive)."
    )


def test_the_sentence_lists_cells_that_are_no_rectangle_and_says_nowhere_without_any():
    ragged = sens.lock_in_sentence(sens.grid_of(share_quality_grid({(0.2, -3.0), (0.8, -0.5)})))
    assert (
        "when env.harmful_early_share = 0.2 and env.harmful_quality = -3 or env.harmful_early_share = 0.8 and env.harmful_quality = -0.5 ("
        in ragged
    )
    column = sens.lock_in_sentence(sens.grid_of(share_quality_grid({(s, -3.0) for s in (0.2, 0.5, 0.8)})))
    assert "when env.harmful_quality = -3 (" in column  # every share: only the quality is a condition
    assert sens.lock_in_sentence(sens.grid_of(share_quality_grid(set()))).startswith(
        "ε = 0 locks in harmful memories nowhere on this grid (centre env.harmful_early_share = 0.5,"
    )


def test_a_lock_in_cell_of_no_diagram_is_named_too():
    cells = share_quality_grid(set())
    cells[-1] = sens.Cell(cells[-1].values, {m: ABOVE for m in sens.MEASURES})  # reward noise 0.3, moved alone
    assert "when env.reward_flip_share = 0.3 (" in sens.lock_in_sentence(sens.grid_of(cells))


def test_the_preset_runs_every_cell_once_with_every_arm():
    import yaml

    from memrl_bench import CONF_DIR
    from memrl_bench.cli.study import study_jobs
    from memrl_bench.core.config import run_name

    study = yaml.safe_load((Path(CONF_DIR) / "experiment" / "critique_sensitivity.yaml").read_text())["study"]
    jobs = study_jobs(study["presets"], ["results_dir=/nowhere", "progress=false"], study["grids"])
    names = {run_name(job) for job in jobs}
    # 3 x 3 + 2 x 3 + 3 x 3 cells, the centre shared by the three grids; 7 arms; 5 replicates
    assert len(jobs) == len(names) == (9 + 6 + 9 - 2) * 7 * 5
    centre = [
        n
        for n in names
        if "env.harmful_early_share=0.5,env.harmful_quality=-1.5,env.outcome_temperature=0,env.reward_flip_share=0,"
        "env.tasks.train=40,protocol.epochs=5" in n
    ]
    assert len(centre) == 7 * 5


def test_an_interval_touching_zero_is_no_lock_in():
    touching = Interval(0.05, 0.0, 0.1, 5)
    cells = share_quality_grid(set())
    cells[0] = sens.Cell(cells[0].values, {m: touching for m in sens.MEASURES})
    assert cells[0].lock_in == 0 and "nowhere" in sens.lock_in_sentence(sens.grid_of(cells))


def test_a_grid_varying_one_parameter_has_no_phase_diagram():
    assert sens.grid_of([sens.Cell({**CENTRE, "protocol.epochs": e}, {m: SPANS for m in sens.MEASURES}) for e in (3, 5, 8)]) is None


def test_heatmap_data_puts_each_cell_at_its_levels_with_its_interval():
    grid = sens.grid_of(share_quality_grid({(0.8, -3.0)}, below=frozenset({(0.2, -0.5)}))[:-1])  # one cell left out
    (d,) = grid.diagrams
    means, labels = heatmap_data(d, sens.LOCK_IN_MEASURE)
    assert d.xs == [0.2, 0.5, 0.8] and d.ys == [-3.0, -1.5, -0.5]
    assert means[0, 2] == pytest.approx(0.1) and labels[0][2] == "+0.100 ▲\n[0.05, 0.15]"  # y = -3 is row 0, x = 0.8 column 2
    assert means[2, 0] == pytest.approx(-0.1) and labels[2][0].startswith("-0.100 ▼")
    assert labels[1][1] == "+0.010\n[-0.02, 0.04]"
    assert not np.isnan(means).any()
    gap = sens.grid_of(
        [c for c in share_quality_grid(set()) if c.values["env.harmful_early_share"] != 0.8 or c.values["env.harmful_quality"] != -3.0]
    )
    gap_means, gap_labels = heatmap_data(gap.diagrams[0], sens.LOCK_IN_MEASURE)
    assert math.isnan(gap_means[0, 2]) and gap_labels[0][2] == ""


def test_the_companion_table_has_every_cell_once_with_its_verdict():
    grid = sens.grid_of(share_quality_grid({(0.8, -3.0)}))
    header, rows = sens.table_rows(grid)
    assert len(rows) == 11 and len(header) == 2 + len(sens.MEASURES)
    assert ["env.harmful_early_share = 0.8, env.harmful_quality = -3", "lock-in"] == [
        rows[[r[0] for r in rows].index("env.harmful_early_share = 0.8, env.harmful_quality = -3")][i] for i in (0, -1)
    ]
    assert sum(r[0] == "centre" for r in rows) == 1


def test_the_level_table_leaves_out_arms_without_the_measure():
    from memrl_bench.core.stats import NO_DATA

    cells = share_quality_grid(set())
    for c in cells:
        c.levels = {"memrl ε=0": {m: ABOVE for m in sens.MEASURES}, "none": {m: NO_DATA for m in sens.MEASURES}}
    header, rows = sens.level_rows(sens.grid_of(cells))
    assert header == ["cell (vs the centre)", "memrl ε=0"] and rows[0] == ["centre", "0.100"]


@pytest.mark.slow
def test_the_preset_end_to_end_on_a_tiny_world(tmp_path):
    """`memrl-bench +experiment=critique_sensitivity` on a tiny world, a grid of 2 x 2 cells and a
    line of reward noise through the centre, two replicates: every cell has both epsilons,
    findings.md states the region, the report draws it."""
    root = Path(__file__).resolve().parents[2]
    small = [
        "env.tasks.train=8",
        "env.tasks.validation=4",
        "env.tasks.test_in_distribution=6",
        "env.tasks.test_out_of_distribution=4",
        "protocol.epochs=2",
    ]
    # a study runs in one process: its sweeps are the grids' (two replicates, not the preset's five)
    grids = "study.grids=['env.harmful_early_share=0.2,0.5 env.harmful_quality=-1.5,-3 seed=0,1','env.reward_flip_share=0,0.3 seed=0,1']"
    command = [
        sys.executable,
        "-m",
        "memrl_bench",
        "+experiment=critique_sensitivity",
        grids,
        f"results_dir={tmp_path}",
        "progress=false",
        *small,
    ]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "critique_sensitivity"
    assert len(list(folder.glob("*/COMPLETE"))) == 5 * 7 * 2  # cells (the centre shared) x arms x replicates
    findings = (folder / "findings.md").read_text()
    section = findings[findings.index("## Where ε = 0 locks in harmful memories (synthetic sensitivity)") :]
    assert "**ε = 0 locks in harmful memories when" in section or "**ε = 0 locks in harmful memories nowhere" in section
    for cell in (
        "centre",
        "env.harmful_early_share = 0.2",
        "env.harmful_early_share = 0.2, env.harmful_quality = -3",
        "env.harmful_quality = -3",
        "env.reward_flip_share = 0.3",
    ):
        assert section.count(f"| {cell} |") == 2, cell  # every cell once in each table
    assert section.count("(n=2)") == 5 * len(sens.MEASURES)

    from memrl_bench.report import report

    page = report(folder).read_text()
    assert page.count('<section id="sensitivity">') == 1 and "SYNTHETIC: env.harmful_quality × env.harmful_early_share" in page
