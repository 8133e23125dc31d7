"""pmp.sample: route checks, budget refusal before sampling, what is released, the ledger."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
import textwrap
import warnings

import arviz as az
import matplotlib
import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_private.analysis.privatisation import privatisation_of
from pymc_private.compiling import PYMC_ADVICE
from pymc_private.data.declaration import PrivateData
from pymc_private.data.ledgers import PrivacyLedger, ledger_for
from pymc_private.dp.budget import Budget
from pymc_private.dp.events import PureEvent, Release
from pymc_private.errors import (
    BudgetExceededError,
    ConvergenceWarning,
    NUTSFallbackWarning,
    PrivacyError,
    UnsupportedModelError,
)
from pymc_private.examples.demo import naive_bayes_model
from pymc_private.pay_once.privatize import privatize
from pymc_private.priors.distributions import TruncatedBeta, TruncatedNormal
from pymc_private.release.report import plot_privacy, privacy_report
from pymc_private.release.seal import ledger_of
from pymc_private.sampling.posterior import batched_posterior
from pymc_private.sampling.sample import sample
from pymc_private.steps.metropolis import PrivateMetropolis

matplotlib.use("Agg")

A = 0.1
L = np.log((1 - A) / A)
SENTINEL_ROWS = 37  # a distinctive number of ones in the private data


@pytest.fixture(scope="module")
def model() -> pm.Model:
    x = np.zeros(100, dtype=np.int64)
    x[:SENTINEL_ROWS] = 1
    with pm.Model() as m:
        x_obs = PrivateData("x_obs", x, bounds=(0, 1))
        theta = TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A)
        pm.Bernoulli("x", theta, observed=x_obs)
    return m


@pytest.fixture(scope="module")
def released(model):
    with model:
        step = PrivateMetropolis([model["theta"]], temperature=10.0)
        idata = sample(
            30,
            step=step,
            tune=10,
            chains=2,
            cores=1,
            progressbar=False,
        )
    return idata, ledger_for(model)


def test_raw_route_needs_private_steps(model):
    with model:
        with pytest.raises(UnsupportedModelError, match="choose a route"):
            sample(10, chains=1, progressbar=False)
        with pytest.raises(UnsupportedModelError, match="not a private step"):
            sample(10, step=pm.Metropolis([model["theta"]]), chains=1, progressbar=False)


def test_budget_refusal_samples_nothing_and_says_what_fits(model):
    ledger = ledger_for(model)
    with model:
        step = PrivateMetropolis([model["theta"]], temperature=10.0)
        with pytest.raises(BudgetExceededError) as refusal:
            sample(
                100,
                step=step,
                tune=0,
                chains=2,
                budget=Budget(1.0),
                progressbar=False,
            )
    assert len(ledger) == 0
    per_draw = 2 * L / 10.0
    affordable = int(1.0 // (2 * per_draw))
    assert affordable == 1
    assert "at most 1 draw per chain" in str(refusal.value)
    temperature = 10.0 * 200 * per_draw / 1.0
    assert f"temperature ≥ {temperature:.4g}" in str(refusal.value)
    factor = 200 * step.privacy_epsilon_per_draw / 1.0
    assert step.temperature_for(factor) == pytest.approx(temperature, rel=1e-8)
    cooler = PrivateMetropolis(
        [model["theta"]], temperature=step.temperature_for(factor), model=model
    )
    assert 200 * cooler.privacy_epsilon_per_draw == pytest.approx(1.0, rel=1e-8)


def test_ledger_charges_every_iteration_of_every_chain(released):
    idata, ledger = released
    # 2L/T plus the step's float allowance (pymc_private.steps.metropolis), ~1e-9 relative.
    per_draw = ledger.releases[0].epsilon
    assert per_draw == pytest.approx(2 * L / 10.0, rel=1e-8)
    np.testing.assert_allclose(idata.sample_stats["privacy_epsilon"].values, per_draw)
    assert [r.count for r in ledger.releases] == [40, 40]
    assert [r.chain for r in ledger.releases] == [0, 1]
    assert ledger.epsilon() == pytest.approx(80 * per_draw, rel=1e-12)


def test_nothing_derived_from_raw_data_is_released(released, tmp_path):
    idata, _ = released
    assert set(idata.children) == {"posterior", "sample_stats"}
    assert set(idata.posterior.data_vars) == {"theta"}
    for group in ("posterior", "sample_stats"):
        assert "sampling_time" not in idata[group].attrs
    assert "sampling_time" not in idata.attrs
    assert set(idata.sample_stats.data_vars) <= {"privacy_epsilon", "accepted"}
    path = tmp_path / "released.nc"
    idata.to_netcdf(path)
    back = az.from_netcdf(path)
    assert ledger_of(back).to_dict() == ledger_of(idata).to_dict()
    assert "lp" not in back.sample_stats
    az.summary(back)


def test_report_and_plot(released, capsys):
    idata, ledger = released
    report = privacy_report(idata, delta=1e-6)
    assert capsys.readouterr().out == ""  # shown once, by Jupyter or print, never by itself
    text = str(report)
    assert "barker" in text.lower() or "metropolis" in text.lower()
    assert report.description in text and report.description in report._repr_html_()
    table = report.table
    totals = table[table["kind"] == "total"]
    assert totals["subtotal"].iloc[0] == pytest.approx(ledger.epsilon())
    assert totals["subtotal"].iloc[-1] <= ledger.epsilon()
    ax = plot_privacy(idata, delta=1e-6)
    final = [line.get_ydata()[-1] for line in ax.get_lines()]
    assert max(final) == pytest.approx(ledger.epsilon())
    assert min(final) == pytest.approx(ledger.epsilon() / 2)


def test_idata_without_ledger_is_refused():
    idata = az.from_dict({"posterior": {"a": np.zeros((1, 3))}})
    with pytest.raises(UnsupportedModelError, match="no privacy ledger"):
        ledger_of(idata)


@pytest.mark.slow
def test_a_draw_costs_the_whole_sweep_of_several_steps(make_naive_bayes):
    rng = np.random.default_rng(0)
    nb = make_naive_bayes(rng.integers(0, 2, 40), rng.integers(0, 2, (40, 3)), A)
    ledger = ledger_for(nb)
    with nb:
        steps = [
            PrivateMetropolis([nb["pi"]], temperature=5.0),
            PrivateMetropolis([nb["theta"]], temperature=5.0),
        ]
        idata = sample(5, step=steps, chains=1, cores=1, progressbar=False)
    sweep = 2 * L / 5.0 + 2 * 3 * L / 5.0  # pi: one node; theta: d = 3 feature elements
    np.testing.assert_allclose(idata.sample_stats["privacy_epsilon"].values, sweep)
    assert ledger.epsilon() == pytest.approx(5 * sweep)


def test_calls_on_one_model_compose_in_its_ledger(model):
    """Every call records in the data set's ledger, so a budget sees earlier calls: the
    second run, which alone would fit, is refused."""
    per_draw = 2 * L / 10.0
    ledger = ledger_for(model)
    spent_before = ledger.epsilon()
    budget = Budget(spent_before + 1.5 * 10 * per_draw)
    with model:
        step = PrivateMetropolis([model["theta"]], temperature=10.0)
        sample(10, step=step, chains=1, cores=1, budget=budget, progressbar=False)
        assert ledger.epsilon() == pytest.approx(spent_before + 10 * per_draw)
        with pytest.raises(BudgetExceededError):
            sample(10, step=step, chains=1, cores=1, budget=budget, progressbar=False)
    assert ledger.epsilon() == pytest.approx(spent_before + 10 * per_draw)


def test_plot_follows_chains_across_calls():
    ledger = PrivacyLedger(
        [
            Release("laplace", PureEvent(0.5)),
            Release("barker_metropolis", PureEvent(0.1), count=20, chain=0),
            Release("barker_metropolis", PureEvent(0.1), count=20, chain=1),
            Release("barker_metropolis", PureEvent(0.2), count=10, chain=0),
        ]
    )
    ax = plot_privacy(ledger)
    final = {line.get_label(): line.get_ydata()[-1] for line in ax.get_lines()}
    assert final["chain 0"] == pytest.approx(0.5 + 2.0 + 2.0)
    assert final["chain 1"] == pytest.approx(0.5 + 2.0)
    assert final["plain sum of ε"] == pytest.approx(ledger.epsilon())
    assert len(ax.get_lines()[0].get_xdata()) == 31


def test_a_run_that_fails_part_way_is_still_charged(model, monkeypatch):
    """The spend is recorded before the data is touched: an error mid-sampling (itself an
    outcome of the data) cannot leave the ledger undercounted."""

    def fails(*args, **kwargs):
        raise RuntimeError("sampling failed")

    monkeypatch.setattr(pm, "sample", fails)
    ledger = ledger_for(model)
    with model:
        step = PrivateMetropolis([model["theta"]], temperature=10.0)
        with pytest.raises(RuntimeError, match="sampling failed"):
            sample(10, step=step, chains=2, cores=1, progressbar=False)
    assert ledger.epsilon() == pytest.approx(20 * 2 * L / 10.0)


@pytest.mark.parametrize("keyword", ["trace", "return_inferencedata"])
def test_keywords_that_would_bypass_the_release_are_refused(model, keyword):
    ledger = ledger_for(model)
    with model:
        with pytest.raises(UnsupportedModelError, match=f"does not take {keyword}="):
            sample(10, step=[], chains=1, **{keyword: None})
    assert len(ledger) == 0


BAD_ARGUMENTS = [
    {"draws": 2.5},
    {"draws": -5},
    {"tune": 1.5},
    {"draws": 0, "tune": 0},
    {"chains": 0},
    {"cores": 0},
    {"random_seed": "abc"},
    {"random_seed": -1},
    {"random_seed": [1, 2, 3]},
    {"budget": 5.0},
    {"drawz": 3},
    {"var_names": ["nope"]},
    {"callback": 3},
    {"mp_ctx": "bogus"},
]


@pytest.mark.slow
@pytest.mark.parametrize("bad", BAD_ARGUMENTS, ids=lambda bad: "-".join(map(str, bad)))
def test_bad_arguments_are_refused_before_anything_is_charged(model, bad):
    ledger = ledger_for(model)
    arguments = {"draws": 3, "chains": 2, "cores": 1, "progressbar": False}
    with model:
        step = PrivateMetropolis([model["theta"]], temperature=10.0)
        with pytest.raises((PrivacyError, TypeError, ValueError)):
            sample(step=step, **{**arguments, **bad})
    assert len(ledger) == 0


def test_a_step_of_another_model_is_refused(model):
    with pm.Model():
        x_obs = PrivateData("x_obs", np.zeros(10, dtype=np.int64), bounds=(0, 1))
        theta = TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A)
        pm.Bernoulli("x", theta, observed=x_obs)
        foreign = PrivateMetropolis([theta], temperature=10.0)
    ledger = ledger_for(model)
    with model:
        with pytest.raises(UnsupportedModelError, match="not variables of this model"):
            sample(3, step=foreign, chains=1, progressbar=False)
    assert len(ledger) == 0


def test_plot_of_a_pay_once_fit_shows_one_step_and_free_draws(tmp_path):
    ledger = PrivacyLedger([Release("discrete_laplace", PureEvent(0.3), statistic="counts(y)")])
    ax = plot_privacy(ledger)
    (total,) = [line for line in ax.get_lines() if line.get_label() == "total"]
    assert list(total.get_ydata()) == [0.0, 0.3, 0.3]
    assert ax.get_ylim()[1] > 0.3  # not an axis from −0.04 to 0.04 around one point
    assert "each draw: ε = 0" in " ".join(text.get_text() for text in ax.texts)
    ax.figure.savefig(tmp_path / "spent.png")
    renderer = ax.figure.canvas.get_renderer()
    label = ax.xaxis.label.get_window_extent(renderer)
    assert label.y0 >= 0 and label.x1 <= ax.figure.bbox.width  # not cut off when saved


def test_chains_that_spend_alike_stay_visible():
    ledger = PrivacyLedger(
        [Release("barker_metropolis", PureEvent(0.1), count=20, chain=c) for c in range(3)]
    )
    ax = plot_privacy(ledger)
    chains = [line for line in ax.get_lines() if line.get_label().startswith("chain")]
    assert len({line.get_linestyle() for line in chains}) == 3
    widths = [line.get_linewidth() for line in chains]
    assert widths == sorted(widths, reverse=True)  # the later, thinner ones drawn on top


def test_a_short_private_chain_is_explained_once_in_place_of_pymcs_warnings(model, caplog):
    """PyMC logged an R-hat and an ESS warning on almost every per-draw run; pmp.sample says
    once, from the released draws, what a short private chain means (and nothing when asked
    not to check, as pm.sample's ``compute_convergence_checks=False``)."""
    with model:
        step = PrivateMetropolis([model["theta"]], temperature=10.0)
        with caplog.at_level("INFO", logger="pymc"), pytest.warns(ConvergenceWarning) as seen:
            sample(20, step=step, chains=2, cores=1, progressbar=False)
        assert len(seen) == 1
        assert "costs ε" in str(seen[0].message) and "temperature" in str(seen[0].message)
        assert "(`theta`)" in str(seen[0].message)  # the variable that has not mixed
        assert not [r for r in caplog.records if "effective sample size" in r.getMessage()]
        assert not [r for r in caplog.records if "rhat" in r.getMessage().lower()]
        # PyMC's "Only 20 samples per chain" too: the advice above replaces it, once.
        assert not [r for r in caplog.records if "samples per chain" in r.getMessage()]
        assert all(not logging.getLogger(name).filters for name in PYMC_ADVICE)  # removed
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            sample(
                20,
                step=step,
                chains=2,
                cores=1,
                progressbar=False,
                compute_convergence_checks=False,
            )


def test_no_ipywidgets_warning_in_jupyter_and_the_users_filters_stay(model, monkeypatch):
    """In Jupyter without ipywidgets, rich warned 'install "ipywidgets"' on every refresh of
    PyMC's progress bar; pmp.sample holds that warning back while it samples, and leaves the
    user's filters (here "always") as they were."""
    import rich.console

    monkeypatch.setattr(rich.console, "_is_jupyter", lambda: True)
    with model, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        filters = list(warnings.filters)
        step = PrivateMetropolis([model["theta"]], temperature=10.0)
        sample(5, step=step, chains=1, cores=1, compute_convergence_checks=False)
        assert warnings.filters == filters
    assert not [w for w in seen if "ipywidgets" in str(w.message)]


@pytest.mark.slow
def test_import_is_light_and_pytensor_blas_warning_is_silenced_while_the_package_compiles():
    """`import pymc_private` adds no heavy module to PyMC's own (OpenDP's sklearn extras,
    dp-accounting's were 0.5 s). PyTensor's BLAS warning, a matter of speed, is silenced while
    the package compiles (here the process's first compile of a matrix product, a regression's
    PrivateMetropolis step inside `pmp.sample`), under an "always" filter of the user's; the
    user's filters are all there after, with none for BLAS; PyTensor's BLAS logger says
    nothing at WARNING or above. PyTensor probes for BLAS when it compiles with its C
    backend (its default backend, Numba, does not): the process compiles with it."""
    code = textwrap.dedent(
        """
        import json, logging, sys, warnings
        warnings.simplefilter("always")
        import numpy as np, pymc as pm, pytensor
        heard = []
        class Heard(logging.Handler):
            def emit(self, record):
                heard.append(record.getMessage())
        logging.getLogger("pytensor.tensor.blas").addHandler(Heard(logging.WARNING))
        filters = list(warnings.filters)
        import pymc_private as pmp
        light = sorted(m for m in ("sklearn", "opendp.prelude") if m in sys.modules)
        probe = pytensor.config._config_var_dict["blas__ldflags"]
        assert not hasattr(probe, "val")  # PyTensor has not probed for BLAS yet
        rng = np.random.default_rng(0)
        with pm.Model():
            X = pmp.PrivateData("X", rng.uniform(-1, 1, (20, 3)), bounds=(-1, 1))
            y = pmp.PrivateData("y", rng.uniform(-1, 1, 20), bounds=(-1, 1))
            w = pmp.TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=2.0)
            pm.Normal("obs", X @ w, 0.5, observed=y)
            pmp.sample(2, tune=0, chains=1, step=pmp.PrivateMetropolis(temperature=1e3),
                       progressbar=False, compute_convergence_checks=False)
        kept = all(f in warnings.filters for f in filters)  # (imports may add their own)
        blas = [repr(f) for f in warnings.filters if "BLAS" in repr(f)]
        print(json.dumps([light, hasattr(probe, "val"), kept, blas, heard]))
        """
    )
    env = {**os.environ, "PYTENSOR_FLAGS": "mode=CVM"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "BLAS" not in out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[], True, True, [], []]


# The batched route: a plug-in privatised model whose posterior is a product of conjugate
# blocks gets independent exact draws, all chains and draws of a block in one call.


@pytest.fixture(scope="module")
def plug_in() -> pm.Model:
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, 300)
    features = (rng.random((300, 3)) < np.where(labels[:, None] == 1, 0.7, 0.3)).astype(int)
    model = naive_bayes_model(labels, features, a=0.05)
    return privatize(model, 1.0, noise_aware=False, secure=False, random_seed=2)


@pytest.mark.slow
def test_plug_in_conjugate_models_get_independent_exact_draws(plug_in, tmp_path):
    spent = ledger_for(plug_in).epsilon()
    idata = sample(3000, chains=3, model=plug_in, random_seed=5, progressbar=False)
    assert dict(idata.posterior.sizes) == {"chain": 3, "draw": 3000, "cls": 2, "feature": 3}
    assert idata.attrs["sampler"].startswith("independent exact draws")
    assert (idata.sample_stats["privacy_epsilon"] == 0.0).all()
    assert ledger_for(plug_in).epsilon() == spent
    (ones,) = np.asarray(idata.constant_data["counts(y_obs)"])
    # pi given the released count is Beta(1 + ones, 1 + n − ones) on [0.05, 0.95]
    law = stats.beta(1 + ones, 301 - ones)
    low, high = law.cdf([0.05, 0.95])
    pi = idata.posterior["pi"].values
    assert stats.kstest(pi.ravel(), lambda x: (law.cdf(x) - low) / (high - low)).pvalue > 1e-3
    # independent draws: no autocorrelation within a chain
    lag = [np.corrcoef(chain[:-1], chain[1:])[0, 1] for chain in pi]
    assert np.max(np.abs(lag)) < 0.06
    again = sample(3000, chains=3, model=plug_in, random_seed=5, progressbar=False)
    np.testing.assert_array_equal(again.posterior["theta"], idata.posterior["theta"])
    assert az.summary(idata)["r_hat"].max() < 1.01
    az.plot_trace(idata, var_names=["pi"])
    idata.to_netcdf(tmp_path / "draws.nc")
    assert ledger_of(az.from_netcdf(tmp_path / "draws.nc")).epsilon() == spent


def test_models_that_are_not_products_of_blocks_go_to_pm_sample(plug_in):
    privatisation = privatisation_of(plug_in)
    assert batched_posterior(plug_in, privatisation, 2, 5, 0)["pi"].shape == (2, 5)
    noise_aware = dataclasses.replace(privatisation, noise_aware=True)
    assert batched_posterior(plug_in, noise_aware, 2, 5, 0) is None
    extended = plug_in.copy()
    with extended:
        pm.Potential("nudge", 0.1 * extended["pi"])
    assert batched_posterior(extended, privatisation, 2, 5, 0) is None


# External NUTS samplers (nutpie, numpyro, blackjax) sample a model that reads released values
# only, for free; on raw data they are refused before anything runs.


@pytest.fixture(scope="module")
def shrunk() -> tuple[pm.Model, pm.Model]:
    """A Beta–Bernoulli and its noise-aware privatised model with a Potential of the user's:
    the numpy sampler declines it, NUTS samples it."""
    x = np.random.default_rng(17).binomial(1, 0.3, 50)
    with pm.Model() as raw:
        x_obs = PrivateData("x_obs", x, bounds=(0, 1))
        theta = TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A)
        pm.Bernoulli("x", theta, observed=x_obs)
    private = privatize(raw, 1.0, secure=False, random_seed=18)
    with private:
        pm.Potential("shrink", -((private["theta"] - 0.5) ** 2))
    return raw, private


@pytest.mark.slow
def test_nutpie_is_the_default_nuts_where_only_released_values_are_sampled(shrunk, tmp_path):
    pytest.importorskip("nutpie")
    _, private = shrunk
    spent = ledger_for(private).epsilon()
    kwargs = {"tune": 300, "chains": 2, "cores": 1, "random_seed": 3, "progressbar": False}
    with pytest.warns(NUTSFallbackWarning):
        idata = sample(300, model=private, **kwargs)
    assert idata.attrs["sampler"] == "pm.sample: nutpie's NUTS"
    assert set(idata.children) == {"posterior", "sample_stats", "constant_data"}
    assert np.all(idata.sample_stats["privacy_epsilon"].values == 0.0)
    assert "logp" in idata.sample_stats  # of the privatised model: released values only
    assert ledger_for(private).epsilon() == spent  # post-processing: free
    asked = sample(300, model=private, nuts_sampler="nutpie", **kwargs)
    np.testing.assert_array_equal(asked.posterior["theta"], idata.posterior["theta"])
    assert az.summary(idata)["r_hat"].max() < 1.02
    idata.to_netcdf(tmp_path / "nutpie.nc")
    assert ledger_of(az.from_netcdf(tmp_path / "nutpie.nc")).epsilon() == spent
    from pymc_private.release.seal import check_release

    assert check_release(az.from_netcdf(tmp_path / "nutpie.nc"))


@pytest.mark.slow
def test_numpyro_samples_a_privatised_model_too(shrunk):
    pytest.importorskip("numpyro")
    _, private = shrunk
    idata = sample(
        100, tune=100, chains=1, model=private, nuts_sampler="numpyro", progressbar=False
    )
    assert idata.attrs["sampler"] == "pm.sample: numpyro's NUTS"
    assert np.all(idata.sample_stats["privacy_epsilon"].values == 0.0)
    assert not {"observed_data", "log_likelihood"} & set(idata.children)


@pytest.mark.parametrize("nuts_sampler", ["nutpie", "numpyro", "blackjax"])
def test_external_samplers_are_refused_on_raw_data_before_anything_runs(shrunk, nuts_sampler):
    """On raw data, or a privatised model extended with raw data, an external sampler would
    compile the records into the log-density it samples: refused with the reason, before any
    step is built or anything charged."""
    raw, private = shrunk
    extended = private.copy()
    with extended:
        y = PrivateData("y", np.ones(30, dtype=np.int64), bounds=(0, 1))
        pm.Bernoulli("y_obs", extended["theta"], observed=y)
    for model in (raw, extended):
        ledger = ledger_for(model)
        before = len(ledger)
        with pytest.raises(UnsupportedModelError, match=r"reads raw private data.*privatise"):
            sample(10, model=model, nuts_sampler=nuts_sampler, progressbar=False)
        assert len(ledger) == before


def test_external_sampler_refusals_name_the_change(shrunk):
    _, private = shrunk
    with pytest.raises(UnsupportedModelError, match="must be one of"):
        sample(10, model=private, nuts_sampler="stan")
    with private, pytest.raises(UnsupportedModelError, match="drop step="):
        sample(10, model=private, nuts_sampler="nutpie", step=pm.NUTS())


def test_a_latent_that_has_not_mixed_is_named_in_the_users_words():
    from pymc_private.sampling.sample import _shown

    assert _shown("counts(y_obs)_true_share") == (
        "the true share of each group of `y_obs`, a latent of the privatised likelihood"
    )
    assert _shown("theta") == "`theta`"
    assert _shown("counts_true_share") == "`counts_true_share`"


def test_per_draw_advice_suggests_paying_once_only_where_the_model_can():
    from pymc_private.sampling.sample import _pays_once

    with pm.Model() as expression:
        y_obs = PrivateData("y_obs", np.zeros(4), bounds=(-1, 1))
        mu = TruncatedNormal("mu", 0, 2, lower=-3, upper=3)
        pm.Normal("y", mu * mu, 1.0, observed=y_obs)
    with pm.Model() as plain:
        y_obs = PrivateData("y_obs", np.zeros(4), bounds=(-1, 1))
        mu = TruncatedNormal("mu", 0, 2, lower=-3, upper=3)
        pm.Normal("y", mu, 1.0, observed=y_obs)
    assert not _pays_once(expression) and _pays_once(plain) and not _pays_once(None)
