"""`pmp.check_release` and `pmp.sample_posterior_predictive`: what a private fit may release.

The ordinary follow-ups of a PyMC fit (``pm.sample_posterior_predictive`` on the original
model, ``idata.update``, a log-likelihood group, a timing attribute) put raw data or
functions of single records back into a DataTree; `check_release` names each, and
`sample_posterior_predictive` predicts at public inputs with no raw data left to read.
"""

from __future__ import annotations

import copy
import logging

import arviz as az
import hypothesis.strategies as st
import matplotlib
import matplotlib.pyplot
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings

import pymc_private as pmp

logging.getLogger("pymc").setLevel(logging.ERROR)
matplotlib.use("Agg")

WEIGHTS = np.array([0.8, -0.5])


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, (200, 2))
    y = np.clip(x @ WEIGHTS + 0.3 * rng.normal(size=200), -2.0, 2.0)
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(-2.0, 2.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
        pm.Normal("y", x_obs @ w, sigma=0.3, observed=y_obs)
    private = pmp.privatize(model, 4.0)
    with private:
        idata = pmp.sample(200, tune=200, chains=2, cores=1, random_seed=1, progressbar=False)
    return model, idata


def test_what_pmp_sample_returns_is_releasable_also_after_netcdf(regression, tmp_path):
    _, idata = regression
    check = pmp.check_release(idata)
    assert check.releasable and bool(check) and "Releasable" in str(check)
    idata.to_netcdf(tmp_path / "fit.nc")
    assert pmp.check_release(az.from_netcdf(tmp_path / "fit.nc")).releasable


def test_the_ordinary_follow_ups_are_caught_with_their_reasons(regression):
    model, idata = regression
    idata = copy.deepcopy(idata)
    with model:
        raw = pm.sample_posterior_predictive(idata, progressbar=False)
    assert "observed_data" in raw.children  # PyMC puts the raw y back
    idata.update(raw)
    draws = idata.posterior.sizes
    idata["log_likelihood"] = xr.Dataset(
        {"y": (("chain", "draw", "obs"), np.zeros((draws["chain"], draws["draw"], 3)))}
    )
    idata.attrs["sampling_time"] = 12.5
    check = pmp.check_release(idata)
    found = dict(check.findings)
    assert not check.releasable
    assert "raw observed values" in found["observed_data"]
    assert "pmp.sample_posterior_predictive" in found["posterior_predictive"]
    assert "az.loo" in found["log_likelihood"] and "pmp.release.loo" in found["log_likelihood"]
    assert "attrs['sampling_time']" in found
    assert "<li>" in check._repr_html_()


def test_a_changed_sealed_group_is_caught(regression):
    _, idata = regression
    changed = copy.deepcopy(idata)
    changed.posterior["w"] = changed.posterior["w"] + 0.0
    assert pmp.check_release(changed).releasable  # same values: nothing changed
    changed.posterior["w"] = changed.posterior["w"] * 1.5
    assert dict(pmp.check_release(changed).findings)["posterior"].startswith("changed")


def test_post_processing_and_own_attributes_are_named_with_what_to_do(regression):
    """Thinning released draws or adding an attribute is not what a private route sealed:
    the findings say what it is and what to do."""
    _, idata = regression
    thinned = idata.sel(draw=slice(0, 100))
    assert "post-processing" in dict(pmp.check_release(thinned).findings)["posterior"]
    noted = copy.deepcopy(idata)
    noted.attrs["analyst"] = "me"
    assert "delete it" in dict(pmp.check_release(noted).findings)["attrs['analyst']"]
    with pytest.raises(TypeError, match=r"the xarray\.DataTree"):
        pmp.ledger_of({})


def test_public_attributes_and_the_ledger_are_sealed_with_their_values(regression, tmp_path):
    """A value written into a public attribute (or an edited ledger) is not what the private
    route released: the seal covers the attributes' values, also after ``to_netcdf``."""
    _, idata = regression
    idata.to_netcdf(tmp_path / "fit.nc")
    for loaded in (copy.deepcopy(idata), az.from_netcdf(tmp_path / "fit.nc")):
        loaded.posterior.attrs["sampler"] = "y[0] = 0.731"
        assert dict(pmp.check_release(loaded).findings)["posterior"].startswith("changed")
    edited = copy.deepcopy(idata)
    edited.attrs["privacy_ledger"] = edited.attrs["privacy_ledger"].replace("4.0", "0.4")
    assert "ledger" in dict(pmp.check_release(edited).findings)["attrs"]


def test_records_in_a_variables_attributes_or_encoding_are_named(regression, tmp_path):
    """Raw records written into a variable's or a coordinate's attrs, or into an encoding that
    is written to the file as an attribute, passed as releasable before (the third review)."""
    model, idata = regression
    raw = model["x_obs"].get_value()[:, 0].tolist()
    edited = copy.deepcopy(idata)
    edited.posterior["w"].attrs["records"] = raw
    edited.posterior["chain"].attrs["records"] = raw
    edited.sample_stats["privacy_epsilon"].encoding["_FillValue"] = raw[0]
    found = dict(pmp.check_release(edited).findings)
    assert "delete it" in found["posterior.w.attrs['records']"]
    assert "posterior.coords.chain.attrs['records']" in found
    assert "encoding" in found["sample_stats.privacy_epsilon.encoding['_FillValue']"]
    edited.to_netcdf(tmp_path / "edited.nc")
    assert not pmp.check_release(az.from_netcdf(tmp_path / "edited.nc")).releasable
    # What xarray writes and reads back (dtype, compression, a NaN fill value) is storage.
    idata.to_netcdf(tmp_path / "fit.nc", engine="h5netcdf")
    assert pmp.check_release(az.from_netcdf(tmp_path / "fit.nc")).releasable


def test_predictions_at_public_inputs_are_sealed_and_follow_the_fit(regression):
    model, idata = regression
    new = np.array([[1.0, -1.0], [0.0, 0.0], [-0.5, 0.5]])
    pp = pmp.sample_posterior_predictive(idata, model, inputs={"x_obs": new}, random_seed=3)
    assert set(pp.children) == {"predictions", "predictions_constant_data"}
    assert pmp.check_release(pp).releasable
    predictions = pp.predictions["y"]
    assert predictions.shape[-1] == 3
    # E[y | x, w] = x·w: the predictive mean is x times the posterior mean of w (the fit's
    # secure noise moves w; the 400 draws of noise sd 0.3 leave ~0.015 of Monte Carlo error).
    weights = idata.posterior["w"].mean(("chain", "draw")).to_numpy()
    np.testing.assert_allclose(
        predictions.mean(("chain", "draw")).to_numpy(), new @ weights, atol=0.08
    )
    np.testing.assert_array_equal(pp.predictions_constant_data["x_obs"].to_numpy(), new)
    combined = copy.deepcopy(idata)
    combined.update(pp)
    assert pmp.check_release(combined).releasable


def test_prediction_refusals_say_what_to_change(regression):
    model, idata = regression
    with pytest.raises(pmp.UnsupportedModelError, match=r"inputs=\{'x_obs'"):
        pmp.sample_posterior_predictive(idata, model)
    with pytest.raises(pmp.UnsupportedModelError, match="var_names"):
        pmp.sample_posterior_predictive(idata, model, var_names=["w"])
    forged = copy.deepcopy(idata)
    forged.posterior["w"] = forged.posterior["w"] * 2.0
    with pytest.raises(pmp.UnsupportedModelError, match="not released by a private route"):
        pmp.sample_posterior_predictive(forged, model, inputs={"x_obs": np.zeros((2, 2))})


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    shape=st.sampled_from([(3,), (3, 3), (0, 2), (3, 2)]),
    bad=st.sampled_from([np.nan, np.inf, -np.inf, None]),
)
def test_bad_inputs_are_refused_before_anything_is_drawn(regression, shape, bad):
    model, idata = regression
    values = np.zeros(shape)
    if bad is not None and values.size:
        values.flat[0] = bad
    if shape == (3, 2) and bad is None:
        return  # a valid input
    with pytest.raises(pmp.DataBoundsError):
        pmp.sample_posterior_predictive(idata, model, inputs={"x_obs": values})


def test_replicated_records_without_covariates_and_sealed_exact_draws():
    rng = np.random.default_rng(2)
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", rng.integers(0, 2, 40), bounds=(0, 1))
        p = pmp.TruncatedBeta("p", 1.0, 1.0, lower=0.01, upper=0.99)
        pm.Bernoulli("y", p, observed=y_obs)
    idata = pmp.sample_posterior(model, 20, temperature=1.0, random_seed=1)
    assert pmp.check_release(idata).releasable
    pp = pmp.sample_posterior_predictive(idata, model, random_seed=1)
    assert pp.predictions["y"].shape == (1, 20, 40)  # n = 40 is public
    assert set(np.unique(pp.predictions["y"])) <= {0, 1}


# -- Posterior predictive checks against the released statistics ---------------------------


@pytest.fixture(scope="module")
def privatised_fit():
    """Beta–Bernoulli, n = 200, privatised at ε = 0.2 (Laplace scale 5 on the count)."""
    x = np.random.default_rng(11).binomial(1, 0.3, 200)
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=0.05, upper=0.95)
        pm.Bernoulli("x", theta, observed=x_obs)
    private = pmp.privatize(model, epsilon=0.2)
    with private:
        idata = pmp.sample(300, chains=2, cores=1, progressbar=False, random_seed=3)
    return private, idata


def test_replicated_statistics_check_the_fit_against_what_was_released(privatised_fit):
    """On a privatised model, predictive draws are replicated released statistics
    s̃_rep = s_rep + fresh noise, s_rep ~ p(s | θ), beside the released s̃: ArviZ's
    predictive checks and posterior predictive p-values run on them, and the result stays
    releasable (a single released value has no density for az.plot_ppc_dist to pool: its
    check is az.plot_ppc_tstat)."""
    private, idata = privatised_fit
    ppc = pmp.sample_posterior_predictive(idata, private, random_seed=1)
    (name,) = pmp.privatised_statistics(private)
    released = pmp.privatised_statistics(private)[name]
    assert set(ppc.children) == {"posterior_predictive", "observed_data"}
    assert np.allclose(ppc.observed_data[name].values, released)
    replicated = ppc.posterior_predictive[name].values
    assert replicated.shape == (2, 300)  # one released cell: the count of ones
    # The fit explains its own release: the p-value is not extreme ...
    p_value = float((replicated >= released).mean())
    assert 0.05 < p_value < 0.95
    # ... and the replicates carry the noise: Var ≥ 2b² of the Laplace (b = 5), which a
    # replicate of the true count alone (sd ≈ 6.5 + posterior spread) would not show.
    assert replicated.std() > np.sqrt(6.5**2 + 2 * 5.0**2)
    combined = idata.copy()
    combined.update(ppc)
    assert pmp.check_release(combined).releasable
    az.plot_ppc_tstat(combined, t_stat="mean")


def test_replicated_statistics_refusals_say_what_to_change(privatised_fit):
    private, idata = privatised_fit
    with pytest.raises(pmp.UnsupportedModelError, match="original model"):
        pmp.sample_posterior_predictive(idata, private, inputs={"x_obs": np.ones(3)})
    with pytest.raises(pmp.UnsupportedModelError, match="released statistics"):
        pmp.sample_posterior_predictive(idata, private, var_names=["x"])


@pytest.mark.slow
@pytest.mark.parametrize("noise_aware", [True, False])
def test_replicated_group_counts_follow_the_model_that_was_fitted(make_naive_bayes, noise_aware):
    """Class counts are replicated from the latent class sizes of a noise-aware model, and
    from the class node's own law (n·π) in a plug-in model, which has no latent sizes; both
    beside the released counts, with every cell of the feature counts."""
    rng = np.random.default_rng(12)
    labels = rng.integers(0, 2, 300)
    features = (rng.random((300, 3)) < np.where(labels[:, None] == 1, 0.7, 0.3)).astype(int)
    model = make_naive_bayes(labels, features, 0.05)
    private = pmp.privatize(model, 1.0, noise_aware=noise_aware, random_seed=3)
    with private:
        idata = pmp.sample(100, chains=2, cores=1, progressbar=False, random_seed=4)
    ppc = pmp.sample_posterior_predictive(idata, private, random_seed=1)
    released = ppc.observed_data
    assert set(ppc.posterior_predictive.data_vars) == set(released.data_vars)
    assert {"counts(y_obs)", "counts(x_obs | y_obs)"} <= set(released.data_vars)
    for name in released.data_vars:
        replicated = ppc.posterior_predictive[name]
        assert replicated.shape[2:] == released[name].shape
        p_value = (replicated >= released[name]).mean(("chain", "draw")).values
        assert np.all((p_value > 0.01) & (p_value < 0.99)), name


@pytest.fixture(scope="module")
def naive_bayes_fit():
    """Naive Bayes privatised at ε = 1 (noise-aware: latent class sizes), drawn in numpy."""
    from pymc_private.examples.demo import naive_bayes_model

    rng = np.random.default_rng(21)
    labels = rng.integers(0, 2, 300)
    features = (rng.random((300, 3)) < np.where(labels[:, None] == 1, 0.7, 0.3)).astype(int)
    private = pmp.privatize(naive_bayes_model(labels, features, a=0.05), 1.0, random_seed=3)
    with private:
        idata = pmp.sample(
            100,
            chains=2,
            cores=1,
            progressbar=False,
            random_seed=4,
            compute_convergence_checks=False,
        )
    return private, idata


@pytest.mark.slow
def test_arviz_shows_the_users_variables_and_the_latents_are_released_beside(
    naive_bayes_fit, tmp_path
):
    """The latent class shares of the noise-aware likelihood are not in the posterior (nor in
    az.summary), but in the sealed group ``latent_posterior``, which survives to_netcdf and
    feeds the replicated class counts."""
    private, idata = naive_bayes_fit
    share = "counts(y_obs)_true_share"
    assert share in private.named_vars
    assert set(idata.posterior.data_vars) == {"pi", "theta"}
    assert not any(share in str(d) for d in idata.posterior.dims)
    assert not any("true_share" in row for row in az.summary(idata).index)
    assert set(idata.latent_posterior.data_vars) == {share}
    assert np.allclose(idata.latent_posterior[share].sum(share + "_dim_0"), 1.0)
    idata.to_netcdf(tmp_path / "fit.nc")
    loaded = az.from_netcdf(tmp_path / "fit.nc")
    assert pmp.check_release(loaded).releasable
    ppc = pmp.sample_posterior_predictive(loaded, private, random_seed=1)
    assert "counts(y_obs)" in ppc.posterior_predictive
    az.plot_ppc_dist(ppc, var_names=["counts(x_obs | y_obs)"], num_samples=20)
    forged = loaded.copy()
    forged.latent_posterior[share] = forged.latent_posterior[share] * 0.5
    with pytest.raises(pmp.UnsupportedModelError, match="latent_posterior"):
        pmp.sample_posterior_predictive(forged, private)


def test_plot_ppc_checks_every_released_cell_on_its_own_panel(naive_bayes_fit, privatised_fit):
    """One panel per released cell (az.plot_ppc pooled the cells of a statistic and left a
    scalar release empty): the replicated releases' histogram and the released value."""
    private, idata = naive_bayes_fit
    ppc = pmp.sample_posterior_predictive(idata, private, random_seed=1)
    released = ppc.observed_data
    cells = [
        (name, index) for name in released.data_vars for index in np.ndindex(released[name].shape)
    ]
    axes = pmp.plot_ppc(ppc)
    panels = [ax for ax in axes.flat if ax.get_visible()]
    assert len(panels) == len(cells) > 2
    for ax, (name, index) in zip(panels, cells, strict=True):
        assert ax.get_title().startswith(name)
        assert ax.lines[0].get_xdata()[0] == pytest.approx(float(released[name].values[index]))
        assert sum(patch.get_height() for patch in ax.patches) == 2 * 100  # every draw
    private, idata = privatised_fit  # a scalar release: one histogram, one line
    ppc = pmp.sample_posterior_predictive(idata, private, random_seed=1)
    (ax,) = [ax for ax in pmp.plot_ppc(ppc).flat if ax.get_visible()]
    (name,) = ppc.observed_data.data_vars
    assert ax.lines[0].get_xdata()[0] == pytest.approx(float(ppc.observed_data[name]))
    assert len(ax.patches) == 30
    with pytest.raises(pmp.UnsupportedModelError, match="released statistics"):
        pmp.plot_ppc(ppc, var_names=["x"])
    assert len(pmp.plot_ppc(ppc, max_panels=1).flat) == 1
    matplotlib.pyplot.close("all")


def test_posterior_predictive_takes_pymcs_keywords(privatised_fit, regression):
    private, idata = privatised_fit
    extended = idata.copy()
    returned = pmp.sample_posterior_predictive(
        extended, private, progressbar=False, extend_inferencedata=True, random_seed=1
    )
    assert returned is extended and "posterior_predictive" in extended.children
    assert pmp.check_release(extended).releasable
    draws = pmp.sample_posterior_predictive(idata, private, return_inferencedata=False)
    assert {name: value.shape for name, value in draws.items()} == {
        name: (2, 300) for name in pmp.privatised_statistics(private)
    }
    model, fit = regression
    predicted = pmp.sample_posterior_predictive(
        fit, model, inputs={"x_obs": np.zeros((3, 2))}, progressbar=False, compile_kwargs={}
    )
    assert predicted.predictions["y"].shape == (2, 200, 3)
    with pytest.raises(TypeError, match="predictions="):
        pmp.sample_posterior_predictive(fit, model, predictions=False)
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['progress'\\]"):
        pmp.sample_posterior_predictive(fit, model, progress=False)


def test_loo_says_why_it_cannot_run_and_what_to_run_instead(privatised_fit):
    """az.loo fails on a private fit with ArviZ's bare message; pmp.release.loo, its stand-in, says
    why (a per-record log-likelihood is not releasable) and names the free alternative, with
    a typed error that is also ArviZ's TypeError."""
    _, idata = privatised_fit
    with pytest.raises(TypeError, match="log likelihood not found"):
        az.loo(idata)
    with pytest.raises(pmp.errors.NotReleasableError, match="every raw record") as refusal:
        pmp.release.loo(idata, pointwise=True)
    assert isinstance(refusal.value, TypeError)
    assert "pmp.sample_posterior_predictive" in str(refusal.value)
    assert "pmp.plot_ppc" in str(refusal.value)


def test_plain_pymc_calls_on_raw_data_are_named_by_check_release(coin_model):
    """pm.sample on a model with PrivateData runs on the raw records (PyMC has no hook for a
    package to warn then; docs/accounting.md says so beside check_release): every group it
    produces is named where the result would leave."""
    with coin_model:
        idata = pm.sample(
            5,
            tune=0,
            chains=1,
            step=pm.Metropolis(),
            progressbar=False,
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": True},
        )
    found = dict(pmp.check_release(idata).findings)
    assert {"posterior", "sample_stats", "observed_data", "log_likelihood"} <= set(found)
    assert "sample with pmp.sample" in found["posterior"]
    assert "pmp.release.loo" in found["log_likelihood"]


# -- the DataTree PyMC 6 returns ----------------------------------------------------------------


def test_nested_groups_and_data_at_the_root_of_the_tree_are_reported(regression):
    """A DataTree holds data in any node, not only in the groups ArviZ names: a group nested
    in a sealed one and a variable at the root are reported, never passed for sealed."""
    _, idata = regression
    nested = idata.copy()
    nested["posterior/raw"] = xr.Dataset({"y": ("record", np.arange(3.0))})
    found = dict(pmp.check_release(nested).findings)
    assert set(found) == {"posterior/raw"} and "not sealed" in found["posterior/raw"]
    rooted = idata.copy()
    rooted["y"] = xr.DataArray(np.arange(3.0), dims="record")
    assert "outside every group (y" in dict(pmp.check_release(rooted).findings)["/"]


def test_zarr_keeps_the_seal_and_the_ledger(regression, tmp_path):
    pytest.importorskip("zarr")
    _, idata = regression
    idata.to_zarr(tmp_path / "fit.zarr")
    loaded = az.from_zarr(tmp_path / "fit.zarr")
    assert pmp.check_release(loaded).releasable
    assert pmp.ledger_of(loaded).epsilon() == pmp.ledger_of(idata).epsilon()
    assert str(pmp.privacy_report(loaded)) == str(pmp.privacy_report(idata))


def test_arviz_one_summarises_and_plots_a_private_fit(regression):
    """ArviZ 1's summary, trace, posterior (plot_dist, its plot_posterior) and forest plots
    read the sealed DataTree as they read pm.sample's, and change nothing in it."""
    _, idata = regression
    assert set(az.summary(idata).index) == {"w[0]", "w[1]"}
    az.plot_trace(idata)
    az.plot_dist(idata, var_names=["w"])
    az.plot_forest(idata)
    matplotlib.pyplot.close("all")
    assert pmp.check_release(idata).releasable
