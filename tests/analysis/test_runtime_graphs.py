"""The graph that runs is the graph that is checked (the attacker's review of issue 35).

PyMC builds a variable's log-density and its initial point from Python functions a
distribution carries (a `pm.CustomDist`'s ``logp``, ``logcdf``, ``support_point``) after the
model is declared, and runs others outside any graph (``random``, ``as_op``). Each scenario
below passed the checks of the declared graph and released far more than the ledger recorded
(one step of the batch-summed logp: ε ≥ 5.1 against 0.02 charged); each is now refused before
any noise is drawn, with the ledger unchanged, and what is accepted is separated record by
record on the graph the step compiles (checked numerically on generated log-densities).
"""

from __future__ import annotations

import collections
import math
import types
import weakref

import numpy as np
import pymc as pm
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymc.distributions.transforms import Chain, Interval
from pymc.logprob.transforms import Transform
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.ops import wrap_py
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import Elemwise

import pymc_private as pmp
from pymc_private.analysis.leak_guard import reads_private_data, runtime_graphs
from pymc_private.analysis.record_likelihood import private_data_vars, record_log_likelihood
from pymc_private.data.ledgers import ledger_for
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.dp.barker import barker_epsilon
from pymc_private.errors import DataBoundsError, UnsupportedModelError

A = 0.05
X = np.random.default_rng(35).uniform(-1, 1, 12)


def _normal_logp(value, mu):
    return -((value - mu) ** 2) / 2


def observed_custom(logp, *, values=X, extra=None) -> pm.Model:
    """Records on [−1, 1], a truncated mean and an observed `pm.CustomDist` with ``logp``."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", values, bounds=(-1, 1))
        z_obs = pmp.PrivateData("z_obs", values[::-1].copy(), bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.CustomDist("y", mu, logp=lambda value, mu: logp(value, mu, z_obs), observed=x_obs)
        if extra is not None:
            extra(x_obs)
    return model


@wrap_py(itypes=[pt.dvector], otypes=[pt.dvector])
def _python_square(values):
    return np.asarray(values**2)


MIXING_LOGPS = {
    # The attacker's three: a reduction over the records, another PrivateData, a shift.
    "sum over the batch": lambda v, mu, z: _normal_logp(v, mu) + 0.0 * pt.sum(v),
    "another PrivateData, reduced": lambda v, mu, z: _normal_logp(v, mu * z.mean()),
    "roll": lambda v, mu, z: _normal_logp(pt.roll(v, 1), mu),
    # The control-variate recipe's residual, centred over the batch (docs/costs.md).
    "batch-centred residual": lambda v, mu, z: -pt.softplus(v * mu - pt.mean(v * mu)),
    "cumulative sum": lambda v, mu, z: _normal_logp(pt.cumsum(v), mu),
    "sort": lambda v, mu, z: _normal_logp(pt.sort(v), mu),
    "reversed": lambda v, mu, z: _normal_logp(v[::-1], mu),
    "first record broadcast": lambda v, mu, z: _normal_logp(v[0] + 0.0 * v, mu),
    "max": lambda v, mu, z: _normal_logp(v, mu) - pt.max(v),
    "record matrix": lambda v, mu, z: _normal_logp(pt.dot(np.ones((12, 12)) / 12, v), mu),
    "wrap_py": lambda v, mu, z: -_python_square(v - mu),
    "repeated records": lambda v, mu, z: _normal_logp(pt.repeat(v, 2)[:12], mu),
}


@pytest.mark.slow
@pytest.mark.parametrize("logp", MIXING_LOGPS.values(), ids=MIXING_LOGPS.keys())
@pytest.mark.parametrize(
    "step_kwargs",
    [{"clip": 0.01}, {"clip": 0.01, "sampling_rate": 0.5, "noise_scale": 1.0}],
    ids=["clipped", "subsampled"],
)
def test_an_observed_custom_logp_that_mixes_records_is_refused(logp, step_kwargs):
    model = observed_custom(logp)
    with pytest.raises(UnsupportedModelError, match=r"log-density of `y`.*row i from row i"):
        pmp.PrivateMetropolis(model=model, secure=False, **step_kwargs)
    # Nor does the analysis offer the clipped route for it.
    with pytest.raises(UnsupportedModelError) as refusal:
        pmp.analyze(model)
    assert "PrivateMetropolis(clip=c) samples this model" not in str(refusal.value)
    assert not ledger_for(model).releases


def test_an_elementwise_custom_logp_reading_its_own_rows_is_accepted():
    """The control-variate form: the value and a second PrivateData read row by row, and a
    public proxy in a Potential; charged 2c/T + 2⁻⁴³ per step."""
    model = observed_custom(lambda v, mu, z: -pt.softplus(v * mu) + 0.3 * z * mu)
    with model:
        pm.Potential("proxy", -0.5 * model["mu"] ** 2)
        step = pmp.PrivateMetropolis(clip=0.01, secure=False)
    assert step.privacy_epsilon_per_draw == barker_epsilon(0.01, 1.0)


@pytest.mark.parametrize(("centred", "refused"), [(False, False), (True, True)])
def test_a_mixture_of_custom_components_is_read_on_its_log_density(centred, refused):
    """PyMC's mixture log-density calls its components' logp: a component written by the user
    makes the whole node the user's, proved on its graph."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        shift = (lambda v: pt.mean(v)) if centred else (lambda v: 0.0)
        components = [
            pm.CustomDist.dist(mu, logp=lambda v, mu: _normal_logp(v - shift(v), mu)),
            pm.Normal.dist(0.0, 1.0),
        ]
        pm.Mixture("y", w=[0.5, 0.5], comp_dists=components, observed=x_obs)
    if refused:
        with pytest.raises(UnsupportedModelError, match=r"log-density of `y`.*row i from row i"):
            pmp.PrivateMetropolis(model=model, clip=0.01, secure=False)
    else:
        step = pmp.PrivateMetropolis(model=model, clip=0.01, secure=False)
        assert step.privacy_epsilon_per_draw == barker_epsilon(0.01, 1.0)


def test_reading_private_data_of_another_model_in_a_custom_logp_is_refused():
    with pm.Model():
        other = pmp.PrivateData("w_obs", X, bounds=(-1, 1))
    model = observed_custom(lambda v, mu, z: _normal_logp(v, mu + other))
    with pytest.raises(UnsupportedModelError, match="PrivateData `w_obs` of another model"):
        pmp.PrivateMetropolis(model=model, clip=0.01, secure=False)


# -- free variables whose log-density, initial point or random function reads the data --------


def _hyperprior_reading_a_record(x_obs):
    pm.CustomDist("h", logp=lambda value: -100.0 * (value - x_obs[0]) ** 2)


def _start_at_a_record(x_obs):
    pm.CustomDist("h", logp=lambda value: -(value**2) / 2, support_point=lambda rv, size: x_obs[0])


def _random_reading_the_data(x_obs):
    pm.CustomDist(
        "h",
        0.0,
        logp=lambda value, loc: -((value - loc) ** 2) / 2,
        random=lambda loc, rng=None, size=None: rng.normal(loc + x_obs.get_value()[0], size=size),
    )


def _wrap_py_reading_the_data(x_obs):
    @wrap_py(itypes=[pt.dscalar], otypes=[pt.dscalar])
    def shifted(value):
        return np.asarray(value - x_obs.get_value()[0])

    pm.CustomDist("h", logp=lambda value: -(shifted(value) ** 2))


def _truncated_custom_base(x_obs):
    base = pm.CustomDist.dist(
        0.0,
        logp=lambda value, loc: -100.0 * (value - x_obs[0]) ** 2,
        logcdf=lambda value, loc, **kwargs: pt.log(pt.sigmoid(value - x_obs[0])),
    )
    pm.Truncated("h", base, lower=-3, upper=3)


FREE_DOORS = {
    "logp closure": (_hyperprior_reading_a_record, "log-density of `h` depends on PrivateData"),
    "pm.Truncated base": (_truncated_custom_base, "log-density of `h` depends on PrivateData"),
    "support_point": (_start_at_a_record, "initial point of `h` depends on PrivateData"),
    "random closure": (_random_reading_the_data, "random function of `h` refers to PrivateData"),
    "wrap_py closure": (_wrap_py_reading_the_data, r"Python function .* refers to PrivateData"),
}


def _normal_model(extra) -> pm.Model:
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.Normal("y", mu, 1.0, observed=x_obs)
        extra(x_obs)
    return model


@pytest.mark.parametrize(("extra", "match"), FREE_DOORS.values(), ids=FREE_DOORS.keys())
def test_a_free_variable_whose_python_functions_read_private_data_is_refused_everywhere(
    extra, match
):
    model = _normal_model(extra)
    ledger = ledger_for(model)
    with pytest.raises(UnsupportedModelError, match=match):
        pmp.analyze(model)
    with pytest.raises(UnsupportedModelError, match=match):
        pmp.privatize(model, epsilon=1.0, secure=False, random_seed=1)
    with pytest.raises(UnsupportedModelError, match=match):
        pmp.PrivateMetropolis([model["h"]], model=model, secure=False)
    with pytest.raises(UnsupportedModelError, match=match):
        pmp.PrivateMetropolis(model=model, clip=0.1, secure=False)
    with model, pytest.raises(UnsupportedModelError, match=match):
        pmp.sample(5, step=pmp.PrivateMetropolis([model["mu"]], clip=0.1), chains=1)
    assert not ledger.releases
    assert reads_private_data(model)


def test_predictions_and_synthetic_records_refuse_a_random_function_reading_the_data():
    """Both run the observed nodes' random functions; a pm.CustomDist's Python random that
    reads the raw data would put it in the predictions."""

    def random(mu, rng=None, size=None):
        return rng.normal(mu + x_obs.get_value().mean(), size=size)

    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.CustomDist("y", mu, logp=_normal_logp, random=random, observed=x_obs)
    # A private fit of the same parameter, from the model as it would be without the function.
    private = pmp.privatize(_normal_model(lambda x_obs: None), epsilon=1.0, secure=False)
    idata = pmp.sample(20, tune=20, chains=1, model=private, random_seed=1, progressbar=False)
    with pytest.raises(UnsupportedModelError, match="random function of `y` refers to Priv"):
        pmp.sample_posterior_predictive(idata, model)
    with pytest.raises(UnsupportedModelError, match="random function of `y` refers to Priv"):
        pmp.synthesize(idata, model, m=1)


def _hyperprior(random, support_point=None):
    """A free `pm.CustomDist` ``h`` with a Python ``random`` (and ``support_point``)."""

    def extra(x_obs):
        pm.CustomDist(
            "h",
            0.0,
            logp=lambda value, loc: -((value - loc) ** 2) / 2,
            support_point=support_point,
            random=random,
        )

    return extra


def test_the_same_functions_reading_no_private_data_are_accepted():
    model = _normal_model(
        _hyperprior(
            lambda loc, rng=None, size=None: rng.normal(loc, size=size),
            lambda rv, size, loc: loc,
        )
    )
    step = pmp.PrivateMetropolis([model["h"]], model=model, secure=False)
    assert step.privacy_epsilon_per_draw == 0.0  # a block no likelihood depends on
    # Built for what the user wrote only: PyMC's Normal and the package's prior are read on
    # their declared inputs.
    assert set(runtime_graphs(model).initial_points) == {model["h"]}
    assert model["mu"] in model.free_RVs


def test_a_privatised_model_extended_with_a_closure_over_raw_data_is_not_sampled_free():
    """The attacker's NUTS draws gave mean(x_obs) to 4·10⁻⁴ against noise sd 0.028 in the
    release: the extension reads raw data, so the route is per draw, which refuses it."""
    labels = (X > 0).astype(int)
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A)
        pm.Bernoulli("y", theta, observed=y_obs)
    private = pmp.privatize(model, epsilon=1.0, secure=False, random_seed=1)
    spent = ledger_for(model).epsilon()
    assert not reads_private_data(private)
    with private:
        pm.CustomDist("h", logp=lambda value: -1e4 * (value - pt.mean(y_obs)) ** 2)
    assert reads_private_data(private)
    with private, pytest.raises(UnsupportedModelError, match="PrivateData `y_obs` of another"):
        pmp.sample(20, chains=1, progressbar=False)
    assert ledger_for(model).epsilon() == spent


def test_a_closure_prior_in_a_charged_block_is_refused():
    """It entered the block's Λ unclipped (|ΔΛ| = 2.0 against 0.002 charged)."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pm.CustomDist("mu", logp=lambda value: -((value - x_obs[3]) ** 2))
        pm.Normal("y", mu, 1.0, observed=x_obs)
    with pytest.raises(UnsupportedModelError, match="log-density of `mu` depends on PrivateData"):
        pmp.PrivateMetropolis(model=model, clip=0.001, secure=False)


# -- what is accepted is separated on the compiled graph: a property test ---------------------

ELEMENTWISE = {
    "shift": lambda u, mu: u - mu,
    "scale": lambda u, mu: u * mu,
    "softplus": lambda u, mu: pt.softplus(u),
    "square": lambda u, mu: u**2,
    "tanh": lambda u, mu: pt.tanh(u + mu),
    "switch": lambda u, mu: pt.switch(u > 0, u, -u * mu),
    "second column": lambda u, mu: u + u * mu,
    "public weights": lambda u, mu: u * np.linspace(0.5, 1.5, 12),
    "pm.logp": lambda u, mu: pm.logp(pm.Normal.dist(mu, 2.0), u),
}
MIXING = {
    "sum": lambda u, mu: u + pt.sum(u),
    "mean": lambda u, mu: u - pt.mean(u),
    "roll": lambda u, mu: pt.roll(u, 2),
    "cumsum": lambda u, mu: pt.cumsum(u),
    "sort": lambda u, mu: pt.sort(u),
    "reverse": lambda u, mu: u[::-1],
    "first record": lambda u, mu: u * 0.0 + u[0],
    "max": lambda u, mu: u - pt.max(u),
    "matrix": lambda u, mu: pt.dot(np.tril(np.ones((12, 12))), u),
    "softmax over records": lambda u, mu: pt.special.softmax(u, axis=0),
    "private index": lambda u, mu: u[pt.cast(pt.abs(u) * 11, "int64")],
}
FAST = pytensor.compile.mode.Mode(linker="py", optimizer="fast_compile")


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    operations=st.lists(
        st.sampled_from(sorted(ELEMENTWISE) + sorted(MIXING)), min_size=1, max_size=4
    ),
    changed=st.integers(0, 11),
)
def test_generated_logps_are_accepted_only_when_each_record_moves_its_own_term(operations, changed):
    def logp(value, mu, z):
        u = value
        for name in operations:
            u = {**ELEMENTWISE, **MIXING}[name](u, mu)
        return u + 0.1 * z

    model = observed_custom(logp)
    private = private_data_vars(model)
    mixes = any(name in MIXING for name in operations)
    if mixes:
        with pytest.raises(UnsupportedModelError, match="row i from row i"):
            record_log_likelihood(model, model.observed_RVs, private)
        return
    per_record = record_log_likelihood(model, model.observed_RVs, private)
    inputs = sorted(private, key=lambda v: v.name)
    replaced = {v: v.type(name=v.name) for v in inputs}
    graph = pytensor.graph.replace.graph_replace(per_record, replaced, strict=False)
    evaluate = pytensor.function(
        [model.rvs_to_values[model["mu"]], *replaced.values()],
        graph,
        mode=FAST,
        on_unused_input="ignore",
    )
    neighbour = X.copy()
    neighbour[changed] = -1.0 if X[changed] > 0 else 1.0
    before = evaluate(0.3, X, X[::-1].copy())
    after = evaluate(0.3, neighbour, X[::-1].copy())
    moved = np.flatnonzero(before != after)
    assert set(moved) <= {changed}


# -- an accepted custom logp, audited: one clipped step on neighbouring data sets ---------------

U0 = 6.0  # θ = A + (1 − 2A)σ(−U0) ≈ A; the proposal jumps to +U0, θ' ≈ 1 − A
CLIP, T_CLIP = 0.8, 1.25


class _Jump:
    """A data-independent point-mass proposal from −U0 to +U0."""

    log_proposal_ratio = 0.0

    def __call__(self, rng):
        return np.array([2 * U0])


def _bernoulli_custom(labels) -> pm.Model:
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", np.asarray(labels), bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1.0, 1.0, lower=A, upper=1 - A)
        pm.CustomDist(
            "y",
            theta,
            logp=lambda value, p: pm.logp(pm.Bernoulli.dist(p), value),
            observed=y_obs,
        )
    return model


@pytest.fixture(scope="module")
def custom_audit():
    """D = (1, 0, 0) against D' = (0, 0, 0): both kinds of record clipped to ±c, so Λ moves by
    the whole 2c/T between them, and acceptance is the event with the largest ratio."""
    steps = {}
    for labels in ([1, 0, 0], [0, 0, 0]):
        step = pmp.PrivateMetropolis(
            clip=CLIP,
            temperature=T_CLIP,
            tune=False,
            secure=False,
            model=_bernoulli_custom(labels),
        )
        step.proposal_dist = _Jump()
        steps[tuple(labels)] = step

    def one_step(labels, rng):
        step = steps[tuple(labels)]
        step.setup_chain(rng, tune=0, draws=0)
        point, _ = step.step({"theta_interval__": np.array(-U0)})
        return float(point["theta_interval__"])

    audit = epsilon_lower_bound(
        one_step, [1, 0, 0], [0, 0, 0], n=20_000, event=lambda q: q > 0, random_seed=11
    )
    return steps[1, 0, 0], audit


@pytest.mark.slow
def test_audit_of_a_clipped_custom_logp_step_is_within_its_claim(custom_audit):
    step, audit = custom_audit
    assert step.privacy_epsilon_per_draw == barker_epsilon(CLIP, T_CLIP)  # 2c/T + 2⁻⁴³, up
    assert audit.passes(step.privacy_epsilon_per_draw)
    # log σ(−c/T) − log σ(−3c/T) = 0.99: the audit nearly attains the claim of 1.28.
    assert audit.epsilon_lower_bound > 0.6 * step.privacy_epsilon_per_draw


def test_audit_catches_the_custom_logp_step_charged_half(custom_audit):
    step, audit = custom_audit
    assert not audit.passes(step.privacy_epsilon_per_draw / 2)
    assert math.isfinite(audit.epsilon_lower_bound)


# -- the attacker's review of the change (each finding, refused) ------------------------------


def test_an_observed_variable_reduced_in_another_nodes_parameter_is_refused():
    """``pm.Normal("y", mu * pt.sum(z), observed=x_obs)`` with ``z`` observed on ``z_obs``:
    PyMC evaluates ``z`` at its data, so one record moved all n terms (ε ≥ 3.88 against 0.04
    charged on the clipped route, 6.82 against 0.32 subsampled)."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        z_obs = pmp.PrivateData("z_obs", X[::-1].copy(), bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        z = pm.Normal("z", 0, 1, observed=z_obs)
        pm.Normal("y", mu * pt.sum(z), 1.0, observed=x_obs)
    with pytest.raises(UnsupportedModelError, match="does not observe PrivateData row by row"):
        pmp.PrivateMetropolis([mu], model=model, clip=0.02, secure=False)
    # Row by row, the other node's data are part of the record.
    with pm.Model() as rowwise:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        z_obs = pmp.PrivateData("z_obs", X[::-1].copy(), bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        z = pm.Normal("z", 0, 1, observed=z_obs)
        pm.Normal("y", mu * z, 1.0, observed=x_obs)
    step = pmp.PrivateMetropolis([mu], model=rowwise, clip=0.02, secure=False)
    assert step.privacy_epsilon_per_draw == barker_epsilon(0.02, 1.0)


class _RunningSum(ps.UnaryScalarOp):
    """A user's scalar operation whose Python ``impl`` keeps state across elements."""

    def __init__(self):
        super().__init__(ps.upgrade_to_float, name="running_sum")
        self.total = 0.0

    def impl(self, value):
        self.total += float(value)
        return self.total


@pytest.mark.slow
def test_python_inside_an_elementwise_or_blockwise_operation_is_not_read_as_row_wise():
    """A Python scalar operation in an Elemwise, or a wrap_py in a Blockwise, may keep state
    across records (a running sum: ε ≥ 1.94 against 0.04 charged)."""
    running = Elemwise(_RunningSum())
    blockwise = Blockwise(_python_square_scalar, signature="()->()")
    for logp in (lambda v, mu, z: mu * running(v), lambda v, mu, z: mu * blockwise(v)):
        with pytest.raises(UnsupportedModelError, match=r"log-density of `y`.*row i from row i"):
            pmp.PrivateMetropolis(model=observed_custom(logp), clip=0.02, secure=False)


@wrap_py(itypes=[pt.dscalar], otypes=[pt.dscalar])
def _python_square_scalar(value):
    return np.asarray(value**2)


class _Holder:
    """Private data held on an object, reached through ``self``."""

    def __init__(self, data):
        self.data = data

    def shift(self, value):
        return np.asarray(value - self.data.get_value()[0])

    def random(self, mu, rng=None, size=None):
        return rng.normal(mu + self.data.get_value(), 1e-6, size=size)


def _blockwise_closure(x_obs):
    @wrap_py(itypes=[pt.dscalar], otypes=[pt.dscalar])
    def shifted(value):
        return np.asarray(value - x_obs.get_value()[0])

    operation = Blockwise(shifted, signature="()->()")
    pm.CustomDist("h", logp=lambda value: -100.0 * operation(value) ** 2)


def _bound_method_closure(x_obs):
    shifted = wrap_py(itypes=[pt.dscalar], otypes=[pt.dscalar])(_Holder(x_obs).shift)
    pm.CustomDist("h", logp=lambda value: -100.0 * shifted(value) ** 2)


def _nested_default(x_obs):
    def random(loc, rng=None, size=None, held=({"a": [[x_obs]]},)):
        return rng.normal(loc + held[0]["a"][0][0].get_value()[0], size=size)

    pm.CustomDist("h", 0.0, logp=lambda value, loc: -((value - loc) ** 2), random=random)


def _bounds_from_a_record(x_obs):
    pm.Normal(
        "h",
        100.0,
        0.1,
        initval=0.0,
        transform=Interval(bounds_fn=lambda *inputs: (x_obs[0] - 1.5, x_obs[0] + 1.5)),
    )


HIDDEN = {
    # A closure over the data in a wrap_py inside a Blockwise: charged ε = 0, ε ≥ 6.53.
    "wrap_py in a Blockwise": (_blockwise_closure, "Python function .* refers to PrivateData"),
    # Through an object's attribute: the draws gave x_obs[0] to 2·10⁻³.
    "a bound method's object": (_bound_method_closure, "Python function .* refers to PrivateData"),
    "a default three containers deep": (_nested_default, "random function .* refers to Priv"),
    # PyMC's own Interval transform with bounds read from a record: h − 1.5 gave x_obs[0].
    "an Interval transform's bounds": (_bounds_from_a_record, "log-density of `h` depends on"),
}


@pytest.mark.parametrize(("extra", "match"), HIDDEN.values(), ids=HIDDEN.keys())
def test_private_data_hidden_from_the_first_reading_is_refused(extra, match):
    model = _normal_model(extra)
    with pytest.raises(UnsupportedModelError, match=match):
        pmp.analyze(model)
    with pytest.raises(UnsupportedModelError, match=match):
        pmp.PrivateMetropolis([model["h"]], model=model, secure=False)
    assert reads_private_data(model)


def test_a_random_method_holding_the_data_is_refused_for_predictions():
    """The predictions returned the records to 3·10⁻⁶."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.CustomDist("y", mu, logp=_normal_logp, random=_Holder(x_obs).random, observed=x_obs)
    private = pmp.privatize(_normal_model(lambda x_obs: None), epsilon=1.0, secure=False)
    idata = pmp.sample(20, tune=20, chains=1, model=private, random_seed=1, progressbar=False)
    with pytest.raises(UnsupportedModelError, match="random function of `y` refers to Priv"):
        pmp.sample_posterior_predictive(idata, model)


def test_references_that_cannot_be_read_in_full_are_refused():
    chain = [X]
    for _ in range(40):
        chain = [chain]
    model = _normal_model(
        _hyperprior(lambda loc, rng=None, size=None: rng.normal(loc + len(chain), size=size))
    )
    with pytest.raises(UnsupportedModelError, match="refers to more than can be read"):
        pmp.analyze(model)


def test_symbolic_initvals_given_to_pmp_sample_are_refused():
    """``initvals={"mu": x_obs[0]}``: the released first draws were x_obs[0] exactly."""
    model = _normal_model(lambda x_obs: None)
    step = pmp.PrivateMetropolis([model["mu"]], model=model, clip=0.1, secure=False)
    with model, pytest.raises(UnsupportedModelError, match="initial value of `mu` in initvals"):
        pmp.sample(5, step=step, chains=1, initvals={"mu": model["x_obs"][0]})
    with model, pytest.raises(UnsupportedModelError, match="not strictly inside the support"):
        pmp.sample(5, step=step, chains=1, initvals={"mu": 5.0})
    assert not ledger_for(model).releases


def test_a_private_index_whose_bounds_exceed_the_axis_is_refused_on_the_clipped_route():
    """A record inside its declared bounds [0, 5] but past the end of a length-3 parameter
    made the step raise for that record only: an event of probability 1 under one data set
    and 0 under its neighbour."""
    groups = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    with pm.Model() as model:
        g_obs = pmp.PrivateData("g_obs", groups, bounds=(0, 5))
        x_obs = pmp.PrivateData("x_obs", np.zeros(8), bounds=(-1, 1))
        theta = pmp.TruncatedNormal("theta", 0, 1, lower=-2, upper=2, shape=3)
        pm.Normal("y", theta[g_obs], 1.0, observed=x_obs)
    with pytest.raises(DataBoundsError, match=r"bounds \[0, 5\] reach outside \[0, 2\]"):
        pmp.PrivateMetropolis(model=model, clip=0.1, secure=False)
    # An index computed from the records (here in a logp) cannot be bounded: refused.
    table = pt.as_tensor(np.linspace(-1, 1, 3))
    logp = lambda v, mu, z: _normal_logp(v, mu + table[pt.cast(pt.abs(v) * 2, "int64")])  # noqa: E731
    with pytest.raises(UnsupportedModelError, match=r"row i from row i"):
        pmp.PrivateMetropolis(model=observed_custom(logp), clip=0.1, secure=False)


def test_pymc_symbolic_likelihoods_are_read_on_their_graph():
    """pm.Censored was refused by the clipped route before; its log-density is read now."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.Censored("y", pm.Normal.dist(mu, 1.0), lower=-0.9, upper=0.9, observed=x_obs)
    step = pmp.PrivateMetropolis(model=model, clip=0.05, secure=False)
    assert step.privacy_epsilon_per_draw == barker_epsilon(0.05, 1.0)


# -- the second review (each finding, refused) ------------------------------------------------


def test_an_integer_division_by_a_record_is_not_read_as_row_wise():
    """``mu * (6 // k)`` with k a record in [0, 5]: a zero divisor made the step raise for one
    record only (ε ≥ 6.12 against 0.2 charged)."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", np.linspace(-1, 1, 6), bounds=(-1, 1))
        k_obs = pmp.PrivateData("k_obs", np.arange(6), bounds=(0, 5))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.Normal("y", mu * (6 // k_obs) + mu * (6 % k_obs), 1.0, observed=x_obs)
    with pytest.raises(UnsupportedModelError, match="does not observe PrivateData row by row"):
        pmp.PrivateMetropolis(model=model, clip=0.1, secure=False)


def test_an_observed_array_that_is_not_private_data_is_refused_on_the_clipped_route():
    """``z = pm.Normal(..., observed=array)`` read as sum(z) in another node passed as public
    (ε ≥ 3.88 against 0.04); observed values are private, as `analyze` says."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        z = pm.Normal("z", 0, 1, observed=X[::-1].copy())
        pm.Normal("y", mu * pt.sum(z), 1.0, observed=x_obs)
    with pytest.raises(UnsupportedModelError, match="observed `z` does not observe PrivateData"):
        pmp.PrivateMetropolis([mu], model=model, clip=0.02, secure=False)


def test_a_blockwise_operation_that_can_raise_on_a_record_is_refused():
    """A vectorised index past the axis, or the inverse of a singular record, raised for one
    record only (ε ≥ 6.12 against 0.2)."""
    table = pt.as_tensor(np.linspace(-1, 1, 3))
    take = pt.vectorize(lambda a, i: a[i], "(m),()->()")
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", np.zeros(6), bounds=(-1, 1))
        k_obs = pmp.PrivateData("k_obs", np.arange(6) % 3, bounds=(0, 5))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.Normal("y", mu + take(table, k_obs), 1.0, observed=x_obs)
    with pytest.raises(UnsupportedModelError, match="does not observe PrivateData row by row"):
        pmp.PrivateMetropolis(model=model, clip=0.1, secure=False)
    # A solve whose records are the right-hand side is read (pm.logp of an MvNormal).
    rows = np.random.default_rng(3).uniform(-1, 1, (10, 2))
    with pm.Model() as mvnormal:
        x_obs = pmp.PrivateData("x_obs", rows, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2, shape=2)
        pm.CustomDist(
            "y",
            mu,
            logp=lambda v, mu: pm.logp(pm.MvNormal.dist(mu, 2.0 * np.eye(2)), v),
            signature="(n)->(n)",
            observed=x_obs,
        )
    step = pmp.PrivateMetropolis(model=mvnormal, clip=0.1, secure=False)
    assert step.privacy_epsilon_per_draw == barker_epsilon(0.1, 1.0)


class _Bounds:
    """A callable object (not a function) holding the data."""

    def __init__(self, data):
        self.data = data

    def __call__(self, *inputs):
        return self.data[0] - 1.0, self.data[0] + 1.0


class _Shift(Transform):
    name = "shift"

    def __init__(self, data):
        self.data = data

    def forward(self, value, *inputs):
        return value - 3.0 * self.data[0]

    def backward(self, value, *inputs):
        return value + 3.0 * self.data[0]

    def log_jac_det(self, value, *inputs):
        return pt.zeros_like(value)


@pytest.mark.parametrize(
    "transform",
    [lambda x_obs: Interval(bounds_fn=_Bounds(x_obs)), lambda x_obs: Chain([_Shift(x_obs)])],
    ids=["Interval with a callable object", "Chain of the user's transform"],
)
def test_a_pymc_transform_holding_the_users_code_is_built_and_checked(transform):
    """Read as PyMC's own, its log-Jacobian and bounds were never built: the block was charged
    0 for ε ≥ 0.40 (Interval) and 2.75 (Chain), and draws fell in (x₀ − 1, x₀ + 1)."""
    model = _normal_model(lambda x_obs: pm.Normal("h", 0, 1, default_transform=transform(x_obs)))
    with pytest.raises(UnsupportedModelError, match="log-density of `h` depends on PrivateData"):
        pmp.PrivateMetropolis([model["h"]], model=model, secure=False)
    assert reads_private_data(model)


def _holders(x_obs):
    return {
        "builtin method": [x_obs].__getitem__,
        "object array": np.array([x_obs], dtype=object),
        "deque": collections.deque([x_obs]),
        "weak reference": weakref.ref(x_obs),
        "namespace": types.SimpleNamespace(v=x_obs),
        "iterator": iter([x_obs]),
        "storage container": x_obs.container,
    }


HOLDERS = ("builtin method", "object array", "deque", "weak reference", "namespace")


@pytest.mark.parametrize("holder", [*HOLDERS, "iterator", "storage container"])
def test_a_random_function_holding_the_data_in_any_container_is_refused(holder):
    """Each holder passed the first scan; the predictions returned x_obs exactly."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        held = _holders(x_obs)[holder]

        def random(mu, rng=None, size=None):
            return rng.normal(mu + 0.0 * len(str(held)), size=size)

        pm.CustomDist("y", mu, logp=_normal_logp, random=random, observed=x_obs)
    with pytest.raises(UnsupportedModelError, match="refers to"):
        pmp.analyze(model)


def test_a_random_function_referring_to_the_raw_array_given_to_private_data_is_refused():
    """The raw array a user declared, read by name: the commonest slip (its standard deviation
    in a predictive draw)."""
    raw = np.random.default_rng(7).uniform(-1, 1, 12)
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", raw, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.CustomDist(
            "y",
            mu,
            logp=_normal_logp,
            random=lambda mu, rng=None, size=None: rng.normal(mu, raw.std(), size=size),
            observed=x_obs,
        )
    with pytest.raises(UnsupportedModelError, match="an array holding private values"):
        pmp.analyze(model)


def test_a_gradient_override_reading_the_data_is_refused():
    """NUTS compiles an OpFromGraph's Python gradient: one that read the raw labels stalled
    the free chain exactly when their mean passed 0.3 (ε ≥ 1.65 from 25 runs, 0 charged)."""
    labels = (X > 0).astype(int)
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A)
        pm.Bernoulli("y", theta, observed=y_obs)
    private = pmp.privatize(model, epsilon=1.0, secure=False, random_seed=1)
    x = pt.dscalar("x")

    def pullback(inputs, outputs, grads):
        return [grads[0] * pt.switch(pt.mean(y_obs) > 0.3, np.nan, -inputs[0])]

    quadratic = OpFromGraph([x], [-0.5 * x**2], lop_overrides=pullback)
    with private:
        pm.CustomDist("h", logp=lambda value: quadratic(value))
    assert reads_private_data(private)
    with private, pytest.raises(UnsupportedModelError, match="gradient override"):
        pmp.sample(10, chains=1, progressbar=False)
