"""The leak guard: private data reaches a model through its observed likelihoods only.

The privacy analysis bounds the observed likelihoods alone. `refuse_private_paths` refuses
every other door from the private values (every `PrivateData`, every observed variable and its
value) into a model: a Deterministic, a Potential, a prior, a symbolic initial value, or a
shape computed from private values (`shape_is_public`). `check_initial_values` refuses numeric
initial values outside their prior's support, where PyMC's failure message would list the
observed log-densities. `reads_private_data` decides from the graph whether a model reads raw
private data at all (and so which route samples it). All of them read the graph and public
constants only, before any data is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pymc as pm
import pytensor.scalar as ps
from pymc.pytensorf import constant_fold
from pytensor.compile.ops import ViewOp
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import ancestors, graph_inputs
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.random.basic import CategoricalRV
from pytensor.tensor.shape import Shape, Shape_i

from pymc_private.data import declaration, private_data
from pymc_private.errors import UnsupportedModelError
from pymc_private.support import parameter_support

__all__ = [
    "check_initial_values",
    "is_view",
    "only_constants",
    "private_sources",
    "private_value_inputs",
    "reads_private_data",
    "refuse_private_paths",
    "shape_is_public",
    "strip_casts",
]


def reads_private_data(model: pm.Model | None = None) -> bool:
    """Whether the model reads raw private data: it observes any value (observed values are
    private, :ref:`privacy-model-private-data`), or some `PrivateData` is an ancestor of a
    prior, a Potential or a Deterministic (through its values or through a shape computed from
    them). The graph decides the route (:ref:`privacy-model-graph`): a model that reads raw data
    is sampled by private steps and pays per draw, whatever else it holds (released statistics
    included); one that reads only released statistics is sampled for free."""
    model = pm.modelcontext(model)
    if model.observed_RVs:
        # An observed value is private data (:ref:`privacy-model-private-data`): next to
        # PrivateData it must be declared as such (`analyze` says so), and a privatised model
        # has none of its own.
        return True
    outputs = [
        *model.free_RVs,
        *model.observed_RVs,
        *(model.rvs_to_values[rv] for rv in model.observed_RVs),
        *model.potentials,
        *model.deterministics,
    ]
    # Any `PrivateData`, this model's or another's (a privatised model extended with the raw
    # model's data reads it as much as its own would).
    return any(declaration(variable) is not None for variable in ancestors(outputs))


def refuse_private_paths(model: pm.Model | None = None) -> None:
    """Refuse every way private data can reach a model other than its observed likelihoods.

    The privacy analysis bounds the observed likelihoods only, so private values must not
    reach a Deterministic (released with the draws), a Potential (weighs the posterior
    unaccounted), a prior or a symbolic initial value (where the chains start). Private
    values are those of every `PrivateData` and every observed variable: when PyMC evaluates
    a Deterministic, a Potential or a prior it replaces each observed variable by its
    observed data, so ``pm.Deterministic("s", y.sum())`` with ``y = pm.Bernoulli("y", p,
    observed=y_obs)`` releases the sum of ``y_obs``. Dependence on the shapes of declared
    arrays is allowed (n and the record shape are public); the shape of anything computed
    from private values (``pt.nonzero(x_obs)[0].shape[0]``, a boolean mask) is private
    (`shape_is_public`). `analyze` calls this; so should every mechanism that builds on a model's
    logp without going through `analyze`.

    Parameters
    ----------
    model
        The model (default: the model on the context stack).

    Raises
    ------
    UnsupportedModelError
        Naming the Deterministic, Potential, prior or initial value, the private variable
        it reads, and what to remove.
    """
    model = pm.modelcontext(model)
    own = set(model.data_vars)
    graphs = [*model.basic_RVs, *model.deterministics, *model.potentials]
    graphs += [v for v in model.rvs_to_initial_values.values() if isinstance(v, Variable)]
    for variable in graph_inputs(graphs):
        if variable not in own and declaration(variable) is not None:
            raise UnsupportedModelError(
                f"The model reads PrivateData `{variable.name}` of another model, where neither "
                "its ledger nor this analysis sees it as private (its values would count as "
                "public). Declare it in this model with pmp.PrivateData."
            )
    sources = private_sources(model)
    made_by = _compute_p_deterministics(model)
    doors = [
        *(
            (
                f"The prior of `{rv.name}`",
                list(rv.owner.inputs),
                "a prior must not be computed from the private data. Give "
                f"`{rv.name}` public parameters (constants or other free variables)",
            )
            for rv in model.free_RVs
        ),
        *(
            (
                f"The initial value of `{rv.name}`",
                [initval],
                "the chains would start at a point computed from the private data. Give "
                f"`{rv.name}` a constant initval or none",
            )
            for rv, initval in model.rvs_to_initial_values.items()
            if isinstance(initval, Variable)
        ),
        *(
            (
                f"Deterministic `{variable.name}`",
                [variable],
                "it would be released with the draws outside the analysed likelihood. "
                + (
                    "PyMC made it (pm.OrderedLogistic and pm.OrderedProbit add the category "
                    f"probabilities of `{variable.name.removesuffix('_probs')}` as a "
                    "Deterministic by default): pass compute_p=False to turn it off"
                    if variable in made_by
                    else "Remove it, or compute it from the parameters only"
                ),
            )
            for variable in model.deterministics
        ),
        *(
            (
                f"Potential `{variable.name}`",
                [variable],
                "it would weigh the posterior outside the analysed likelihood. Remove it, "
                "or express the data's role as an observed likelihood on PrivateData",
            )
            for variable in model.potentials
        ),
    ]
    for what, outputs, fix in doors:
        touched = private_value_inputs(outputs, sources)
        if touched:
            raise UnsupportedModelError(f"{what} depends on {touched[0]}: {fix}.")


def _compute_p_deterministics(model: pm.Model) -> set[Variable]:
    """The Deterministics PyMC adds itself: ``pm.OrderedLogistic(name, ..., compute_p=True)``
    (and `OrderedProbit`) registers ``name_probs``, the p of the Categorical it returns."""
    made_by = set()
    for rv in [*model.observed_RVs, *model.free_RVs]:
        probs = model.named_vars.get(f"{rv.name}_probs")
        if (
            probs in model.deterministics
            and isinstance(rv.owner.op, CategoricalRV)
            and probs in ancestors(rv.owner.inputs)
        ):
            made_by.add(probs)
    return made_by


def check_initial_values(model: pm.Model | None = None) -> None:
    """Refuse numeric initial values (``initval=``) that are not finite or not strictly inside
    the support of their prior (`pymc_private.support.parameter_support`).

    An initial value is public (the user's choice), but it is where every chain starts. A
    non-finite value, or one on or beyond the boundary of the support (which the sampler's
    transform maps to ±∞), makes PyMC fail when sampling starts, with a message that lists
    the log-density of every variable at that point, the observed ones (computed from the
    private data) included. Checked from the constants alone, before any data is read. A
    symbolic initial value is checked when it is built from constants only; one that reads
    private data is refused by `refuse_private_paths`, and one that reads free variables is
    left to PyMC. `analyze` calls this.

    Interior means: ``lower < value < upper`` elementwise for a continuous variable
    (``lower <= value <= upper`` for a discrete one), every entry above the minimum
    probability and a sum of 1 on a simplex, and a norm below the radius on a ball.

    Parameters
    ----------
    model
        The model (default: the model on the context stack).

    Raises
    ------
    UnsupportedModelError
        Naming the variable, its support and what to change.
    """
    model = pm.modelcontext(model)
    for rv in model.free_RVs:
        initval = model.rvs_to_initial_values.get(rv)
        if initval is None or isinstance(initval, str):
            continue
        if isinstance(initval, Variable):
            if not only_constants(initval):
                continue
            initval = constant_fold([initval])[0]
        problem = _initial_value_problem(rv, np.asarray(initval, dtype=np.float64))
        if problem is not None:
            raise UnsupportedModelError(
                f"The initial value of `{rv.name}` {problem}: the chains would start outside "
                f"the prior. Give `{rv.name}` an initval strictly inside the support of its "
                "prior, or none (pymc-private's truncated priors start inside their support on "
                "their own)."
            )


def _initial_value_problem(rv: Variable, value: np.ndarray) -> str | None:
    """What is wrong with a constant initial value of ``rv``, or None."""
    if not np.all(np.isfinite(value)):
        return "is not finite (NaN or infinite)"
    try:
        support = parameter_support(rv)
    except UnsupportedModelError:
        return None
    if support is None:
        return None
    shape = support.lower.shape
    try:
        value = np.broadcast_to(value, shape)
    except ValueError:
        return f"has shape {value.shape}, which does not broadcast to the variable's {shape}"
    lower, upper = support.lower, support.upper
    if rv.dtype.startswith(("int", "uint")):
        outside = (value < lower) | (value > upper)
        what = "lies outside the support {} of its prior{}"
    else:
        outside = (value <= lower) | (value >= upper)
        what = (
            "is not strictly inside the support {} of its prior{} (a point on its boundary "
            "is infinite in the sampler's unconstrained space)"
        )
    if outside.any():
        first = tuple(int(i) for i in np.argwhere(outside)[0])
        at = f" at index {first}" if first else ""
        return what.format(f"[{lower[first]:.6g}, {upper[first]:.6g}]", at)
    if support.simplex_min_prob is not None and not np.allclose(
        value.sum(axis=-1), 1.0, rtol=0.0, atol=1e-9
    ):
        return "does not sum to 1 along its last axis, the simplex of its prior"
    if support.radius is not None and np.any(np.sqrt(np.sum(value**2, axis=-1)) >= support.radius):
        return f"has a norm of at least the radius {support.radius:.6g} of its prior's ball"
    return None


def private_sources(model: pm.Model) -> dict[Variable, str]:
    """Every variable whose value is private data, with how a message names it: each
    `PrivateData`, each observed variable and each observed value."""
    specs = private_data(model)
    sources = {v: f"PrivateData `{v.name}`" for v in model.data_vars if v.name in specs}
    for rv in model.observed_RVs:
        sources.setdefault(model.rvs_to_values[rv], f"the observed data of `{rv.name}`")
        sources[rv] = f"the observed variable `{rv.name}` (PyMC evaluates it at its observed data)"
    return sources


def private_value_inputs(outputs: Sequence[Variable], sources: Mapping[Variable, str]) -> list[str]:
    """How ``sources`` names the private variables whose values ``outputs`` depend on,
    directly or through a shape that is not public (`shape_is_public`)."""
    found: list[str] = []
    seen: set = set()
    stack = list(outputs)
    while stack:
        variable = stack.pop()
        if variable in seen:
            continue
        seen.add(variable)
        if variable in sources:
            found.append(sources[variable])
            continue
        owner = variable.owner
        if owner is None:
            continue
        if isinstance(owner.op, Shape | Shape_i) and shape_is_public(owner.inputs[0], sources):
            continue
        stack.extend(owner.inputs)
    return found


def shape_is_public(variable: Variable, declared) -> bool:
    """Whether the shape of ``variable`` is public: it is fixed in its type, or it is a
    declared array (a `PrivateData`, an observed variable or its value: n and the record
    shape are public in bounded DP). The shape of anything computed from private values
    (``nonzero``, a boolean mask, ``unique`` ...) is itself private."""
    if all(length is not None for length in variable.type.shape):
        return True
    return strip_casts(variable) in declared


def _is_cast(op) -> bool:
    return is_view(op) or (
        isinstance(op, Elemwise) and isinstance(op.scalar_op, ps.Cast | ps.Identity)
    )


def is_view(op) -> bool:
    """The identity a `pm.Deterministic` wraps its expression in."""
    return isinstance(op, ViewOp)


def strip_casts(variable: Variable) -> Variable:
    while variable.owner is not None and _is_cast(variable.owner.op):
        variable = variable.owner.inputs[0]
    return variable


def only_constants(variable: Variable) -> bool:
    return all(isinstance(i, Constant) for i in graph_inputs([variable]))
