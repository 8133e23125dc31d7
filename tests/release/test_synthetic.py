"""`pmp.synthesize` and `pmp.combine_synthetic`: synthetic records from a noise-aware posterior,
free of privacy cost, and the rules that combine analyses of them.

The synthetic data are post-processing of the released posterior: two models holding
different raw records give the same data sets from the same fit and seed, and the ledger is
unchanged. The combining rules are checked on cases with a closed form.
"""

from __future__ import annotations

import logging
import warnings

import arviz as az
import hypothesis.strategies as st
import numpy as np
import pandas as pd
import pymc as pm
import pytest
from hypothesis import HealthCheck, given, settings
from scipy import stats

import pymc_private as pmp

logging.getLogger("pymc").setLevel(logging.ERROR)

N = 200


def _table(seed: int):
    rng = np.random.default_rng(seed)
    labels = rng.binomial(1, 0.4, N)
    features = rng.binomial(1, np.where(labels[:, None] == 1, 0.7, 0.2), (N, 2))
    return labels, features


def _naive_bayes(labels, features) -> pm.Model:
    with pm.Model(coords={"cls": [0, 1], "feature": ["a", "b"]}) as model:
        y_obs = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        x_obs = pmp.PrivateData("x_obs", features, bounds=(0, 1), dims=("record", "feature"))
        pi = pmp.TruncatedBeta("pi", 1, 1, lower=0.05, upper=0.95)
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=0.05, upper=0.95, dims=("cls", "feature"))
        pm.Bernoulli("y", pi, observed=y_obs)
        pm.Bernoulli("x", theta[y_obs], observed=x_obs, dims=("record", "feature"))
    return model


def _fit(model: pm.Model, noise_aware: bool = True):
    with warnings.catch_warnings():  # the plug-in's CalibrationWarning, short chains
        warnings.simplefilter("ignore")
        private = pmp.privatize(model, 1.0, noise_aware=noise_aware, secure=False, random_seed=3)
        return pmp.sample(50, tune=100, chains=2, model=private, progressbar=False, random_seed=4)


@pytest.fixture(scope="module")
def naive_bayes():
    model = _naive_bayes(*_table(0))
    return model, _fit(model)


@pytest.fixture(scope="module")
def normal_mean():
    """A Normal mean with σ known: real records with declared bounds (−1, 2)."""
    y = np.clip(np.random.default_rng(1).normal(0.5, 0.6, N), -1.0, 2.0)
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", y, bounds=(-1.0, 2.0))
        mu = pmp.TruncatedNormal("mu", 0.0, 1.0, lower=-1.0, upper=2.0)
        pm.Normal("y", mu, sigma=0.6, observed=y_obs)
    return model, _fit(model)


def test_synthetic_sets_are_sealed_records_of_the_model_from_distinct_draws(naive_bayes):
    model, idata = naive_bayes
    frames = pmp.synthesize(idata, model, m=100, random_seed=1)
    assert len(frames) == 100
    for frame in frames:
        assert list(frame.columns) == ["y_obs", "a", "b"]  # the coords of the features
        assert frame.shape == (N, 3) and (frame.dtypes == np.int64).all()
        assert frame.isin([0, 1]).all().all()
        assert pmp.check_release(frame).releasable
    # Every data set from its own posterior draw: all 100 draws of the fit, once each.
    draws = {tuple(frame.attrs["posterior_draw"]) for frame in frames}
    assert draws == {(c, d) for c in range(2) for d in range(50)}
    # Each set follows its draw: the features given the label, at θ of that draw (a 5 sd band
    # of the frequency of x_a among the ≈ 80 records labelled 1).
    theta = idata.posterior["theta"].sel(cls=1, feature="a").values
    for frame in frames[:10]:
        chain, draw = frame.attrs["posterior_draw"]
        ones = frame.loc[frame["y_obs"] == 1, "a"]
        sd = np.sqrt(theta[chain, draw] * (1 - theta[chain, draw]) / len(ones))
        assert abs(ones.mean() - theta[chain, draw]) < 5 * sd
    changed = frames[0].copy()
    changed.iloc[0, 0] = 1 - changed.iloc[0, 0]
    assert "changed since" in str(pmp.check_release(changed))
    with pytest.raises(pmp.InvalidPrivacyParameterError, match="distinct posterior draws"):
        pmp.synthesize(idata, model, m=101)


def test_synthetic_data_read_no_raw_record_and_cost_nothing(naive_bayes, tmp_path):
    """Another model of the same structure and n, holding other records, gives the very same
    data sets from the same fit and seed: nothing raw is read. The ledger is unchanged. The
    fit may come from a file."""
    model, idata = naive_bayes
    idata.to_netcdf(tmp_path / "fit.nc")
    idata = az.from_netcdf(tmp_path / "fit.nc")
    other = _naive_bayes(*_table(99))
    ledger = pmp.ledger_for(model)
    before = (ledger.to_json(), pmp.ledger_for(other).to_json())
    first = pmp.synthesize(idata, model, m=3, n=50, random_seed=7)
    second = pmp.synthesize(idata, other, m=3, n=50, random_seed=7)
    assert all(a.equals(b) and len(a) == 50 for a, b in zip(first, second, strict=True))
    assert (ledger.to_json(), pmp.ledger_for(other).to_json()) == before
    again = pmp.synthesize(idata, model, m=3, n=50, random_seed=8)
    assert not all(a.equals(b) for a, b in zip(first, again, strict=True))


def test_real_records_stay_in_their_declared_bounds(normal_mean):
    model, idata = normal_mean
    (frame,) = pmp.synthesize(idata, model, m=1, n=5000, random_seed=2)
    assert frame["y_obs"].dtype == np.float64
    assert frame["y_obs"].between(-1.0, 2.0).all()
    # Normal(μ, 0.6) clipped to the bounds: mass at each bound, the body untouched.
    assert (frame["y_obs"] == 2.0).any() and (frame["y_obs"] == -1.0).any()
    assert frame["y_obs"].nunique() > 4000


def test_refusals_say_what_to_change(naive_bayes):
    model, idata = naive_bayes
    private = pmp.privatize(model, 1.0, secure=False, random_seed=3)
    with pytest.raises(pmp.UnsupportedModelError, match="original model"):
        pmp.synthesize(idata, private, m=2)
    plug_in = _fit(model, noise_aware=False)
    with pytest.raises(pmp.UnsupportedModelError, match="noise-aware posterior"):
        pmp.synthesize(plug_in, model, m=2)
    with pm.Model() as coin:  # exact draws paid per draw (OPS) on raw records
        x_obs = pmp.PrivateData("x_obs", np.zeros(10, dtype=int), bounds=(0, 1))
        pm.Bernoulli("x", pmp.TruncatedBeta("p", 1, 1, lower=0.05, upper=0.95), observed=x_obs)
    per_draw = pmp.sample_posterior(coin, n=2, budget=pmp.Budget(100.0))
    with pytest.raises(pmp.UnsupportedModelError, match="tempered posterior"):
        pmp.synthesize(per_draw, coin, m=2)
    changed = idata.copy()
    changed.posterior["pi"] = changed.posterior["pi"] * 0.5
    with pytest.raises(pmp.UnsupportedModelError, match=r"not released by pmp\.sample"):
        pmp.synthesize(changed, model, m=2)
    with pm.Model() as regression:
        x_obs = pmp.PrivateData("x_obs", np.zeros((N, 2)), bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", np.zeros(N), bounds=(-2.0, 2.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
        pm.Normal("y", x_obs @ w, sigma=0.3, observed=y_obs)
    with pytest.raises(pmp.UnsupportedModelError, match=r"generates the PrivateData \['x_obs'\]"):
        pmp.synthesize(idata, regression, m=2)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    m=st.one_of(st.integers(-3, 0), st.floats(0.5, 3.0), st.just(True), st.just("2")),
    n=st.one_of(st.none(), st.integers(1, 10)),
)
def test_bad_counts_are_refused_before_anything_is_drawn(naive_bayes, m, n):
    model, idata = naive_bayes
    ledger = pmp.ledger_for(model).to_json()
    with pytest.raises(pmp.InvalidPrivacyParameterError, match="m must be a positive integer"):
        pmp.synthesize(idata, model, m=m, n=n)
    with pytest.raises(pmp.InvalidPrivacyParameterError, match="n must be a positive integer"):
        pmp.synthesize(idata, model, m=2, n=0 if n is None else -n)
    assert pmp.ledger_for(model).to_json() == ledger


def test_combining_rules_on_closed_forms():
    """Equal estimates: the mixture is their common Normal, its interval q ± z √u. Three
    estimates 1, 2, 3 with u = 0.5: the mixture's variance ū + (m − 1)/m b = 0.5 + 2/3, and
    Raghunathan et al.'s T_f = (1 + 1/3)·1 − 0.5 with ν = 2 (1 − 0.5 / (4/3))²."""
    with pytest.warns(pmp.errors.CalibrationWarning, match="many more records"):
        same = pmp.combine_synthetic([2.0] * 5, [0.25] * 5, n_synthetic=1000, n_original=100)
    low, high = same.interval(0.9)
    assert np.allclose([low, high], [2 - 1.6449 * 0.5, 2 + 1.6449 * 0.5], atol=1e-4)
    spread = [1.0, 2.0, 3.0]
    with pytest.warns(pmp.errors.CalibrationWarning, match="too small for the mixture"):
        mixture = pmp.combine_synthetic(spread, [0.5] * 3, n_synthetic=100, n_original=100)
    assert mixture.estimate == 2.0 and np.isclose(mixture.variance, 0.5 + 2 / 3)
    low, high = mixture.interval(0.8)
    cdf = [np.mean(stats.norm.cdf(x, spread, np.sqrt(0.5))) for x in (low, high)]
    assert np.allclose(cdf, [0.1, 0.9])
    rubin = pmp.combine_synthetic(
        spread, [0.5] * 3, n_synthetic=100, n_original=100, method="rubin"
    )
    dof = 2 * (1 - 0.5 / (4 / 3)) ** 2
    assert np.isclose(rubin.variance, 4 / 3 - 0.5) and np.isclose(rubin.dof, dof)
    low, high = rubin.interval(0.9)
    assert np.isclose(high - 2, stats.t.ppf(0.95, dof) * np.sqrt(4 / 3 - 0.5))
    with pytest.warns(pmp.errors.CalibrationWarning, match="Reiter"):
        tight = pmp.combine_synthetic(
            [1.0, 1.01, 0.99], [1.0] * 3, n_synthetic=50, n_original=100, method="rubin"
        )
    assert np.isclose(tight.variance, 0.5)  # (n_synthetic / n_original) ū
    vector = pmp.combine_synthetic(
        [[1.0, 5.0], [3.0, 6.0]], [[0.01, 0.02]] * 2, n_synthetic=10**4, n_original=10
    )
    assert vector.estimate.shape == (2,) and vector.interval()[0].shape == (2,)


def test_both_rules_recover_the_posterior_of_a_normal_mean():
    """Räisä et al.'s Gaussian example: x ~ N(μ, 1), flat prior, posterior N(x̄, 1/n). Each
    synthetic set of n_syn records from its own μ_i gives the downstream posterior N(ȳ_i, 1/n_syn);
    over m = 400 sets the mixture's variance is 1/n + 1/n_syn and Rubin's T_f is 1/n (10%)."""
    rng = np.random.default_rng(5)
    n, n_syn, m = 100, 2000, 400
    mu = rng.normal(0.3, np.sqrt(1 / n), m)
    means = rng.normal(mu, np.sqrt(1 / n_syn))  # ȳ_i of n_syn draws from N(μ_i, 1)
    variances = np.full(m, 1 / n_syn)
    mixture = pmp.combine_synthetic(means, variances, n_synthetic=n_syn, n_original=n)
    rubin = pmp.combine_synthetic(means, variances, n_synthetic=n_syn, n_original=n, method="rubin")
    assert abs(mixture.variance / (1 / n + 1 / n_syn) - 1) < 0.1
    assert abs(rubin.variance * n - 1) < 0.1


@pytest.mark.parametrize(
    ("estimates", "variances", "kwargs", "match"),
    [
        ([1.0], [1.0], {}, "m >= 2"),
        ([1.0, 2.0], [1.0], {}, "same shape"),
        ([1.0, np.nan], [1.0, 1.0], {}, "finite"),
        ([1.0, 2.0], [1.0, -1.0], {}, "non-negative"),
        ([1.0, 2.0], [1.0, 1.0], {"method": "pooled"}, "'mixture' or 'rubin'"),
        ([1.0, 2.0], [1.0, 1.0], {"n_synthetic": 0}, "n_synthetic must be a positive"),
    ],
)
def test_combining_refuses_bad_input(estimates, variances, kwargs, match):
    arguments = {"n_synthetic": 100, "n_original": 100, **kwargs}
    with pytest.raises(pmp.InvalidPrivacyParameterError, match=match):
        pmp.combine_synthetic(estimates, variances, **arguments)


def test_public_covariates_are_columns_as_they_are():
    """y private, X public (``pm.Data``): the synthetic responses come with the public rows
    they were drawn at, so a regression runs on the table; n is then the original n."""
    rng = np.random.default_rng(2)
    x = np.column_stack([np.ones(N), rng.uniform(-1.0, 1.0, N)])
    y = np.clip(x @ [0.5, 1.0] + 0.3 * rng.normal(size=N), -3.0, 3.0)
    with pm.Model() as model:
        design = pm.Data("X", x)
        y_obs = pmp.PrivateData("y_obs", y, bounds=(-3.0, 3.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=5.0)
        pm.Normal("y", design @ w, sigma=0.3, observed=y_obs)
    idata = _fit(model)
    (frame,) = pmp.synthesize(idata, model, m=1, random_seed=3)
    assert list(frame.columns) == ["y_obs", "X[0]", "X[1]"]
    assert np.array_equal(frame[["X[0]", "X[1]"]].to_numpy(), x)
    assert pmp.check_release(frame).releasable
    with pytest.raises(pmp.InvalidPrivacyParameterError, match=r"public data \['X'\]"):
        pmp.synthesize(idata, model, m=1, n=N + 1)


def test_check_release_reads_tables_by_their_seal(naive_bayes):
    model, idata = naive_bayes
    (frame,) = pmp.synthesize(idata, model, m=1, n=20, random_seed=5)
    assert "not sealed" in str(pmp.check_release(pd.DataFrame({"y_obs": [0, 1]})))
    tagged = frame.copy()  # a copy keeps the seal: same values
    assert pmp.check_release(tagged).releasable
    tagged.attrs["source_rows"] = [3, 7]
    assert "attrs['source_rows']" in str(pmp.check_release(tagged))
    redrawn = frame.copy()
    redrawn.attrs["posterior_draw"] = [0, 1]
    assert "changed since" in str(pmp.check_release(redrawn))
    with pytest.raises(TypeError, match="DataTree or a pandas DataFrame"):
        pmp.check_release(frame.to_numpy())


@settings(max_examples=30, deadline=None)
@given(
    estimates=st.lists(st.floats(-5.0, 5.0), min_size=2, max_size=8),
    sd=st.floats(0.05, 2.0),
    prob=st.floats(0.5, 0.99),
)
def test_the_mixture_interval_holds_its_probability(estimates, sd, prob):
    """The interval's ends are the mixture's (1 ∓ prob)/2 quantiles, whatever the spread."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmp.errors.CalibrationWarning)
        combined = pmp.combine_synthetic(
            estimates, [sd**2] * len(estimates), n_synthetic=1000, n_original=100
        )
    low, high = combined.interval(prob)
    cdf = [np.mean(stats.norm.cdf(x, estimates, sd)) for x in (low, high)]
    assert np.allclose(cdf, [(1 - prob) / 2, (1 + prob) / 2], atol=1e-6)


def test_columns_take_their_coords_unless_the_name_is_taken():
    from pymc_private.release.synthetic import _frame

    for features, expected in (
        (["fever", "cough"], ["y_obs", "fever", "cough"]),
        (["y_obs", "cough"], ["y_obs", "x_obs[y_obs]", "x_obs[cough]"]),
    ):
        with pm.Model(coords={"feature": features}) as model:
            pmp.PrivateData("y_obs", np.zeros(3, dtype=int), bounds=(0, 1))
            pmp.PrivateData(
                "x_obs", np.zeros((3, 2), dtype=int), bounds=(0, 1), dims=("row", "feature")
            )
        records = {"y_obs": np.zeros(3), "x_obs": np.zeros((3, 2))}
        assert list(_frame(model, records).columns) == expected
