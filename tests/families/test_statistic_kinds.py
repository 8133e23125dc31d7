"""Statistic kinds: one object per kind, equal to its public name, that survives pickling as
itself; the completion and projection each kind owns."""

from __future__ import annotations

import copy
import pickle

import cloudpickle
import numpy as np
import pytensor.tensor as pt
import pytest

from pymc_private.families.kinds import (
    COUNTS,
    GRAM,
    KINDS,
    SUM,
    SUM_SQUARES,
    simplex_projection,
    statistic_kind,
)
from pymc_private.families.statistics import StatisticSpec, complete_statistic


@pytest.mark.parametrize("kind", list(KINDS.values()), ids=list(KINDS))
def test_a_kind_is_its_name_and_pickles_as_itself(kind):
    assert kind == kind.name and type(kind.name) is str
    assert statistic_kind(kind.name) is kind and statistic_kind(kind) is kind
    assert pickle.loads(pickle.dumps(kind)) is kind
    assert cloudpickle.loads(cloudpickle.dumps(kind)) is kind
    assert copy.deepcopy(kind) is kind


def _counts(derived=True, grouped=False):
    return StatisticSpec(
        name="counts(x)",
        kind="counts",
        data=("x",),
        shape=((2,) if grouped else ()) + (2 if derived else 3,),
        unit=1.0,
        sensitivity=2,
        record_lower=np.zeros(1),
        record_upper=np.ones(1),
        group_by="g" if grouped else None,
        n_groups=2 if grouped else None,
        n_categories=3,
        derived_first=derived,
    )


def test_a_spec_parses_its_kind_and_an_unknown_kind_is_refused():
    assert _counts().kind is COUNTS
    with pytest.raises(ValueError, match="unknown statistic kind 'cubes'"):
        statistic_kind("cubes")


def test_counts_complete_their_derived_category_in_numpy_and_pytensor():
    released = np.array([[3, 4], [1, 0]])
    totals = np.array([10, 2])
    expected = [[3, 3, 4], [1, 1, 0]]
    spec = _counts(grouped=True)
    np.testing.assert_array_equal(complete_statistic(spec, released, totals), expected)
    graph = complete_statistic(spec, pt.as_tensor(released), pt.as_tensor(totals))
    np.testing.assert_array_equal(graph.eval(), expected)
    assert complete_statistic(_counts(derived=False), [1, 2, 3], 6).tolist() == [1, 2, 3]


def test_a_packed_gram_matrix_completes_to_the_symmetric_matrix():
    spec = StatisticSpec("gram(x)", GRAM, ("x",), (3,), 1.0, 1, np.zeros(3), np.ones(3))
    full = [[1.0, 2.0], [2.0, 5.0]]
    np.testing.assert_array_equal(complete_statistic(spec, [1.0, 2.0, 5.0], None), full)
    graph = complete_statistic(spec, pt.as_tensor(np.array([1.0, 2.0, 5.0])), None)
    np.testing.assert_array_equal(graph.eval(), full)


def test_projections_give_what_a_data_set_can_produce():
    """Counts: non-negative integers summing to N per cell; sums: inside [N·min t, N·max t]."""
    noisy = np.array([[-2.4, 7.9], [1.2, 0.4]])
    projected = COUNTS.project(_counts(grouped=True), noisy, np.array([10.0, 2.0]))
    full = np.concatenate([[[10], [2]] - projected.sum(-1, keepdims=True), projected], -1)
    assert projected.dtype == np.int64 and (full >= 0).all() and full.sum(-1).tolist() == [10, 2]
    spec = StatisticSpec("sum(x)", SUM, ("x",), (), 0.5, 4, np.array(-2), np.array(2))
    assert SUM.project(spec, np.array(-30.0), 20.0) == -20.0
    assert SUM.project(spec, np.array(7.5), 20.0) == 7.5
    assert SUM_SQUARES.power == 2 and SUM.power == 1


def test_the_simplex_projection_is_the_nearest_point():
    values, total = np.array([0.2, 1.5, -0.7]), np.array(1.0)
    projected = simplex_projection(values, total)
    assert projected.sum() == pytest.approx(1.0) and (projected >= 0).all()
    rng = np.random.default_rng(0)
    for point in rng.dirichlet(np.ones(3), 200):
        assert np.sum((values - point) ** 2) >= np.sum((values - projected) ** 2) - 1e-12
