"""The leak guard: private data reaches a model through its observed likelihoods only.

The privacy analysis bounds the observed likelihoods alone. `refuse_private_paths` refuses
every other door from the private values (every `PrivateData`, every observed variable and its
value) into a model: a Deterministic, a Potential, a prior, a symbolic initial value, or a
shape computed from private values (`shape_is_public`). `check_initial_values` refuses numeric
initial values outside their prior's support, where PyMC's failure message would list the
observed log-densities. `reads_private_data` decides from the graph whether a model reads raw
private data at all (and so which route samples it). All of them read the graph and public
constants only, before any data is read.

The graphs they read are the graphs that run (`runtime_graphs`), not only the graphs the
model declares: PyMC builds a variable's log-density and its starting point later, from
Python functions a distribution carries (a `pm.CustomDist`'s ``logp``, ``logcdf`` and
``support_point``), which may close over a `PrivateData` that the declared graph never shows.
So the guard builds every free variable's log-density (Jacobian included), every Potential,
every Deterministic and the initial-point expressions exactly as the samplers do, and reads
those. A Python function that runs outside any graph (a `pm.CustomDist`'s ``random``, an
``as_op``) is read through what it refers to (`python_references`): its closure, its
defaults and the globals it names. What it reads by other means (``.get_value()`` on a
variable it finds at run time, a raw array copied into a constant) is a constant of the
model, public by declaration like any number typed into it: declare private data with
`pmp.PrivateData` and use the variable.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.scalar as ps
from pymc.distributions.custom import CustomDistRV, CustomSymbolicDistRV
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.initial_point import make_initial_point_expression
from pymc.logprob.abstract import _logprob
from pymc.logprob.transforms import Transform
from pymc.pytensorf import constant_fold
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.mode import get_mode
from pytensor.compile.ops import FromFunctionOp, ViewOp
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.op import HasInnerGraph
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors, applys_between, graph_inputs
from pytensor.link.c.basic import CLinker
from pytensor.link.vm import VMLinker
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import CAReduce, Elemwise
from pytensor.tensor.random.basic import CategoricalRV
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.random.type import RandomType
from pytensor.tensor.shape import Shape, Shape_i

from pymc_private.analysis.python_code import (
    own_code,
    private_reference,
    private_sources,
    read_as_it_is,
)
from pymc_private.data.declaration import declaration
from pymc_private.errors import UnsupportedModelError
from pymc_private.priors.support import parameter_support

__all__ = [
    "RuntimeGraphs",
    "check_initial_values",
    "is_view",
    "only_constants",
    "private_value_inputs",
    "pymc_log_density",
    "reads_private_data",
    "refuse_private_paths",
    "refuse_side_effects",
    "runtime_graphs",
    "shape_is_public",
    "strip_casts",
]


def reads_private_data(model: pm.Model | None = None) -> bool:
    """Whether the model reads raw private data: it observes any value (observed values are
    private, :ref:`privacy-model-private-data`), or some `PrivateData` is an ancestor of a
    prior, a Potential, a Deterministic, a free variable's log-density or its initial point
    (through its values or through a shape computed from them: `runtime_graphs`), or a Python
    function a distribution carries refers to one (`python_references`). The graph decides the
    route (:ref:`privacy-model-graph`): a model that reads raw data is sampled by private
    steps and pays per draw, whatever else it holds (released statistics included); one that
    reads only released statistics is sampled for free."""
    model = pm.modelcontext(model)
    if model.observed_RVs:
        # An observed value is private data (:ref:`privacy-model-private-data`): next to
        # PrivateData it must be declared as such (`analyze` says so), and a privatised model
        # has none of its own.
        return True
    graphs = runtime_graphs(model)
    outputs = [
        *(value for value in model.rvs_to_initial_values.values() if isinstance(value, Variable)),
        *model.free_RVs,
        *model.potentials,
        *model.deterministics,
        *graphs.log_densities.values(),
        *graphs.initial_points.values(),
    ]
    # Any `PrivateData`, this model's or another's (a privatised model extended with the raw
    # model's data reads it as much as its own would).
    if any(declaration(variable) is not None for variable in ancestors(outputs)):
        return True
    sources = private_sources(model)
    return any(
        private_reference(function, sources) is not None for _, function in graphs.python_functions
    )


@dataclass(frozen=True, eq=False)
class RuntimeGraphs:
    """What sampling a model runs besides its declared graph, built as PyMC builds it.

    Attributes
    ----------
    log_densities
        The log-density of each free variable the user wrote (in the sampling space, its
        Jacobian included), by variable: what `model.logp` compiles, with each
        `pm.CustomDist`'s ``logp`` and ``logcdf`` called.
    observed_log_densities
        The elementwise log-density of each observed variable the user wrote, at its
        observed data, by variable (what the per-draw steps compile).
    initial_points
        The initial point of each free variable the user wrote, in the sampling space, by
        variable: its ``initval``, or its support point (a `pm.CustomDist`'s
        ``support_point`` called), as `model.initial_point` compiles it.
    python_functions
        (what, function) for each Python function that runs outside any graph: a
        `pm.CustomDist`'s ``random`` and every ``as_op`` function in the graphs above.
    """

    log_densities: dict[Variable, Variable]
    observed_log_densities: dict[Variable, Variable]
    initial_points: dict[Variable, Variable]
    python_functions: tuple[tuple[str, Callable], ...]


def runtime_graphs(model: pm.Model) -> RuntimeGraphs:
    """The graphs sampling ``model`` compiles beyond those it declares (`RuntimeGraphs`).

    Built for the variables whose log-density, support point or transform is written by the
    user (`pm.CustomDist`, a random variable or transform of the user's: `_written`). PyMC's
    own log-densities, support points and transforms (and this package's priors) are
    functions of the variable's declared inputs and value, which the checks of the declared
    graph read already, so they are not built again.

    Raises
    ------
    UnsupportedModelError
        PyMC derives no log-density for a user's variable (a `pm.CustomDist` without
        ``logp`` or ``dist``), or cannot build its initial point: no sampler could run it.
    """
    free = [rv for rv in model.free_RVs if _written(model, rv)]
    observed = [rv for rv in model.observed_RVs if _written(model, rv)]
    try:
        terms = model.logp([*free, *observed], sum=False) if free or observed else []
    except NotImplementedError as error:
        raise UnsupportedModelError(
            f"PyMC derives no log-density for a variable of this model ({error}), so nothing "
            "can sample it and the privacy analysis cannot read what it computes: give every "
            "pm.CustomDist a logp= or a dist=."
        ) from None
    try:
        points = make_initial_point_expression(
            free_rvs=free,
            rvs_to_transforms=model.rvs_to_transforms,
            initval_strategies=model.rvs_to_initial_values,
            return_transformed=True,
        )
    except ValueError as error:  # PyMC's refusal of an initval read from other variables
        raise UnsupportedModelError(
            f"PyMC cannot build this model's initial point ({error}): give each free "
            "variable a constant initval or none."
        ) from None
    # PyMC builds the initial points on a clone of the model's graph, whose shared variables
    # are copies holding the same storage: read them as the model's own data variables.
    own = {variable.container: variable for variable in model.data_vars}
    copies = {
        variable: own[variable.container]
        for variable in graph_inputs(points)
        if isinstance(variable, SharedVariable) and variable.container in own
    }
    points = graph_replace(points, copies, strict=False) if copies else points
    functions = [
        (f"The random function of `{rv.name}`", type(rv.owner.op)._random_fn)
        for rv in model.basic_RVs
        if isinstance(rv.owner.op, CustomDistRV) and type(rv.owner.op)._random_fn is not None
    ]
    outputs = [*model.basic_RVs, *model.deterministics, *model.potentials, *terms, *points]
    for op in _operations(outputs):
        if isinstance(op, FromFunctionOp):
            functions.append(
                (f"The Python function of {op} (as_op, wrap_py)", op._FromFunctionOp__fn)
            )
        elif isinstance(op, OpFromGraph):
            # Its gradient (what NUTS compiles) may be a Python function of the user's.
            functions += [
                (f"The gradient override of {op}", override)
                for name, override in vars(op).items()
                if name.endswith("_overrides") and override is not None
            ]
        elif not own_code(type(op)):
            functions.append((f"The operation {op} (a class of the user's)", op))
    return RuntimeGraphs(
        dict(zip(free, terms[: len(free)], strict=True)),
        dict(zip(observed, terms[len(free) :], strict=True)),
        dict(zip(free, points, strict=True)),
        tuple(functions),
    )


def _written(model: pm.Model, rv: Variable) -> bool:
    """Whether a log-density, support point or transform of ``rv`` is the user's code: its op
    is not PyMC's, PyTensor's or this package's with PyMC's registered log-density
    (`pymc_log_density`), or its transform is not of those packages."""
    transform = model.rvs_to_transforms.get(rv)
    own = pymc_log_density(rv, model) or type(rv.owner.op).__module__.startswith("pymc_private.")
    return not own or (transform is not None and not _own_transform(transform))


def _own_transform(transform) -> bool:
    """A transform of PyMC's, PyTensor's or this package's class that holds nothing else of
    the user's: its attributes are numbers, strings, arrays, functions of those packages (an
    `Interval`'s ``bounds_fn``) or such transforms (a `Chain`'s). It then reads only the
    variable's inputs; any other (a callable object, a graph, a transform of the user's) makes
    its log-density and initial point be built and checked."""
    if not own_code(type(transform)):
        return False
    for value in vars(transform).values():
        for item in value if isinstance(value, list | tuple) else [value]:
            if isinstance(item, Transform):
                if not _own_transform(item):
                    return False
            elif not (
                read_as_it_is(item)
                or (isinstance(item, np.ndarray) and item.dtype != object)
                or (isinstance(item, types.FunctionType) and own_code(item))
            ):
                return False
    return True


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
    (`shape_is_public`).

    The declared graph is read first, then the graphs that run (`runtime_graphs`): each free
    variable's log-density (a `pm.CustomDist` ``logp`` or ``logcdf`` closing over private
    data), its initial point (a ``support_point`` closing over it), every observed
    log-density (for `PrivateData` of another model), and the Python functions that run
    outside any graph (a ``random``, an ``as_op``), read through what they refer to.
    `analyze` calls this; so should every mechanism that builds on a model's logp without
    going through `analyze`.

    Parameters
    ----------
    model
        The model (default: the model on the context stack).

    Raises
    ------
    UnsupportedModelError
        Naming the Deterministic, Potential, prior, log-density, initial value or point, or
        Python function, the private variable it reads, and what to change.
    """
    model = pm.modelcontext(model)
    sources = private_sources(model)
    made_by = _compute_p_deterministics(model)
    declared = [
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
    _refuse_other_models(model, [*model.basic_RVs, *(g for _, gs, _ in declared for g in gs)])
    _refuse_doors(declared, sources)
    graphs = runtime_graphs(model)
    refuse_side_effects(model, graphs)
    _refuse_other_models(
        model,
        [
            *graphs.log_densities.values(),
            *graphs.observed_log_densities.values(),
            *graphs.initial_points.values(),
        ],
    )
    _refuse_doors(
        [
            *(
                (
                    f"The log-density of `{rv.name}`",
                    [density],
                    "it would weigh the posterior outside the analysed likelihood (a "
                    "pm.CustomDist's logp or logcdf that closes over private data does). "
                    f"Write the log-density of `{rv.name}` from its value and parameters only",
                )
                for rv, density in graphs.log_densities.items()
            ),
            *(
                (
                    f"The initial point of `{rv.name}`",
                    [point],
                    "the chains would start at a point computed from the private data (a "
                    "pm.CustomDist's support_point that closes over it does). Give "
                    f"`{rv.name}` a constant initval, or a support_point that reads no "
                    "private data",
                )
                for rv, point in graphs.initial_points.items()
            ),
        ],
        sources,
    )
    for what, function in graphs.python_functions:
        reference = private_reference(function, sources)
        if reference is not None:
            raise UnsupportedModelError(
                f"{what} refers to {reference}: it runs in Python, outside any graph the "
                "privacy analysis reads, so nothing bounds what it takes from the data. Pass "
                "what it needs as its arguments (a pm.CustomDist's random receives the "
                "distribution's parameters), or build it from PyTensor operations."
            )


def pymc_log_density(rv: Variable, model: pm.Model) -> bool:
    """Whether PyMC's own log-density runs for the model variable ``rv``: its op and every
    distribution its log-density reads that is no variable of the model (a mixture's
    components, `pm.Truncated`'s base, the random variables inside a symbolic one) are of
    PyMC's or PyTensor's classes, not a `pm.CustomDist` (whose ``logp`` is the user's Python
    function or derived from the user's ``dist``), and their ``logp`` registration is PyMC's.
    """
    stop = [*model.basic_RVs, *model.deterministics, *model.data_vars]
    nodes = [
        v.owner
        for v in ancestors(rv.owner.inputs, blockers=stop)
        if v.owner is not None and v not in stop
    ]
    return all(
        _pymc_op(node.op)
        for node in [rv.owner, *nodes]
        if isinstance(node.op, RandomVariable | SymbolicRandomVariable)
    )


def _pymc_op(op) -> bool:
    """PyMC's own log-density for this op and every random variable of its inner graph."""
    cls = type(op)
    own = (
        cls.__module__.startswith(("pymc.", "pytensor."))
        and not issubclass(cls, CustomDistRV | CustomSymbolicDistRV)
        and _logprob.dispatch(cls).__module__.startswith("pymc.")
    )
    if not own or not isinstance(op, HasInnerGraph):
        return own
    return all(
        _pymc_op(inner)
        for inner in _operations(op.inner_outputs)
        if isinstance(inner, RandomVariable | SymbolicRandomVariable)
    )


def refuse_side_effects(model: pm.Model, graphs: RuntimeGraphs | None = None) -> None:
    """Refuse what every function compiled from the model's graphs (declared, and those PyMC
    builds as it runs: ``graphs``, `runtime_graphs` by default) would do beside computing:

    - a shared variable carrying a ``default_update``, other than a random generator's own
      (the next state of the one random draw that reads it, as PyMC sets it, reading no
      private data: a draw's size can move the generator by a record). PyTensor adds it to
      every function compiled from those graphs, the sampler's and the trace's included, so
      after each call the variable holds whatever the update computes, from any data
      (``k.default_update = x_obs`` released the records through
      ``pm.Deterministic("d", k + 0 * mu)``; a generator's update choosing between two seeded
      states by a record released it in the draws);
    - an operation compiling its own inner graph in a mode whose indexing does not check its
      bounds (``pytensor.scan(..., mode="NUMBA")``): under it an index beyond its axis reads
      the process's memory, whatever mode the sampler runs in.

    Raises
    ------
    UnsupportedModelError
        Naming the variable or operation and what to change.
    """
    graphs = runtime_graphs(model) if graphs is None else graphs
    sources = private_sources(model)
    outputs = [
        *model.basic_RVs,
        *model.deterministics,
        *model.potentials,
        *model.data_vars,
        *graphs.log_densities.values(),
        *graphs.observed_log_densities.values(),
        *graphs.initial_points.values(),
    ]
    for variable in graph_inputs(outputs):
        update = getattr(variable, "default_update", None)
        if not isinstance(variable, SharedVariable) or update is None:
            continue
        if (
            isinstance(variable.type, RandomType)
            and _next_state(variable, update)
            and not _reads_private(update, sources)
        ):
            continue
        raise UnsupportedModelError(
            f"`{variable.name or variable}` has a default_update: every function compiled "
            "from the model would overwrite it, from whatever the update reads, as the chains "
            "run. Set it to None (a random generator's may only be the next state of the draw "
            "that reads it), and change data with pm.set_data between runs."
        )
    for op in _operations(outputs):
        mode = getattr(op, "mode", None)
        if mode is None or not isinstance(op, HasInnerGraph):
            continue
        if not isinstance(get_mode(mode).linker, VMLinker | CLinker):
            raise UnsupportedModelError(
                f"A {type(op).__name__} in the model compiles its inner graph with mode "
                f"{mode!r}, which does not check indices (Numba and JAX read past an axis into "
                "the process's memory): leave its mode out, or give PyTensor's C backend."
            )


def _reads_private(graph: Variable, sources: Mapping[Variable, str]) -> bool:
    """Whether ``graph`` reads a private source of the model or any `PrivateData`."""
    return any(v in sources or declaration(v) is not None for v in ancestors([graph]))


def _next_state(rng: Variable, update: Variable) -> bool:
    """Whether ``update`` is the next state of one random draw reading ``rng`` (a random
    variable's, or a symbolic one's generator output)."""
    node = update.owner
    return (
        node is not None
        and isinstance(node.op, RandomVariable | SymbolicRandomVariable)
        and rng in node.inputs
        and update in node.outputs
        and isinstance(update.type, RandomType)
    )


def _refuse_other_models(model: pm.Model, graphs: Sequence[Variable]) -> None:
    """Refuse a `PrivateData` of another model among the inputs of ``graphs``."""
    own = set(model.data_vars)
    for variable in graph_inputs(graphs):
        if variable not in own and declaration(variable) is not None:
            raise UnsupportedModelError(
                f"The model reads PrivateData `{variable.name}` of another model, where neither "
                "its ledger nor this analysis sees it as private (its values would count as "
                "public). Declare it in this model with pmp.PrivateData."
            )


def _refuse_doors(doors, sources: Mapping[Variable, str]) -> None:
    """Refuse the first door (what, graphs, fix) whose graphs read a private source."""
    for what, outputs, fix in doors:
        touched = private_value_inputs(outputs, sources)
        if touched:
            raise UnsupportedModelError(f"{what} depends on {touched[0]}: {fix}.")


def _operations(outputs: Sequence[Variable]) -> Iterator:
    """Every operation computing ``outputs``, and those inside them: the nodes of inner graphs
    (an OpFromGraph's, a symbolic distribution's), a Blockwise's core operation, an
    elementwise operation's scalar operation and a Composite's scalar graph."""
    stack = list(outputs)
    while stack:
        graph = stack
        stack = []
        for node in applys_between(graph_inputs(graph), graph):
            ops = [node.op]
            while ops:
                op = ops.pop()
                yield op
                if isinstance(op, Blockwise):
                    ops.append(op.core_op)
                if isinstance(op, Elemwise | CAReduce):
                    ops.append(op.scalar_op)
                if isinstance(op, ps.Composite):
                    ops.extend(inner.op for inner in op.fgraph.toposort())
                if isinstance(op, HasInnerGraph):
                    stack.extend(op.inner_outputs)


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


def check_initial_values(model: pm.Model | None = None, initvals: Mapping | None = None) -> None:
    """Refuse initial values that are not finite or not strictly inside the support of their
    prior (`pymc_private.priors.support.parameter_support`): the model's own (``initval=``), or
    ``initvals`` (by variable or name, as `pm.sample` takes them) in their place.

    An initial value is public (the user's choice), but it is where every chain starts. A
    non-finite value, or one on or beyond the boundary of the support (which the sampler's
    transform maps to ±∞), makes PyMC fail when sampling starts, with a message that lists
    the log-density of every variable at that point, the observed ones (computed from the
    private data) included. Checked from the constants alone, before any data is read. A
    symbolic initial value of the model is checked when it is built from constants only; one
    that reads private data is refused by `refuse_private_paths`, and one that reads free
    variables is left to PyMC. In ``initvals`` only numbers are taken: a graph or a strategy
    there would build a starting point nothing else reads.
    `analyze` calls this; `pmp.sample` calls it on its ``initvals``.

    Interior means: ``lower < value < upper`` elementwise for a continuous variable
    (``lower <= value <= upper`` for a discrete one), every entry above the minimum
    probability and a sum of 1 on a simplex, and a norm below the radius on a ball.

    Parameters
    ----------
    model
        The model (default: the model on the context stack).
    initvals
        Initial values to check in place of the model's, by variable or name.

    Raises
    ------
    UnsupportedModelError
        Naming the variable, its support and what to change.
    """
    model = pm.modelcontext(model)
    if initvals is None:
        chosen = model.rvs_to_initial_values
    else:
        chosen = {}
        for key, value in initvals.items():
            rv = model[key] if isinstance(key, str) and key in model.named_vars else key
            if rv not in model.free_RVs:
                raise UnsupportedModelError(
                    f"initvals names {key!r}, which is not a free variable of the model."
                )
            if isinstance(value, Variable | str):
                raise UnsupportedModelError(
                    f"The initial value of `{rv.name}` in initvals is {value!r}: give numbers. "
                    "A graph or a strategy there ('support_point', 'prior') would build a "
                    "starting point where nothing reads it for private data; the model's own "
                    "initval= strategies are read."
                )
            chosen[rv] = value
    for rv in model.free_RVs:
        initval = chosen.get(rv)
        if initval is None or isinstance(initval, str):
            continue
        if isinstance(initval, Variable):
            if not only_constants(initval):
                continue
            initval = constant_fold([initval])[0]
        try:
            initval = np.asarray(initval, dtype=np.float64)
        except (TypeError, ValueError):
            raise UnsupportedModelError(
                f"The initial value of `{rv.name}` is not a number or an array of numbers."
            ) from None
        problem = _initial_value_problem(rv, initval)
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
