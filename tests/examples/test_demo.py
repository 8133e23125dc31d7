"""Tests of the demo (``python -m pymc_private demo``) on its quickest settings."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from pymc_private.__main__ import main
from pymc_private.examples.demo import class_probabilities, load_data

ROW = re.compile(r"^\s*(\S+)\s+(\d\.\d+) ± (\d\.\d+)\s+(\d\.\d+)\s*$", re.MULTILINE)


@pytest.mark.slow
def test_demo_prints_utility_table_and_writes_plot(tmp_path, capsys):
    png = tmp_path / "accuracy.png"
    assert main(["demo", "--quick", "--out", str(png)]) == 0
    out = capsys.readouterr().out

    rows = ROW.findall(out)
    assert [float(eps) for eps, *_ in rows] == [0.1, 1.0, 10.0]
    for _, mean, sd, non_private in rows:
        assert 0.0 <= float(mean) <= 1.0
        assert float(sd) >= 0.0
        assert 0.8 < float(non_private) <= 1.0
    assert len({non_private for *_, non_private in rows}) == 1
    # Utility: at ε = 10 the noise on counts of ~360 records is small (scale 6.1), so the
    # private classifier is close to the non-private one (measured 0.89 against 0.90).
    _, mean_at_10, _, non_private = rows[-1]
    assert float(mean_at_10) > float(non_private) - 0.1
    assert "do not come from the private training rows" in out
    assert "PrivacyAnalysis" in out
    assert "PrivacyPlan: pmp.privatize at ε = 1 (laplace)" in out
    assert "planned.epsilon_for(target_sd_inflation=1.5) = " in out
    assert f"saved to {png.resolve()}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_thresholds_are_public_medians_only():
    data = load_data(n_public=60, n_test=150, n_features=30, seed=0)
    bunch = load_breast_cancer()
    public = np.random.default_rng(0).permutation(len(bunch.target))[:60]
    np.testing.assert_array_equal(data.thresholds, np.median(bunch.data[public], axis=0))
    assert data.x_train.shape == (569 - 60 - 150, 30)
    assert data.x_test.shape == (150, 30)
    assert set(np.unique(data.x_train)) == {0, 1}


def test_features_are_chosen_on_the_public_split_only():
    bunch = load_breast_cancer()
    order = np.random.default_rng(0).permutation(len(bunch.target))
    public, train = order[:60], order[210:]
    data = load_data(n_features=5, seed=0)
    # Recomputed from the public rows and their labels alone.
    binary = bunch.data[public] > np.median(bunch.data[public], axis=0)
    labels = bunch.target[public]
    separation = np.abs(binary[labels == 1].mean(axis=0) - binary[labels == 0].mean(axis=0))
    expected = np.sort(np.argsort(-separation, kind="stable")[:5])
    assert data.feature_names == [str(bunch.feature_names[j]) for j in expected]
    assert data.x_train.shape == (len(train), 5)
    np.testing.assert_array_equal(
        data.x_train, (bunch.data[train][:, expected] > data.thresholds).astype(np.int64)
    )


def test_class_probabilities_match_bayes_rule_for_one_draw():
    pi = np.array([0.3])
    theta = np.array([[[0.9, 0.2], [0.4, 0.6]]])
    x = np.array([[1, 0], [0, 1]])
    joint = np.array(
        [
            [0.7 * 0.9 * 0.8, 0.3 * 0.4 * 0.4],
            [0.7 * 0.1 * 0.2, 0.3 * 0.6 * 0.6],
        ]
    )
    expected = joint / joint.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(class_probabilities(pi, theta, x), expected, rtol=1e-12)


def test_without_a_subcommand_prints_help(capsys):
    assert main([]) == 0
    assert "demo" in capsys.readouterr().out
