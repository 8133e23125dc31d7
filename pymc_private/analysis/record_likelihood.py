"""Each record's log-likelihood, separated from a model's graph: what the pay-per-draw route
`pmp.PrivateMetropolis` clips record by record (`record_log_likelihood`), the checks of what
it samples, and the sentence that names that route where the analysis refuses a model it runs
(`clipped_route_note`). Reads graphs only, never data."""

from __future__ import annotations

import pymc as pm
import pytensor.scalar as ps
import pytensor.scalar.math as psm
import pytensor.tensor as pt
from pymc.distributions.mixture import MixtureRV
from pymc.logprob.utils import CheckParameterValue
from pymc.vartypes import discrete_types
from pytensor.compile.builders import SymbolicOp
from pytensor.compile.ops import FromFunctionOp
from pytensor.graph.basic import Variable
from pytensor.graph.op import HasInnerGraph
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors, applys_between, graph_inputs
from pytensor.scalar.loop import ScalarLoop
from pytensor.tensor.basic import Alloc, Join
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from pytensor.tensor.linalg import SolveBase
from pytensor.tensor.math import Dot
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.shape import Shape, Shape_i, SpecifyShape
from pytensor.tensor.special import LogSoftmax, Softmax
from pytensor.tensor.subtensor import AdvancedSubtensor, Subtensor, indices_from_subtensor

from pymc_private.analysis.leak_guard import pymc_log_density, strip_casts
from pymc_private.data.declaration import declaration, private_data, private_record_count
from pymc_private.dp.barker import barker_epsilon
from pymc_private.dp.events import subsampled_gaussian_epsilon
from pymc_private.errors import DataBoundsError, UnsupportedModelError
from pymc_private.priors.support import public_shape

__all__ = [
    "checked_vars",
    "clipped_route_note",
    "private_data_vars",
    "record_log_likelihood",
    "split_logp",
]


def clipped_route_note(model: pm.Model) -> str:
    """The sentence that ends a refusal of the analysis when ``PrivateMetropolis(clip=c)``
    samples the model all the same, else "".

    That route needs no bound of L: it needs every free variable continuous and each record's
    log-likelihood on its own (`record_log_likelihood`), which the model's graph decides
    (never its data), so whether the sentence is there reveals nothing private. Its cost is
    `pymc_private.dp.barker.barker_epsilon` of c at temperature T (what
    `PrivateMetropolis.cost` charges), named in words and at c = T = 1; and the chain cost of
    its Poisson-subsampled variant (`pymc_private.dp.events.subsampled_gaussian_epsilon`) at
    σT/c = 320, a public example.
    """
    try:
        vars = checked_vars(model, model.value_vars)
        _, observed = split_logp(model, vars)
        if not observed:
            return ""
        record_log_likelihood(model, observed, private_data_vars(model))
    except (UnsupportedModelError, NotImplementedError):  # PyMC derives no log-density
        return ""
    subsampled = subsampled_gaussian_epsilon(0.01, 3.2, 1e-6, 3000)
    return (
        "pmp.PrivateMetropolis(clip=c) samples this model: it clips each record's "
        "log-likelihood ratio to ±c, so one step costs ε = 2c/T + 2^-43 "
        f"(ε = {barker_epsilon(1.0, 1.0):.6g} per step at c = 1 and temperature T = 1), "
        "and the chain targets the clipped posterior. With sampling_rate=q and "
        "noise_scale=σ as well, each step is a Gaussian-noised test on a Poisson subsample "
        "(noise multiplier z = σqT/c), composed over the chain by Rényi DP: 2 chains × 1500 "
        f"steps cost ε = {subsampled:.3g} at δ = 1e-6 when σT/c = 320, for any q ≥ 0.01 (z ≥ 3.2)."
    )


def checked_vars(model: pm.Model, vars) -> list[Variable]:
    """The value variables of ``vars``, refusing anything but continuous free variables."""
    if not isinstance(vars, list | tuple):
        vars = [vars]
    value_vars = []
    for var in vars:
        if var in model.rvs_to_values and var in model.free_RVs:
            var = model.rvs_to_values[var]
        if var not in model.value_vars:
            name = getattr(var, "name", None) or repr(var)
            raise UnsupportedModelError(
                f"PrivateMetropolis samples free random variables only; `{name}` is not one "
                "of this model (observed variables, data and Deterministics are not sampled)."
            )
        if var.dtype in discrete_types:
            raise UnsupportedModelError(
                f"PrivateMetropolis proposes a Gaussian random walk and cannot sample the "
                f"discrete variable `{model.values_to_rvs[var].name}`; use pmp.PrivateGibbs."
            )
        value_vars.append(var)
    return value_vars


def private_data_vars(model: pm.Model) -> set[Variable]:
    specs = private_data(model)
    if not specs:
        raise UnsupportedModelError(
            "PrivateMetropolis needs the sensitive data declared with "
            "pmp.PrivateData(name, value, bounds=(lower, upper)) and observed through it; "
            "this model has no PrivateData."
        )
    return {v for v in model.data_vars if v.name in specs}


def split_logp(model: pm.Model, vars: list[Variable]) -> tuple[Variable, list[Variable]]:
    """The log prior (Jacobians and public Potentials included) and the observed variables of
    Λ that involve ``vars``; terms that do not involve them cancel in Λ and are left out."""

    def involves(term: Variable) -> bool:
        return any(a in vars for a in ancestors([term]))

    terms = model.logp([*model.free_RVs, *model.potentials], sum=False)
    priors = [
        var
        for var, term in zip([*model.free_RVs, *model.potentials], terms, strict=True)
        if involves(term)
    ]
    observed = [
        rv
        for rv, term in zip(
            model.observed_RVs, model.logp(model.observed_RVs, sum=False), strict=True
        )
        if involves(term)
    ]
    return model.logp(priors, jacobian=True), observed


def record_log_likelihood(
    model: pm.Model, observed: list[Variable], private: set[Variable]
) -> Variable:
    """The vector (ℓ(x_i; θ))_i: elementwise log-likelihood summed over non-record axes.

    Each observed node must be a batch of independent draws along axis 0 whose value and
    parameters take row i from row i of the `PrivateData` only (or are public); otherwise
    the records could not be separated, and neither the clip of each record's ratio nor
    the step's exact sum over records would bound what one record changes.

    What is proved, and on which graph: for a distribution whose log-density is PyMC's own
    (`pymc_log_density`: a PyMC or PyTensor random variable or mixture, its ``logp`` the
    one PyMC registers), PyMC's log-density of a batch is the sum of independent terms over
    its batch axes, so it suffices that the value and the parameters are record-aligned
    (`_record_aligned`). For any other (a `pm.CustomDist` with a Python ``logp``, one built
    by ``dist=``, a user's random variable), the log-density graph the step compiles is
    read itself: row i of it must be computed from row i of the private data only, by the
    operations `_keeps_records` proves row-preserving; an operation it does not know (a
    Python ``as_op``, a Scan, a reduction or shift over the records) is refused. Either way
    the vector's length is asserted to be n (public), so no operation can repeat a record.
    """
    aligned: dict[Variable, bool | None] = {}
    # PyMC evaluates an observed variable at its observed data wherever another node reads
    # it: it is aligned exactly as its value is, and that value must be records (observed
    # values are private data, whatever holds them).
    for rv in model.observed_RVs:
        aligned[rv] = _record_aligned(model.rvs_to_values[rv], private, aligned)
        if aligned[rv] is not True:
            raise UnsupportedModelError(
                f"The observed `{rv.name}` does not observe PrivateData row by row, but its "
                "observed values are private data all the same (PyMC evaluates it at them "
                "wherever the model reads it): declare them with pmp.PrivateData(name, values, "
                "bounds=...), records on axis 0."
            )
    written: list[Variable] = []
    for rv in observed:
        op = rv.owner.op
        if not pymc_log_density(rv, model):
            written.append(rv)
            continue
        if isinstance(op, MixtureRV) and op.ndim_supp == 0:
            # A mixture of scalar components: record i's log-likelihood is
            # log Σ_k w_k p_k(x_i), which reads row i of the data only, provided no weight or
            # component reads private data.
            separable = (
                rv.ndim >= 1
                and _record_aligned(model.rvs_to_values[rv], private, aligned) is True
                and all(_record_aligned(i, private, aligned) is False for i in rv.owner.inputs)
            )
            if not separable:
                raise UnsupportedModelError(
                    f"PrivateMetropolis needs each record's log-likelihood on its own: the "
                    f"mixture `{rv.name}` must observe PrivateData row by row, with weights "
                    "and components that read no private data."
                )
            continue
        if not isinstance(op, RandomVariable):  # pm.Censored, pm.Truncated: read the graph
            written.append(rv)
            continue
        batch_ndim = rv.ndim - op.ndim_supp
        separable = (
            batch_ndim >= 1
            and _record_aligned(model.rvs_to_values[rv], private, aligned) is True
            and all(
                (status := _record_aligned(param, private, aligned)) is False
                or (status is True and param.ndim == batch_ndim + core_ndim)
                for param, core_ndim in zip(op.dist_params(rv.owner), op.ndims_params, strict=True)
            )
        )
        if not separable:
            raise UnsupportedModelError(
                f"PrivateMetropolis needs each record's log-likelihood on its own, but the "
                f"observed `{rv.name}` does not observe PrivateData row by row (records on axis 0; "
                "parameters public or built from the same row of the data by elementwise "
                "operations, indexing of public tensors and x @ w)."
            )
    terms = model.logp(observed, sum=False)
    # PyMC guards a log-density with CheckParameterValue, which turns *every* record's term
    # into −∞ when the parameter of *one* record leaves its domain (its condition is reduced
    # with `all` over the records): a record would then move all n terms. Without the guard
    # an invalid parameter makes that record's own term NaN or ±∞, which the clip bounds.
    # One guard at a time: a mixture's guards are nested, which a joint replacement refuses.
    # Every guard of the graph (PyTensor 3 keeps those of constant parameters too, e.g. of a
    # mixture component Normal(0, 1), which reads the data and no free variable).
    while check := next(
        (
            n
            for n in applys_between(graph_inputs(terms), terms)
            if isinstance(n.op, CheckParameterValue)
        ),
        None,
    ):
        terms = graph_replace(terms, {check.outputs[0]: check.inputs[0]}, strict=False)
    for rv, term in zip(observed, terms, strict=True):
        if rv in written and _record_aligned(term, private, aligned) is not True:
            raise UnsupportedModelError(
                f"PrivateMetropolis needs each record's log-likelihood on its own, and the "
                f"log-density of `{rv.name}` (a {type(rv.owner.op).__name__}) does not compute "
                "row i from row i of the PrivateData alone: it reduces, shifts, sorts or "
                "indexes across the records, or uses an operation whose rows cannot be read "
                "(a Python as_op, a Scan). Write its logp elementwise in the records (a "
                "centring or normalisation over the batch makes one record move every term), "
                "or move what is shared by all records into a public pm.Potential."
            )
    per_record = [
        term.sum(axis=tuple(range(1, term.ndim))) if term.ndim > 1 else term for term in terms
    ]
    return pt.specify_shape(pt.add(*per_record), (private_record_count(model),))


def _record_aligned(
    var: Variable, private: set[Variable], memo: dict[Variable, bool | None]
) -> bool | None:
    """Whether row i of ``var`` (axis 0) comes from row i of the private data only.

    True: axis 0 is the record axis and row i depends on data row i (and public values).
    False: ``var`` involves no private data. None: it mixes records, or its structure is not
    one this check recognises.
    """
    if var in memo:
        return memo[var]
    if var in private:
        return True
    if var.owner is None:
        return False
    if isinstance(var.owner.op, Shape | Shape_i):
        # The shapes of declared arrays are public, and so are those of what is computed
        # from them row by row (True) or without their values (False): every operation
        # `_keeps_records` accepts has an output shape computed from its inputs' shapes and
        # public values alone. Any other shape may hold a count of private values shared by
        # every record (refused: not separable).
        status = _record_aligned(var.owner.inputs[0], private, memo)
        memo[var] = None if status is None else False
        return memo[var]
    inputs = [_record_aligned(i, private, memo) for i in var.owner.inputs]
    if all(status is False for status in inputs):
        memo[var] = False
    elif any(status is None for status in inputs):
        memo[var] = None
    else:
        memo[var] = _keeps_records(var, inputs, private) or None
    return memo[var]


def _keeps_records(var: Variable, inputs: list[bool], private: set[Variable]) -> bool:
    """Whether ``var``'s op maps record-aligned inputs (``inputs[k]`` True) row by row.

    Only operations of PyTensor's (and PyMC's) own classes are read: an elementwise or
    blockwise operation runs its scalar or core operation on each element or batch index
    alone only when that operation is PyTensor's (`_pytensor_op`); a user's ``ScalarOp`` or a
    Python function (``wrap_py``, ``as_op``) may keep state across calls, so it is refused.
    """
    op = var.owner.op
    first = inputs[0]
    if isinstance(op, Elemwise):
        return _pytensor_op(op.scalar_op) and _cannot_raise(op.scalar_op, var.dtype)
    if isinstance(op, DimShuffle):
        return op.new_order[:1] == (0,)
    if isinstance(op, Join):
        # Pieces joined along an axis other than the records' put row i next to row i.
        return op.axis != 0
    if isinstance(op, Softmax | LogSoftmax):
        return op.axis is not None and 0 not in op.axis
    if isinstance(op, CAReduce):
        return op.axis is not None and 0 not in op.axis and _pytensor_op(op.scalar_op)
    if isinstance(op, Subtensor):
        leading = op.idx_list[0] if op.idx_list else slice(None)
        return first and leading == slice(None) and not any(inputs[1:])
    if isinstance(op, AdvancedSubtensor):
        # public[index, ...] with a record-aligned first index: the indices broadcast
        # together, so none may have more axes than it, nor an aligned one fewer. A boolean
        # index selects as many rows as it holds True values: its shape is private. Slices
        # are kept in the op's idx_list, their bounds among the inputs.
        aligned = dict(zip(var.owner.inputs, inputs, strict=True))
        leading, *others = indices_from_subtensor(var.owner.inputs[1:], op.idx_list)
        if first:
            # aligned[:, ..., public, ...]: one public advanced index after the record axis's
            # full slice selects within each row (two would move their axes to the front).
            advanced = [index for index in others if not isinstance(index, slice)]
            return (
                _full_slice(leading)
                and len(advanced) == 1
                and not aligned[advanced[0]]
                and all(_full_slice(index) for index in others if isinstance(index, slice))
            )
        if isinstance(leading, slice) or not aligned[leading]:
            return False
        for index in [leading, *others]:
            if isinstance(index, slice):
                bounds = (index.start, index.stop, index.step)
                if any(aligned[bound] for bound in bounds if bound is not None):
                    return False
            elif index.dtype == "bool" or not (
                index.ndim <= leading.ndim and (not aligned[index] or index.ndim == leading.ndim)
            ):
                return False
        return _indices_within(var.owner, aligned, private)
    if isinstance(op, Dot) or (isinstance(op, Blockwise) and isinstance(op.core_op, Dot)):
        # private @ public: row i of the product is row i of the private factor times it.
        x, w = var.owner.inputs
        return first and not inputs[1] and x.ndim >= 2 and w.ndim <= x.ndim
    if isinstance(op, SpecifyShape):  # an assertion of public shapes: the values as they are
        return first and not any(inputs[1:])
    if isinstance(op, Alloc):
        # A value broadcast to a shape of public values, without new leading axes: row i
        # stays row i (PyTensor refuses to broadcast an axis not marked broadcastable).
        return first and not any(inputs[1:]) and var.owner.inputs[0].ndim == var.ndim
    if isinstance(op, Blockwise):
        # The core operation runs on each batch index alone, so row i of the output is
        # computed from row i of the inputs when the records are the leading batch axis of
        # every aligned input and of the output. Only solves whose records are the right-hand
        # side are read: a system's values never make them raise, where another core
        # operation could (an inverse of a singular record, an index beyond its axis).
        batch = var.ndim - len(op.outputs_sig[var.owner.outputs.index(var)])
        return (
            isinstance(op.core_op, SolveBase)
            and _pytensor_op(op.core_op)
            and not inputs[0]
            and batch >= 1
            and all(
                not aligned or value.ndim - len(sig) == batch
                for value, sig, aligned in zip(var.owner.inputs, op.inputs_sig, inputs, strict=True)
            )
        )
    if isinstance(op, SymbolicOp) and _pytensor_op(op):
        # PyTensor's symbolic operations (LogSumExp, LogAddExp, XLogY, ... in PyTensor 3's
        # log-densities) hold the graph they stand for, built from the inputs' types: row i
        # of their output is read on that graph, its inputs aligned as the node's are.
        inner = dict(zip(op.inner_inputs, inputs, strict=True))
        output = op.inner_outputs[var.owner.outputs.index(var)]
        return _record_aligned(output, private, inner) is True
    return False


# Scalar operations that cannot raise on any integer inputs (integer division and modulo
# raise on a zero divisor, an integer power on a negative exponent).
_SAFE_INTEGER_OPS = (
    ps.Add,
    ps.Sub,
    ps.Mul,
    ps.Neg,
    ps.Abs,
    ps.Maximum,
    ps.Minimum,
    ps.Sign,
    ps.Switch,
    ps.Clip,
    ps.Cast,
    ps.Identity,
    ps.Second,
    ps.AND,
    ps.OR,
    ps.XOR,
    ps.Invert,
    ps.GT,
    ps.GE,
    ps.LT,
    ps.LE,
    ps.EQ,
    ps.NEQ,
    ps.IsNan,
    ps.IsInf,
)


# Floating-point operations whose compiled code can crash the process or loop without end
# on some finite inputs (BetaInc's and Hyp2F1's C code segfault when a + b overflows; a
# ScalarLoop iterates to convergence): whether a step ends would depend on one record.
_MAY_CRASH = (psm.BetaInc, psm.BetaIncInv, psm.Hyp2F1, ScalarLoop)


def _cannot_raise(scalar_op, dtype: str) -> bool:
    """Whether an elementwise scalar operation with outputs of ``dtype`` cannot raise on any
    value of its inputs: compiled floating-point arithmetic gives NaN or ±∞ instead (and the
    step evaluates under ``np.errstate(all="ignore")``), integer and boolean arithmetic (a
    division of booleans raises on False as one of integers on 0) only in
    `_SAFE_INTEGER_OPS`; never those of `_MAY_CRASH`."""
    if isinstance(scalar_op, ps.Composite):
        return all(
            _cannot_raise(node.op, node.outputs[0].dtype) for node in scalar_op.fgraph.toposort()
        )
    if isinstance(scalar_op, _MAY_CRASH):
        return False
    return not dtype.startswith(("int", "uint", "bool")) or isinstance(scalar_op, _SAFE_INTEGER_OPS)


def _full_slice(index) -> bool:
    return isinstance(index, slice) and index == slice(None)


def _pytensor_op(op) -> bool:
    """Whether ``op`` (a graph, scalar or core operation) is of PyTensor's or PyMC's own
    classes, not a Python function's wrapper, and so is everything inside it (a `Composite`'s
    scalar graph, an inner graph)."""
    if isinstance(op, FromFunctionOp) or not type(op).__module__.startswith(("pytensor.", "pymc.")):
        return False
    if isinstance(op, Elemwise | CAReduce):
        return _pytensor_op(op.scalar_op)
    if isinstance(op, Blockwise):
        return _pytensor_op(op.core_op)
    inner = getattr(op, "fgraph", None) if isinstance(op, ps.Composite) else None
    if isinstance(op, HasInnerGraph):
        inner = op.fgraph
    if inner is None:
        return True
    return all(_pytensor_op(node.op) for node in inner.toposort())


def _indices_within(node, aligned: dict[Variable, bool], private: set[Variable]) -> bool:
    """Whether every record-aligned index of an advanced-indexing node is a `PrivateData`
    (through casts) of one integer per record whose declared bounds lie in [0, length − 1] of
    the public axis it indexes. Any other computed index could leave the axis for some records
    only, and whether the step raises would then depend on one record (and PyTensor's Numba
    backend, which does not check indices, would read whatever memory it points at)."""
    indexed, *flat = node.inputs
    for axis, index in enumerate(indices_from_subtensor(flat, node.op.idx_list)):
        if not isinstance(index, slice) and aligned[index]:
            data = strip_casts(index)
            spec = declaration(data) if data in private else None
            if spec is None or not spec.integer or spec.record_shape != ():
                return False
            length = public_shape(indexed)[axis]
            if not (0 <= int(spec.lower) and int(spec.upper) <= length - 1):
                raise DataBoundsError(
                    f"PrivateData `{spec.name}` indexes axis {axis} (length {length}) of a "
                    f"public tensor, but its declared bounds [{int(spec.lower)}, "
                    f"{int(spec.upper)}] reach outside [0, {length - 1}]: one record beyond "
                    "the axis would make the step fail for that record only. Declare "
                    f"bounds=(0, {length - 1}) (or a narrower public range)."
                )
    return True
