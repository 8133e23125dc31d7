"""What runs beside the checked graphs (the third review, on PyMC 6 and PyTensor 3).

PyTensor 3 compiles with Numba by default, which does not check indices; `pm.sample` and the
step methods take ``compile_kwargs`` (``updates``, ``givens``: graphs over anything), initial
point strategies, user proposals and callbacks. Each finding below released raw records or far
more than the ledger recorded (a boolean floor division raising for one record: ε ≥ 6.12
against 0.2; a cast truncating a rate: ε ≥ 3.90 against 2.20; a Deterministic indexing past its
axis: 25 of 25 raw records bit for bit); each is now refused before any noise is drawn, or runs
under a backend that checks every index.
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pymc.step_methods.metropolis import NormalProposal
from pytensor.compile.builders import OpFromGraph
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.ifelse import ifelse
from pytensor.tensor.basic import AllocDiag

import pymc_private as pmp
from pymc_private.analysis.intervals import check_public_indices
from pymc_private.analysis.python_code import defined_in, read_as_it_is
from pymc_private.compiling import CHECKED_MODE, checked_compile_kwargs
from pymc_private.data.ledgers import ledger_for
from pymc_private.errors import UnsupportedModelError

X = np.random.default_rng(36).uniform(-1, 1, 12)
RUN = dict(chains=1, cores=1, progressbar=False, compute_convergence_checks=False)


def _normal_model(extra=None) -> pm.Model:
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.Normal("y", mu, 1.0, observed=x_obs)
        if extra is not None:
            extra(x_obs, mu)
    return model


@pytest.fixture(scope="module")
def privatised():
    labels = (X > 0).astype(np.int64)
    with pm.Model() as raw:
        y_obs = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=0.05, upper=0.95)
        pm.Bernoulli("y", theta, observed=y_obs)
    return raw, pmp.privatize(raw, 1.0, secure=False, random_seed=18)


def test_a_boolean_floor_division_of_records_is_not_read_as_row_wise():
    """``(x > .5) // (x > -.5)`` raises on a False divisor: the step raised iff a record was
    ≤ −0.5, inside the declared bounds."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.Normal("y", mu * ((x_obs > 0.5) // (x_obs > -0.5)), 1.0, observed=x_obs)
    with pytest.raises(UnsupportedModelError, match="does not observe PrivateData row by row"):
        pmp.PrivateMetropolis(model=model, clip=0.1, secure=False)
    assert not ledger_for(model).releases


@pytest.mark.parametrize(
    ("dtype", "match"), [("int64", "truncates or rounds"), ("float32", "from float64 to float32")]
)
def test_a_cast_that_truncates_a_bounded_parameter_is_refused(dtype, match):
    """``Poisson(mu=cast(λ, int64))`` was analysed as a rate in [0.5, 3] while the compiled
    model evaluated rates {0, 1, 2}: log-likelihood −∞ for a count of 1 at rate 0 (ε ≥ 3.90
    against 2.20). A cast to a narrower float rounds too."""
    with pm.Model() as model:
        k_obs = pmp.PrivateData("k_obs", np.array([1, 0, 0]), bounds=(0, 1))
        lam = pmp.TruncatedNormal("lam", 1.5, 2.0, lower=0.5, upper=3.0)
        pm.Poisson("y", mu=pt.cast(lam, dtype), observed=k_obs)
    with pytest.raises(UnsupportedModelError, match=match):
        pmp.analyze(model)


def test_compile_kwargs_take_a_checked_mode_only():
    """``updates`` wrote f(x_obs) into a public pm.Data that a Deterministic released (the mean,
    min and max of the records with every draw; the raw count under PrivateGibbs); the Numba
    mode reads past an axis."""
    side = {}

    def leaking(x_obs, mu):
        side["data"] = pm.Data("side", np.zeros(1))
        pm.Deterministic("summary", side["data"] + 0.0 * mu)

    model = _normal_model(leaking)
    updates = {"updates": {side["data"]: pt.zeros_like(side["data"]) + pt.mean(model["x_obs"])}}
    with model:
        with pytest.raises(UnsupportedModelError, match=r"compile_kwargs=\{'mode': \.\.\.\} only"):
            pmp.PrivateMetropolis(clip=0.05, secure=False, compile_kwargs=updates)
        with pytest.raises(UnsupportedModelError, match="only, not \\['givens'\\]"):
            pmp.PrivateGibbs([model["mu"]], secure=False, compile_kwargs={"givens": []})
        with pytest.raises(UnsupportedModelError, match="may not choose the mode 'NUMBA'"):
            pmp.PrivateMetropolis(clip=0.05, secure=False, compile_kwargs={"mode": "NUMBA"})
        step = pmp.PrivateMetropolis(clip=0.05, secure=False)
        with pytest.raises(UnsupportedModelError, match=r"pmp\.sample takes compile_kwargs"):
            pmp.sample(3, tune=0, step=step, compile_kwargs=updates, **RUN)
    assert not ledger_for(model).releases
    assert checked_compile_kwargs(None, "x") == {"mode": CHECKED_MODE}
    assert checked_compile_kwargs({"mode": "FAST_COMPILE"}, "x") == {"mode": "FAST_COMPILE"}
    with pytest.raises(UnsupportedModelError, match="'FAST_RUN'"):  # Numba in PyTensor 3
        checked_compile_kwargs({"mode": "FAST_RUN"}, "x")


def test_an_initial_point_strategy_given_to_pmp_sample_is_refused():
    """``initvals={"h": "support_point"}`` built the support point of a CustomDist closing over
    x_obs, which the guard never built (the model's own initval was numeric): the chain
    started at x_obs[0]."""

    def hyperprior(x_obs, mu):
        pm.CustomDist(
            "h",
            logp=lambda value: -(value**2) / 2,
            support_point=lambda rv, size: x_obs[0],
            initval=0.5,
        )

    model = _normal_model(hyperprior)
    with model:
        steps = [
            pmp.PrivateMetropolis([model["mu"]], clip=0.05, secure=False),
            pmp.PrivateMetropolis([model["h"]], secure=False),
        ]
        with pytest.raises(UnsupportedModelError, match="give numbers"):
            pmp.sample(3, tune=0, step=steps, initvals={"h": "support_point"}, **RUN)
    assert not ledger_for(model).releases


def test_a_users_step_or_callback_reading_private_data_is_refused_on_the_free_route(
    privatised,
):
    """A PyMC Metropolis whose proposal class read the raw model's records by name released
    their mean in the jumps of the free draws."""
    raw, private = privatised

    class RawMeanProposal(NormalProposal):
        def __call__(self, rng=None, size=None):
            return np.full(self.s.shape, 1e-3 * raw["y_obs"].get_value().mean())

    with private:
        step = pm.Metropolis([private["theta"]], proposal_dist=RawMeanProposal, tune=False)
        with pytest.raises(UnsupportedModelError, match=r"RawMeanProposal|Metropolis"):
            pmp.sample(3, tune=0, step=step, **RUN)
        peek = lambda trace, draw: raw["y_obs"].get_value().sum()  # noqa: E731
        with pytest.raises(UnsupportedModelError, match="takes no callback"):
            pmp.sample(3, tune=0, callback=peek, **RUN)


def test_indices_computed_as_the_model_runs_are_checked_on_the_free_route():
    """On a privatised model a Deterministic indexing a public pm.Data by ``start +
    arange(-W, W)`` (or by a free variable) read the process's memory under Numba: the raw
    records of another model, bit for bit, at ε = 0. Such a model runs PyMC's NUTS under the
    C backend, whose indexing raises; an external sampler is refused."""
    with pm.Model() as raw:
        y_obs = pmp.PrivateData("y_obs", (X > 0).astype(np.int64), bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=0.05, upper=0.95)
        pm.Bernoulli("y", theta, observed=y_obs)
    private = pmp.privatize(raw, 1.0, secure=False, random_seed=18)
    with private:
        d = pm.Data("d", np.linspace(0.5, 0.6, 16))
        start = pm.Data("start", np.int64(0))
        pm.Deterministic("window", d[start + np.arange(-1000, 1000)])
    mode = pytensor.config.mode
    with private, pytest.raises(UnsupportedModelError, match="nuts_sampler='pymc'"):
        pmp.sample(2, tune=2, nuts_sampler="nutpie", **RUN)
    with private, pytest.raises(IndexError):  # the exact numpy draws
        pmp.sample(2, tune=2, random_seed=3, **RUN)
    with private:
        pm.Potential("shrink", -((private["theta"] - 0.5) ** 2))
    with private, pytest.raises(IndexError):  # NUTS
        pmp.sample(2, tune=2, random_seed=3, **RUN)
    assert pytensor.config.mode == mode  # restored after the run


def test_an_index_past_its_axis_raises_on_the_raw_route_instead_of_reading_memory():
    """A Deterministic ``d[idx]`` with a public index past the axis, computed by PyMC's trace
    around the private step, released 25 of 25 raw records under Numba."""

    def window(x_obs, mu):
        d = pm.Data("d", np.linspace(0.5, 0.6, 16))
        idx = pm.Data("idx", np.arange(-1000, 1000))
        pm.Deterministic("window", d[idx] + 0 * mu)

    model = _normal_model(window)
    with model, pytest.raises(IndexError):
        pmp.sample(1, tune=0, step=pmp.PrivateMetropolis(clip=0.05, secure=False), **RUN)


ROWS = np.random.default_rng(8).uniform(-1, 1, (12, 3))


@pytest.mark.parametrize(
    "likelihood",
    [
        lambda rows, w, y: pm.Normal("o", rows[:, [0, 2]] @ w[:2], 1.0, observed=y),
        lambda rows, w, y: pm.CustomDist(
            "o",
            w[0],
            logp=lambda v, m: -((pt.specify_shape(v, (12,)) - m) ** 2),
            observed=y,
        ),
    ],
    ids=["columns by a list", "specify_shape in a logp"],
)
def test_ordinary_models_the_review_found_refused_are_read(likelihood):
    with pm.Model() as model:
        rows = pmp.PrivateData("rows", ROWS, bounds=(-1, 1))
        y = pmp.PrivateData("y", X, bounds=(-1, 1))
        w = pmp.TruncatedNormal("w", 0, 1, lower=-2, upper=2, shape=3)
        likelihood(rows, w, y)
    assert pmp.PrivateMetropolis(model=model, clip=0.1, secure=False).privacy_epsilon_per_draw > 0


def test_a_simulator_is_refused_with_what_to_write_instead():
    """pm.Simulator's log-density draws from a shared random generator: refused with a
    message, not PyTensor's TypeError."""

    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.Simulator(
            "s",
            lambda rng, m, size=None: rng.normal(m, 1.0, size=size),
            mu,
            epsilon=0.5,
            observed=x_obs,
        )
    with pytest.raises(UnsupportedModelError, match="Write the likelihood as a log-density"):
        pmp.PrivateMetropolis(model=model, clip=0.1, secure=False)


# -- the fourth review ------------------------------------------------------------------------


def _privatised_mean():
    with pm.Model() as raw:
        x_obs = pmp.PrivateData("x_obs", X, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-2, upper=2)
        pm.Normal("y", mu, 1.0, observed=x_obs)
    return raw, pmp.privatize(raw, 1.0, secure=False, random_seed=18)


def test_a_default_update_on_a_models_shared_variable_is_refused():
    """``k.default_update = x_obs``: PyTensor adds the update to every function compiled from
    the graphs, the trace's Deterministics' included: 25 of 25 records released."""
    model = _normal_model()
    with model:
        k = pm.Data("k", np.zeros(X.size))
        pm.Deterministic("d", k + 0 * model["mu"])
    k.default_update = pt.cast(model["x_obs"], "float64")
    with model, pytest.raises(UnsupportedModelError, match="`k` has a default_update"):
        pmp.sample(2, tune=0, step=pmp.PrivateMetropolis(clip=0.05, secure=False), **RUN)
    with pytest.raises(UnsupportedModelError, match="default_update"):
        pmp.analyze(model)
    assert not ledger_for(model).releases


def test_a_users_step_compiled_with_updates_or_holding_data_is_refused_on_the_free_route():
    """A pm.Metropolis built with ``compile_kwargs={"updates": {k: x_obs}}``, or with a
    proposal scale whose ``__array__`` read the records, released them at ε = 0."""
    raw, private = _privatised_mean()

    class Scale:
        def __array__(self, dtype=None, copy=None):
            return np.full(1, 1e-3 * raw["x_obs"].get_value().mean())

    with private:
        k = pm.Data("k", np.zeros(X.size))
        pm.Deterministic("leak", k + 0 * private["mu"])
        updating = pm.Metropolis(
            [private["mu"]], compile_kwargs={"updates": {k: pt.cast(raw["x_obs"], "float64")}}
        )
        with pytest.raises(UnsupportedModelError, match="compiles a function that"):
            pmp.sample(2, tune=0, step=updating, **RUN)
        scaled = pm.Metropolis([private["mu"]], S=Scale(), proposal_dist=pm.PoissonProposal)
        with pytest.raises(UnsupportedModelError, match="which holds PrivateData"):
            pmp.sample(2, tune=0, step=scaled, **RUN)
        plain = pm.Metropolis([private["mu"]], proposal_dist=pm.PoissonProposal)
        assert pmp.sample(2, tune=0, step=plain, **RUN).posterior.sizes["draw"] == 2


def test_an_operation_whose_code_can_crash_on_a_record_is_refused():
    """betainc's C code segfaults when a + b overflows: the process died for one data set and
    not its neighbour (one record 0.5)."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", np.full(4, 0.25), bounds=(0, 1))
        la = pmp.TruncatedNormal("la", 700, 10, lower=1, upper=709.7)
        a = pt.exp(la)
        pm.CustomDist("y", a, logp=lambda v, a: pt.log(pt.betainc(a, a, v)), observed=x_obs)
    with pytest.raises(UnsupportedModelError, match="row i from row i"):
        pmp.PrivateMetropolis(model=model, clip=0.1, secure=False)


@pytest.mark.parametrize("wrapped", ["OpFromGraph", "vectorize"])
def test_an_index_inside_an_inner_graph_is_counted_as_computed(wrapped):
    """A public index past its axis inside an OpFromGraph or a pt.vectorize escaped the index
    check and ran under Numba: 16 of 16 records."""
    _, private = _privatised_mean()
    d_in, i_in = pt.dvector("d"), pt.ivector("i")
    if wrapped == "OpFromGraph":
        take = OpFromGraph([d_in, i_in], [d_in[i_in]])
    else:
        each = pt.vectorize(lambda d, i: d[i[None]].sum(), signature="(n),()->()")
        take = lambda d, i: each(d[None, :], i)  # noqa: E731
    with private:
        d = pm.Data("d", np.linspace(0.5, 0.6, 16))
        idx = pm.Data("idx", np.arange(-1000, 1000))
        pm.Deterministic("window", take(d, idx) + 0 * private["mu"])
        assert check_public_indices(private.deterministics, "w", model=private)
        with pytest.raises(UnsupportedModelError, match="nuts_sampler='pymc'"):
            pmp.sample(2, tune=2, nuts_sampler="nutpie", **RUN)
        with pytest.raises(IndexError):
            pmp.sample(2, tune=0, step=pm.Metropolis([private["mu"]]), **RUN)


def test_a_sealed_group_stored_under_another_name_is_caught():
    """A sealed group renamed to spell the records passed as releasable, also from a file."""
    _, private = _privatised_mean()
    with private:
        idata = pmp.sample(5, chains=1, cores=1, random_seed=1, progressbar=False)
    assert pmp.check_release(idata).releasable
    idata["records_" + "".join(str(int(v > 0)) for v in X)] = idata["posterior"]
    found = dict(pmp.check_release(idata).findings)
    assert any(name.startswith("records_") and "changed" in why for name, why in found.items())


# -- the fifth review -------------------------------------------------------------------------


def test_default_updates_read_in_the_graphs_pymc_builds_and_on_random_generators():
    """A CustomDist logp closing over a shared ``k`` with ``k.default_update = x_obs`` (read
    only in the log-density PyMC builds), and a generator whose update chose between two
    seeded states by a record: 30 of 30 and 12 of 12 records, at ε = 0."""
    raw, private = _privatised_mean()
    k = pytensor.shared(np.zeros(X.size), name="k")
    k.default_update = pt.cast(raw["x_obs"], "float64")
    with private:
        pm.CustomDist("z", logp=lambda value: -((value - k) ** 2).sum(), shape=X.size)
    with private, pytest.raises(UnsupportedModelError, match="`k` has a default_update"):
        pmp.sample(2, tune=2, nuts_sampler="pymc", **RUN)

    raw, private = _privatised_mean()
    r = pytensor.shared(np.random.default_rng(0), name="r")
    seeded = [pytensor.shared(np.random.default_rng(seed)) for seed in (1, 2)]
    r.default_update = ifelse(pt.gt(raw["x_obs"][0], 0), *seeded)
    with private:
        live = ifelse(pt.gt(private["mu"], -1.0), r, r)
        pm.Deterministic("draw", pt.random.normal(rng=live) + 0 * private["mu"])
        with pytest.raises(UnsupportedModelError, match="`r` has a default_update"):
            pmp.sample(2, tune=0, step=pm.Slice([private["mu"]]), **RUN)
    # PyMC's own generators (the next state of their draw) are accepted.
    with _normal_model() as model:
        pm.Deterministic("noise", pm.Normal.dist(0, 1) + 0 * model["mu"])
    pmp.analyze(model)


def test_a_step_marked_as_charging_by_hand_is_read_as_any_other():
    """``step.charges_as_it_runs = True`` on a pm.Metropolis compiled with updates writing the
    records skipped its checks: 50 of 50 records, ε = 0."""
    raw, private = _privatised_mean()
    with private:
        k = pm.Data("k", np.zeros(X.size))
        pm.Deterministic("leak", k + 0 * private["mu"])
        step = pm.Metropolis(
            [private["mu"]], compile_kwargs={"updates": {k: pt.cast(raw["x_obs"], "float64")}}
        )
        step.charges_as_it_runs = True
        with pytest.raises(UnsupportedModelError, match="compiles a function that"):
            pmp.sample(2, tune=0, step=step, **RUN)


def test_an_inner_graph_compiled_in_an_unchecked_mode_is_refused():
    """``pytensor.scan(..., mode="NUMBA")`` compiled its inner graph under Numba whatever the
    sampler's mode: an index past the axis released 16 of 16 records."""
    _, private = _privatised_mean()
    with private:
        d = pm.Data("d", np.linspace(0.5, 0.6, 16))
        idx = pm.Data("idx", np.int64(-1000))
        window = pytensor.scan(
            lambda s, d, i: d[i + s],
            sequences=[pt.zeros(1, "int64")],
            non_sequences=[d, idx + pt.cast(0 * private["mu"], "int64")],
            mode="NUMBA",
            return_updates=False,
        )
        pm.Deterministic("window", window)
        with pytest.raises(UnsupportedModelError, match="mode 'NUMBA'"):
            pmp.sample(2, tune=0, step=pm.Metropolis([private["mu"]]), **RUN)


# -- the sixth review -------------------------------------------------------------------------


def test_a_generators_own_next_state_that_reads_a_record_is_refused():
    """``r.default_update`` the next state of a draw of size 1 + x_obs[0] from ``r`` itself:
    how far the generator moved named the record (12 of 12)."""
    raw, private = _privatised_mean()
    r = pytensor.shared(np.random.default_rng(0), name="r")
    size = (1 + pt.cast(raw["x_obs"][0] > 0, "int64"),)
    r.default_update = pt.random.normal(size=size, rng=r).owner.outputs[0]
    with private:
        live = ifelse(pt.gt(private["mu"], -1.0), r, r)
        pm.Deterministic("draw", pt.random.normal(rng=live) + 0 * private["mu"])
        with pytest.raises(UnsupportedModelError, match="`r` has a default_update"):
            pmp.sample(2, tune=0, step=pm.Slice([private["mu"]]), **RUN)


def test_a_step_is_private_by_its_class_itself(monkeypatch):
    """``pm.Metropolis.charges_as_it_runs = True``, or a subclass claiming PyMC's module,
    passed as the package's own step: 50 of 50 records."""
    raw, private = _privatised_mean()
    monkeypatch.setattr(pm.Metropolis, "charges_as_it_runs", True, raising=False)
    posing = type(
        "Metropolis",
        (pm.Metropolis,),
        {"charges_as_it_runs": True, "__module__": "pymc.step_methods.metropolis"},
    )
    with private:
        k = pm.Data("k", np.zeros(X.size))
        pm.Deterministic("leak", k + 0 * private["mu"])
        updates = {"updates": {k: pt.cast(raw["x_obs"], "float64")}}
        for kind in (pm.Metropolis, posing):
            step = kind([private["mu"]], compile_kwargs=updates)
            refused = "compiles a function that|cannot be read in full"
            with pytest.raises(UnsupportedModelError, match=refused):
                pmp.sample(2, tune=0, step=step, **RUN)


def test_library_operations_indexing_within_their_own_shapes_leave_nutpie_on():
    """A varying-intercept regression's released Gram matrix is unpacked with AllocDiag, an
    inner graph indexing a diagonal by its own shape: not an index computed as the model
    runs, so nutpie stays the default there."""
    rng = np.random.default_rng(0)
    x, g = rng.uniform(-1, 1, (60, 2)), rng.integers(0, 3, 60)
    with pm.Model() as model:
        index = pm.Data("g", g)
        x_obs = pmp.PrivateData("X", x, bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y", np.clip(x @ [0.5, -0.3], -3, 3), bounds=(-3.0, 3.0))
        alpha = pmp.TruncatedNormal("alpha", 0.0, 1.0, lower=-2.0, upper=2.0, shape=3)
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=2.0)
        pm.Normal("obs", alpha[index] + x_obs @ w, 0.3, observed=y_obs)
    private = pmp.privatize(model, 3.0, delta=1e-6, secure=False, random_seed=1)
    graphs = [private.logp(), *private.deterministics]
    assert not check_public_indices(graphs, "the privatised model", model=private)


# -- the seventh review -----------------------------------------------------------------------


class _Window(AllocDiag):
    """A subclass of PyTensor's diagonal whose inner graph indexes past its axis."""

    def build_inner_graph(self, d, mu):
        return [d[pt.constant(np.arange(-1000, 1000)) + pt.cast(0 * mu, "int64")]]


def test_only_pytensors_own_diagonal_is_trusted_to_index_within_its_axis():
    """A subclass of AllocDiag carrying its own inner graph kept Numba: 16 of 16 records."""
    _, private = _privatised_mean()
    with private:
        d = pm.Data("d", np.linspace(0.5, 0.6, 16))
        window = _Window(axis1=0, axis2=1, offset=0)(d, private["mu"])
        pm.Deterministic("window", window)
        assert check_public_indices(private.deterministics, "w", model=private)
        with pytest.raises(IndexError):
            pmp.sample(2, tune=0, step=pm.Metropolis([private["mu"]]), **RUN)
    assert not check_public_indices([pt.diag(pt.dvector("v"))], "w")


class _Shift(Op):
    """A user operation claiming PyTensor's module, returning the raw array it names."""

    __module__ = "pytensor.tensor.basic"
    __props__ = ()

    def make_node(self, z):
        z = pt.as_tensor_variable(z)
        return Apply(self, [z], [pt.dvector()])

    def perform(self, node, inputs, out):
        out[0][0] = X + 0.0 * inputs[0]


def test_a_class_claiming_a_librarys_module_is_read_as_the_users():
    """``__module__ = "pytensor.tensor.basic"`` on a user Op (12 of 12 records in a
    Deterministic), or ``"pymc.step_methods.metropolis"`` on a pm.Metropolis subclass whose
    astep wrote the records into the draws (20 of 20): read as the user's code."""
    model = _normal_model()
    with model:
        pm.Deterministic("shifted", _Shift()(model["mu"] + pt.zeros(X.size)))
    with pytest.raises(UnsupportedModelError, match="an array holding private values"):
        pmp.analyze(model)
    assert not defined_in(_Shift, ("pytensor",))
    assert defined_in(AllocDiag, ("pytensor",)) and defined_in(np.mean, ("numpy",))
    spoofed = lambda: X  # noqa: E731
    spoofed.__module__ = "numpy"
    assert not defined_in(spoofed, ("numpy",))


# -- the eighth review ------------------------------------------------------------------------


def _replay(state, rng=None):
    """A proposal replaying the raw array ``X`` (the data given to PrivateData) by name."""
    state[0] += 1
    return np.array([X[(state[0] - 1) % X.size]])


def test_a_bound_method_or_partial_a_step_holds_is_read():
    """pm.Metropolis(proposal_dist=factory) keeps the factory and what it built; a partial or
    a bound method of the user's code, skipped as a library's object, released 20 of 20
    records in the jumps of a flat variable at ε = 0."""
    _, private = _privatised_mean()
    with private:
        z = pm.Flat("z")
        for factory in (
            functools.partial(lambda S: functools.partial(_replay, [0])),
            lambda S: functools.partial(_replay, [0]).__call__,
        ):
            step = pm.Metropolis([z], proposal_dist=factory, tune=False)
            with pytest.raises(UnsupportedModelError, match="an array holding private values"):
                pmp.sample(2, tune=0, step=[step, pm.Slice([private["mu"]])], **RUN)


def test_a_python_function_wrapped_as_a_ufunc_is_not_read_as_numpys():
    """np.frompyfunc(lambda i: X[i], 1, 1) is a ufunc calling the user's function: 12 of 12
    records through an as_op at ε = 0."""
    take = np.frompyfunc(lambda i: X[int(i)], 1, 1)
    assert not read_as_it_is(take) and read_as_it_is(np.add)

    class Words(str):
        def read(self):
            return X

    assert not read_as_it_is(Words("x")) and read_as_it_is("x")
