"""The one statistics module: t-intervals, the bootstrap, variance ratios and the verdict rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memrl_bench.core import stats
from memrl_bench.core.stats import INCONCLUSIVE, NOT_MEASURED, NOT_SUPPORTED, SUPPORTED, Interval

T_975_2 = 4.302652729911275  # scipy.stats.t.ppf(0.975, 2)


@pytest.mark.parametrize(
    "interval, direction, null, expected",
    [
        (Interval(0.2, 0.1, 0.3, 5), +1, 0.0, SUPPORTED),
        (Interval(-0.2, -0.3, -0.1, 5), +1, 0.0, NOT_SUPPORTED),
        (Interval(0.05, -0.1, 0.2, 5), +1, 0.0, INCONCLUSIVE),
        (Interval(-0.2, -0.3, -0.1, 5), -1, 0.0, SUPPORTED),
        (Interval(0.7, 0.6, 0.8, 5), +1, 0.5, SUPPORTED),
        (Interval(0.45, 0.4, 0.49, 5), +1, 0.5, NOT_SUPPORTED),
        (Interval(0.9, None, None, 1), +1, 0.0, INCONCLUSIVE),
        (Interval(None, None, None, 0), +1, 0.0, NOT_MEASURED),
    ],
)
def test_verdict_follows_the_interval(interval, direction, null, expected):
    assert stats.verdict(interval, direction, null) == expected


def test_side_is_the_verdict_without_a_direction():
    assert [stats.side(Interval(0.2, 0.1, 0.3, 5)), stats.side(Interval(0.0, -0.1, 0.1, 5)), stats.side(Interval(-0.2, -0.3, -0.1, 5))] == [
        1,
        0,
        -1,
    ]
    assert stats.side(Interval(0.9, None, None, 1)) is None


def test_t_interval_by_hand():
    ci = stats.t_interval([1.0, 2.0, 3.0, 4.0, None])
    # sd = 1.29099, se = 0.645497, t(0.975, 3) = 3.182446
    assert (ci.mean, ci.n) == (2.5, 4)
    assert ci.low == pytest.approx(2.5 - 3.182446 * 0.645497, abs=1e-5)
    assert ci.high == pytest.approx(2.5 + 3.182446 * 0.645497, abs=1e-5)
    assert stats.t_interval([3.0, 3.0]).text() == "3.000 [3.000, 3.000] (n=2)"


def test_t_interval_three_seeds():
    interval = stats.t_interval([0.5, 0.6, 0.7])
    assert interval.n == 3
    assert interval.mean == pytest.approx(0.6)
    assert interval.half_width == pytest.approx(T_975_2 * 0.1 / math.sqrt(3))
    assert interval.half_width == pytest.approx(0.2484, abs=1e-4)


def test_t_interval_of_one_value_has_no_interval():
    interval = stats.t_interval([0.4])
    assert (interval.mean, interval.low, interval.high, interval.n) == (0.4, None, None, 1)
    assert interval.half_width is None
    assert interval.text() == "0.400 (n=1)"


def test_t_interval_ignores_missing_values():
    assert stats.t_interval([0.2, None, np.nan, 0.4]).mean == pytest.approx(0.3)
    assert stats.t_interval([]) == stats.NO_DATA
    assert stats.NO_DATA.text() == "n/a"


def test_variance_ratio_counts_identical_groups_once():
    a = [[0.0, 2.0, 4.0]] * 3  # a deterministic arm repeated over 3 method seeds: variance 4, df 2
    b = [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]]  # variance 1, df 4
    ratio = stats.variance_ratio(a, b)
    assert ratio.mean == pytest.approx(4.0)
    assert ratio.n == 3  # min(df) + 1
    assert ratio.low < 4.0 < ratio.high
    assert stats.variance_ratio(a, [[1.0, 1.0]]) == stats.NO_DATA  # no variance to divide by


def test_bootstrap_mean_is_seeded_and_brackets_the_mean():
    x = [1.0, 0.0] * 5
    first = stats.bootstrap_mean(x)
    assert first == stats.bootstrap_mean(x)
    assert first.mean == 0.5 and first.n == 10
    assert 0.1 < first.low < 0.35 and 0.65 < first.high < 0.9
    assert stats.bootstrap_mean([]) == stats.NO_DATA


def test_pairs_needed_for_a_half_width():
    from memrl_bench.core.stats import n_for_half_width

    # sd of [1, 0, 1, 0] is sqrt(1/3); (1.96 * 0.5774 / 0.1)^2 = 128.05
    assert n_for_half_width([1, 0, 1, 0], 0.10) == 129
    assert n_for_half_width([0.2, 0.2, 0.2], 0.10) == 2  # no spread: any two pairs
    assert n_for_half_width([0.5], 0.10) is None
