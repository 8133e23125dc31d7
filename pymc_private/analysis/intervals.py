"""The interval walker: bounds on a model's parameter graphs, read from public quantities only.

Parameters reach a family through interval arithmetic over the graph: a free variable
contributes its prior's support, a constant its value, a group index ``theta[y_obs]`` makes
``y_obs`` part of the record (the parameter may change with the record), and a linear
predictor ``X @ w`` with ``X`` private and ``‖w‖₂ ≤ R`` ranges over ``[−Bx·R, Bx·R]`` with
``Bx = sup ‖x‖₂`` over the declared box; a softmax of entries in ``[a, b]`` has every entry
within the interval of `GraphReader._softmax` (multinomial logit ``softmax(X @ W)``).
Anything the analysis cannot bound is refused with `UnsupportedModelError`.
`pymc_private.analysis.terms.TermReader` reads each observed node with it into the
`LikelihoodTerm` that `pymc_private.analysis.core.analyze` hands to its family.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pymc as pm
import pytensor.scalar as ps
import pytensor.scalar.math as psm
import pytensor.tensor as pt
from pymc.pytensorf import constant_fold
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Variable, equal_computations
from pytensor.graph.op import HasInnerGraph
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import applys_between, graph_inputs
from pytensor.tensor.basic import AllocDiag
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Dot
from pytensor.tensor.special import Softmax
from pytensor.tensor.subtensor import (
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
    indices_from_subtensor,
)

from pymc_private.analysis.leak_guard import (
    is_view,
    only_constants,
    private_value_inputs,
    strip_casts,
)
from pymc_private.analysis.python_code import private_sources
from pymc_private.data.declaration import PrivateDataSpec, declaration, private_data
from pymc_private.errors import (
    DataBoundsError,
    UnsupportedModelError,
)
from pymc_private.families.statistics import (
    Interval,
    read_only,
)
from pymc_private.priors.support import parameter_support, public_shape

__all__ = ["GraphReader", "check_public_indices", "interval_of"]


def check_public_indices(
    outputs: Sequence[Variable],
    where: str,
    model: pm.Model | None = None,
    *,
    inputs_public: bool = False,
) -> bool:
    """Refuse an advanced index of public values (constants or ``pm.Data``) in the graphs of
    ``outputs`` that reaches beyond the axis it indexes (or a boolean mask of another shape),
    and say whether some other advanced index is computed when the graph runs (from free
    variables or arithmetic): only a backend that checks indices may run those.

    PyTensor 3 compiles with Numba by default, which does not check indices: such an index
    reads whatever memory it points at (in a process that holds private data, possibly that
    data) where the C backend raised. Indices computed from free variables are left to their
    priors' supports, and `PrivateData` indices to their declared bounds
    (`GraphReader._check_group_index`); values and shapes here are public, read before
    anything is sampled. ``where`` names the graphs in the refusal; with ``model``, they may
    read its value variables (a log-density), whose shapes are the model's (public);
    ``inputs_public``: every `PrivateData` holds public values (predictions at new inputs).
    """
    shapes = {} if model is None else model.eval_rv_shapes()
    values = {
        v: pt.constant(np.zeros(shapes[v.name], dtype=v.dtype))
        for v in (model.value_vars if model is not None else ())
    }
    computed = False
    for node in applys_between(graph_inputs(outputs), outputs):
        if isinstance(node.op, AdvancedSubtensor | AdvancedIncSubtensor):
            computed |= _check_node_indices(node, where, values, inputs_public=inputs_public)
        elif not computed:
            # An index inside an inner graph (an OpFromGraph's, a Scan's) or a Blockwise's
            # core indexing runs on values of that graph's own: computed.
            computed = _indexes_inside(node.op)
    return computed


_INDEXING = (Subtensor, IncSubtensor, AdvancedSubtensor, AdvancedIncSubtensor)


def _diagonal(op) -> bool:
    """Whether ``op`` is PyTensor's AllocDiag itself (not a subclass) with integer
    parameters, whose inner graph is the one PyTensor builds from them: it indexes a diagonal
    by a range of its own input's length, inside the axis by construction."""
    if type(op) is not AllocDiag or not all(
        type(getattr(op, name)) is int for name in ("axis1", "axis2", "offset")
    ):
        return False
    fresh = [variable.type() for variable in op.inner_inputs]
    built = AllocDiag.build_inner_graph(op, *fresh)
    return equal_computations(op.inner_outputs, built, op.inner_inputs, fresh)


def _indexes_inside(op) -> bool:
    """Whether an index operation runs inside ``op`` (its inner graphs, a Blockwise's core),
    other than PyTensor's own diagonal (`_diagonal`)."""
    if _diagonal(op):
        return False
    if isinstance(op, Blockwise):
        core = op.core_op
        return isinstance(core, _INDEXING) or _indexes_inside(core)
    if isinstance(op, HasInnerGraph):
        inner = op.inner_outputs
        return any(
            isinstance(node.op, _INDEXING) or _indexes_inside(node.op)
            for node in applys_between(graph_inputs(inner), inner)
        )
    return False


def _check_node_indices(
    node, where: str, values: dict | None = None, *, inputs_public: bool = False
) -> bool:
    """`check_public_indices` for one advanced-indexing (or -setting) node; ``values``
    stand in for the value variables its indexed tensor reads (their shapes are public).
    Whether one of its indices is computed when it runs (neither public values nor a
    `PrivateData` bounded by its declaration)."""
    indexed, *flat = node.inputs
    if isinstance(node.op, AdvancedIncSubtensor):
        flat = flat[1:]
    axis, computed = 0, False
    for index in indices_from_subtensor(flat, node.op.idx_list):
        if isinstance(index, slice):
            axis += 1
            continue
        public = strip_casts(index)
        ndim = index.ndim if index.dtype == "bool" else 1
        computed |= declaration(public) is None and not (
            isinstance(public, SharedVariable) or only_constants(public)
        )
        if (inputs_public or declaration(public) is None) and (
            isinstance(public, SharedVariable) or only_constants(public)
        ):
            held = _public_array(public)
            read = graph_replace(indexed, values, strict=False) if values else indexed
            shape = public_shape(read)
            lengths = shape[axis : axis + ndim]
            if index.dtype == "bool":
                beyond = held.shape != tuple(lengths)
            else:
                beyond = held.size and (held.min() < -lengths[0] or held.max() >= lengths[0])
            if beyond:
                raise DataBoundsError(
                    f"A public index in {where} reaches beyond axis {axis} (length "
                    f"{lengths[0] if lengths else 0}) of the tensor it indexes: PyTensor's "
                    "default backend, Numba, does not check indices and would read whatever "
                    "memory it points at. Index inside the axis (from −length to length − 1), "
                    "with a boolean mask of the axis's shape."
                )
        axis += ndim
    return computed


def _exact_cast(source: str, target: str, interval: Interval) -> bool:
    """Whether a cast keeps every value of ``interval`` exactly: to a float at least as wide
    as a float, or from integers or booleans all within the target float's exact integers."""
    source_type, target_type = np.dtype(source), np.dtype(target)
    if target_type.kind != "f":
        return False
    if source_type.kind == "f":
        return target_type.itemsize >= source_type.itemsize
    exact = 2.0 ** (np.finfo(target_type).nmant + 1)
    return -exact <= interval.lower and interval.upper <= exact


def interval_of(model: pm.Model, variable: Variable, where: str) -> Interval:
    """An interval holding every value of ``variable`` (a graph of free variables and public
    values, e.g. a prior's parameter) as the free variables range over their supports;
    ``where`` names the graph in refusals."""
    reader = GraphReader(model, private_data(model))
    reader.node = where
    return reader.bound(variable).interval


@dataclass(frozen=True, eq=False)
class _Bound:
    """What the walker knows about one graph variable."""

    interval: Interval
    free: tuple[str, ...] = ()
    private: tuple[str, ...] = ()
    constant: np.ndarray | None = None
    shape: tuple[int, ...] | None = None
    free_variable: str | None = None
    link: str = "identity"
    group_by: str | None = None
    group_values: np.ndarray | None = None
    covariates: str | None = None
    covariate_values: np.ndarray | None = None
    radius: float | None = None
    prior_family: str | None = None
    intercept: str | None = None
    n_intercepts: int | None = None

    def unstructured(self, interval: Interval, *others: _Bound) -> _Bound:
        """A bound with ``interval`` that keeps dependencies but no conjugate structure."""
        bounds = (self, *others)
        return _Bound(
            interval=interval,
            free=_union(b.free for b in bounds),
            private=_union(b.private for b in bounds),
        )


def _union(groups: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    out: list[str] = []
    for group in groups:
        out.extend(name for name in group if name not in out)
    return tuple(out)


_INVERSE_LINKS = {psm.Sigmoid: "logistic", ps.Exp: "log"}
"""A GLM's inverse links, applied to a linear predictor X @ w, by the link they invert."""


class GraphReader:
    """Walks parameter graphs of observed nodes with interval arithmetic."""

    def __init__(self, model: pm.Model, specs: dict[str, PrivateDataSpec]) -> None:
        self.model = model
        self.specs = specs
        self.free = {rv: rv.name for rv in model.free_RVs}
        self.private = private_sources(model)
        self.observed = {rv: strip_casts(model.rvs_to_values[rv]).name for rv in model.observed_RVs}
        self.supports: dict[str, object] = {}
        self.node = ""
        self.n = 0
        self.weights: set[str] = set()  # free variables that weight covariates (X @ w)

    # -- interval arithmetic -----------------------------------------------------------

    def bound(self, variable: Variable) -> _Bound:
        if variable in self.free:
            return self._free(variable)
        if variable in self.observed:
            raise self._observed_variable(variable)
        if isinstance(variable, SharedVariable) and variable.name in self.specs:
            raise self._refuse_data(variable)
        if isinstance(variable, SharedVariable) or only_constants(variable):
            # pm.Data that is not PrivateData is public: read once, as a constant
            # (PrivateMetropolis compiles the value read here, so pm.set_data cannot move it).
            value = _public_array(variable).astype(np.float64)
            return _Bound(
                interval=Interval(float(value.min()), float(value.max())),
                constant=value,
                shape=value.shape,
            )
        owner = variable.owner
        if owner is None:
            raise self._unsupported(f"the input `{variable}`")
        op = owner.op
        if is_view(op):  # pm.Deterministic: the identity
            return self.bound(owner.inputs[0])
        if isinstance(op, DimShuffle):
            return self._dimshuffle(owner)
        if isinstance(op, AdvancedSubtensor):
            _check_node_indices(owner, f"the parameters of `{self.node}`")
            return self._advanced_index(owner)
        if isinstance(op, Subtensor):
            for index in owner.inputs[1:]:  # its scalar indices and slice bounds
                if self._depends_on_private(index):
                    raise self._unsupported("an index computed from private data")
            base = self.bound(owner.inputs[0])
            return base.unstructured(base.interval)
        if isinstance(op, Dot) or (isinstance(op, Blockwise) and isinstance(op.core_op, Dot)):
            return self._dot(owner)
        if isinstance(op, Elemwise):
            return self._elemwise(owner)
        if isinstance(op, Softmax):
            return self._softmax(owner)
        raise self._unsupported(f"the operation {op}")

    def _depends_on_private(self, index: Variable) -> bool:
        """Whether an index depends on private values (not just on shapes)."""
        return bool(private_value_inputs([index], self.private))

    def _observed_variable(self, rv: Variable) -> UnsupportedModelError:
        data = self.observed[rv]
        return UnsupportedModelError(
            f"The parameters of `{self.node}` read the observed variable `{rv.name}`, which "
            f"PyMC evaluates at its private data `{data}`: use that PrivateData itself as a "
            f"group index (theta[{data}]) or covariates ({data} @ w), or remove the dependence."
        )

    def _unsupported(self, what: str) -> UnsupportedModelError:
        return UnsupportedModelError(
            f"The privacy analysis cannot bound {what} in the parameters of `{self.node}`. "
            "Parameters may be free variables with bounded priors, constants and public pm.Data, "
            "indexing by a group index (theta[g], g PrivateData or public), a linear predictor "
            "X @ w (X PrivateData or public), and "
            "elementwise arithmetic (+, −, ×, /, powers, exp, log, sigmoid) and softmax of "
            "those."
        )

    def _refuse_data(self, variable: SharedVariable) -> UnsupportedModelError:
        return UnsupportedModelError(
            f"PrivateData `{variable.name}` enters the parameters of `{self.node}` other "
            f"than as a group index (theta[{variable.name}]) or covariates "
            f"({variable.name} @ w); the privacy analysis cannot bound that use."
        )

    def _free(self, rv: Variable) -> _Bound:
        support = parameter_support(rv)
        if support is None:
            raise UnsupportedModelError(
                f"The privacy analysis cannot read the support of the prior of `{rv.name}` "
                f"(a {type(rv.owner.op).__name__}); use a prior with a readable support, e.g. "
                "pmp.TruncatedBeta, pmp.TruncatedGamma, pmp.TruncatedNormal, "
                "pmp.TruncatedDirichlet or pmp.TruncatedMvNormal."
            )
        self.supports[rv.name] = support
        lower = float(np.min(support.lower)) if support.lower.size else -math.inf
        upper = float(np.max(support.upper)) if support.upper.size else math.inf
        return _Bound(
            interval=Interval(lower, upper),
            free=(rv.name,),
            shape=tuple(support.lower.shape),
            free_variable=rv.name,
            radius=support.radius,
            prior_family=support.family,
        )

    def _dimshuffle(self, node) -> _Bound:
        """Broadcasting on the left keeps a parameter's structure; so does squeezing the
        unit axis of a linear predictor ``X @ w[:, None]``; anything else (a transpose) keeps
        only its interval."""
        base = self.bound(node.inputs[0])
        order = tuple(node.op.new_order)
        kept = tuple(i for i in order if i != "x")
        in_order = kept == tuple(range(len(kept)))
        left_padding = in_order and order[len(order) - len(kept) :] == kept
        if left_padding and len(kept) == node.inputs[0].type.ndim:
            return base
        if in_order and "x" not in order and base.link == "linear":
            return base
        return base.unstructured(base.interval)

    def _private_index(self, variable: Variable) -> PrivateDataSpec | None:
        variable = strip_casts(variable)
        if isinstance(variable, SharedVariable) and variable.name in self.specs:
            return self.specs[variable.name]
        return None

    def _advanced_index(self, node) -> _Bound:
        """Advanced indexing. A `PrivateData` index makes its array part of the record; when it
        selects rows of a free variable (``theta[y]``, ``theta[y, :]``) the parameter keeps its
        structure, grouped by the index. Every private index, wherever it appears, is checked
        against the public length of the axis it indexes (`_private_indices`)."""
        base = self.bound(node.inputs[0])
        indices = _indices(node)
        private = self._private_indices(node.inputs[0], indices, base)
        if not private:
            return self._public_groups(indices, base) or base.unstructured(base.interval)
        names = _union((spec.name,) for _, spec in private)
        first, *rest = indices
        rows = (
            len(private) == 1
            and not isinstance(first, slice)
            and self._private_index(first) is not None
            and all(_is_full_slice(index) for index in rest)
        )
        if rows and base.free_variable is not None and base.shape is not None:
            if base.link == "identity":
                group_by = private[0][1].name
                return replace(base, private=_union((base.private, names)), group_by=group_by)
        return _Bound(interval=base.interval, free=base.free, private=_union((base.private, names)))

    def _public_groups(self, indices: tuple, base: _Bound) -> _Bound | None:
        """``theta[g]`` with ``g`` a public index, one integer per record (a numpy array, or
        ``pm.Data`` that is not `PrivateData`): the parameter keeps its structure, grouped by
        ``g``, whose values the analysis reads once and keeps (`ParameterTerm.group_values`).
        A public index is not part of the record, so neighbours share it
        (:ref:`privacy-model-public-inputs`). None for any other indexing."""
        first, *rest = indices
        if isinstance(first, slice):
            return None
        index = strip_casts(first)
        if not (isinstance(index, SharedVariable) or only_constants(index)):
            return None
        values = _public_array(index)
        structured = (
            base.free_variable is not None
            and base.link == "identity"
            and base.group_by is None
            and base.shape
            and all(_is_full_slice(other) for other in rest)
        )
        if not structured or values.dtype.kind not in "iu" or values.shape != (self.n,):
            return None
        groups = base.shape[0]
        if values.size and (values.min() < -groups or values.max() >= groups):
            return None
        values = np.where(values < 0, values + groups, values).astype(np.int64)
        values.setflags(write=False)
        name = index.name if isinstance(index, SharedVariable) else None
        if not name:  # named by its values: two different unnamed indices never merge
            digest = hashlib.blake2b(values.tobytes(), digest_size=4).hexdigest()
            name = f"index of {base.free_variable} #{digest}"
        return replace(base, group_by=name, group_values=values)

    def _private_indices(
        self, indexed: Variable, indices: tuple, base: _Bound
    ) -> list[tuple[int, PrivateDataSpec]]:
        """The `PrivateData` indices of an advanced-indexing node (``indexed[indices]``) with
        the axis each indexes, after refusing indices and slice bounds computed from private
        data and checking each private index's declared bounds against its axis
        (`_check_group_index`)."""
        private = []
        axis = 0
        for index in indices:
            if isinstance(index, slice):
                bounds = [b for b in (index.start, index.stop, index.step) if b is not None]
                if any(self._depends_on_private(b) for b in bounds):
                    raise self._unsupported("an index computed from private data")
                axis += 1
                continue
            spec = self._private_index(index)
            if spec is not None:
                self._check_group_index(spec, indexed, axis, base)
                private.append((axis, spec))
                axis += 1
                continue
            if strip_casts(index) in self.observed:
                raise self._observed_variable(strip_casts(index))
            if self._depends_on_private(index):
                raise self._unsupported("an index computed from private data")
            axis += index.ndim if index.dtype == "bool" else 1
        return private

    def _check_group_index(
        self, spec: PrivateDataSpec, indexed: Variable, axis: int, base: _Bound
    ) -> None:
        """A private index must be one integer per record whose declared bounds lie in
        [0, length − 1] of the axis it indexes: below 0 it would silently read another entry
        (negative indices count from the end), above it fail for some records only. Shapes
        and bounds are public, so this is decided before any value is read."""
        if not spec.integer or spec.record_shape != ():
            raise DataBoundsError(
                f"PrivateData `{spec.name}` indexes a parameter of `{self.node}`: declare it "
                "as one integer per record (a 1-d integer array with bounds (0, G − 1))."
            )
        length = public_shape(indexed)[axis]
        lower, upper = int(spec.lower), int(spec.upper)
        if 0 <= lower and upper <= length - 1:
            return
        if base.free_variable is not None and base.link == "identity":
            what = f"`{base.free_variable}`"
        elif base.free:
            what = "an expression of " + ", ".join(f"`{name}`" for name in base.free)
        else:
            what = "a constant array"
        fix = (
            f"declare bounds=(0, {length - 1}) (or a narrower public range)"
            if length
            else "the axis is empty, so nothing can be indexed: give it at least one entry"
        )
        raise DataBoundsError(
            f"PrivateData `{spec.name}` indexes axis {_source_axis(indexed, axis)} (length "
            f"{length}) of {what} in the "
            f"parameters of `{self.node}`, but its declared bounds [{lower}, {upper}] reach "
            f"outside [0, {length - 1}]: a negative index would silently read another entry "
            f"and one beyond the axis would fail for some records only; {fix}."
        )

    def _dot(self, node) -> _Bound:
        left, right = node.inputs
        while right.owner is not None and isinstance(right.owner.op, DimShuffle):
            order = tuple(right.owner.op.new_order)
            if tuple(i for i in order if i != "x") != tuple(range(right.owner.inputs[0].ndim)):
                break
            right = right.owner.inputs[0]
        weights = self.bound(right)
        self.weights.update(weights.free)
        if weights.private:
            raise self._unsupported("a product whose right factor depends on private data")
        spec = self._private_index(left)
        w_abs = max(abs(weights.interval.lower), abs(weights.interval.upper))
        radius = _vector_radius(weights, right)
        if spec is not None:
            if len(spec.record_shape) != 1:
                raise self._unsupported(f"a product with PrivateData `{spec.name}` of rank > 2")
            b_abs = np.maximum(np.abs(spec.lower), np.abs(spec.upper))
            box = float(np.sum(b_abs)) * w_abs if w_abs > 0 else 0.0
            limit = box
            if radius is not None:
                limit = min(box, spec.l2_bound() * radius)
            plain = (
                weights.free_variable is not None
                and weights.group_by is None
                and weights.link == "identity"
            )
            return _Bound(
                interval=Interval(-limit, limit),
                free=weights.free,
                private=(spec.name,),
                shape=weights.shape,
                free_variable=weights.free_variable if plain else None,
                link="linear",
                covariates=spec.name,
                radius=weights.radius,
                prior_family=weights.prior_family,
            )
        design = self.bound(left)
        if design.constant is None:
            raise self._unsupported("a matrix product whose left factor is not PrivateData")
        if not np.all(np.isfinite(design.constant)):
            raise DataBoundsError(
                f"The public covariates of `{self.node}` (the left factor of a matrix product) "
                "hold NaN or infinite values; pass finite values (drop or impute those rows)."
            )
        rows = np.abs(design.constant)
        box = float(np.max(rows.sum(axis=-1), initial=0.0)) * w_abs if w_abs > 0 else 0.0
        limit = box
        if radius is not None:
            norms = np.sqrt((rows**2).sum(axis=-1))
            limit = min(box, float(np.max(norms, initial=0.0)) * radius)
        bound = weights.unstructured(Interval(-limit, limit))
        plain = (
            weights.free_variable is not None
            and weights.group_by is None
            and weights.link == "identity"
            and len(weights.shape or ()) == 1
        )
        if not plain or design.constant.shape != (self.n, weights.shape[0]):
            return bound
        return replace(
            bound,
            shape=weights.shape,
            free_variable=weights.free_variable,
            link="linear",
            covariates=_public_name(left, design.constant),
            covariate_values=read_only(design.constant),
            radius=weights.radius,
            prior_family=weights.prior_family,
        )

    def _softmax(self, node) -> _Bound:
        """softmax(z)_k = 1 / (1 + Σ_{j≠k} e^(z_j − z_k)) over K entries, each z_j in [a, b]:
        increasing in z_k and decreasing in every other z_j, so every entry lies in

            [1 / (1 + (K − 1)·e^(b − a)),  1 / (1 + (K − 1)·e^(a − b))],

        attained at z = (a, b, …, b) and (b, a, …, a). A Categorical on it then has
        L = ln(upper/lower) (`Categorical.log_likelihood_range`), the largest change of
        log softmax(z)_k between any two records and categories. K is the number of entries
        along the softmax's axes (PyTensor keeps them as a tuple; all axes with None), from
        their static lengths, a public shape."""
        (z,) = node.inputs
        axes = range(z.type.ndim) if node.op.axis is None else node.op.axis
        shape = tuple(z.type.shape[axis] for axis in axes)
        if any(length is None for length in shape):
            raise self._unsupported("a softmax over an axis whose length is not fixed")
        others = math.prod(shape) - 1
        base = self.bound(z)
        spread = base.interval.upper - base.interval.lower
        with np.errstate(over="ignore"):
            lower = float(1.0 / (1.0 + others * np.exp(spread)))
            upper = float(1.0 / (1.0 + others * np.exp(-spread)))
        return base.unstructured(Interval(lower, upper))

    def _elemwise(self, node) -> _Bound:
        scalar = node.op.scalar_op
        inputs = [self.bound(i) for i in node.inputs]
        first = inputs[0]
        if isinstance(scalar, ps.Identity) or (
            isinstance(scalar, ps.Cast)
            and _exact_cast(node.inputs[0].dtype, node.outputs[0].dtype, first.interval)
        ):
            return first
        if isinstance(scalar, ps.Cast):
            raise self._unsupported(
                f"a cast from {node.inputs[0].dtype} to {node.outputs[0].dtype}, which "
                "truncates or rounds the values it would bound,"
            )
        if isinstance(scalar, ps.Reciprocal):
            return self._link(first, _reciprocal(first.interval), "identity", "reciprocal")
        if isinstance(scalar, ps.TrueDiv):
            numerator, denominator = inputs
            interval = _mul(numerator.interval, _reciprocal(denominator.interval))
            if _is_point(numerator, 1.0):
                return self._link(denominator, interval, "identity", "reciprocal")
            return first.unstructured(interval, *inputs[1:])
        if isinstance(scalar, ps.Pow):
            base, exponent = inputs
            if exponent.constant is None or np.unique(exponent.constant).size != 1:
                raise self._unsupported("a power with a non-constant exponent")
            c = float(exponent.constant.ravel()[0])
            interval = _pow(base.interval, c)
            if interval is None:
                raise self._unsupported("a fractional power of a possibly negative value")
            links = {-1.0: "reciprocal", -0.5: "inverse_sqrt"}
            if c in links:
                return self._link(base, interval, "identity", links[c])
            return base.unstructured(interval)
        if isinstance(scalar, ps.Abs):
            interval = _abs(first.interval)
            if first.interval.lower >= 0:
                return first
            return first.unstructured(interval)
        if isinstance(scalar, ps.Mul):
            interval = inputs[0].interval
            for other in inputs[1:]:
                interval = _mul(interval, other.interval)
            rest = [b for b in inputs if not (b.interval.lower == b.interval.upper == 1.0)]
            if len(rest) == 1 and rest[0].constant is None:
                return replace(
                    rest[0],
                    interval=interval,
                    free=_union(b.free for b in inputs),
                    private=_union(b.private for b in inputs),
                )
            return first.unstructured(interval, *inputs[1:])
        interval = self._elementwise_interval(scalar, [b.interval for b in inputs])
        if isinstance(scalar, ps.Add) and len(inputs) == 2:
            varying = _varying_intercepts(interval, *inputs)
            if varying is not None:
                return varying
        if first.covariates is not None and len(inputs) == 1:
            # The inverse link of a GLM's linear predictor: sigmoid(X @ w), exp(X @ w).
            for kind, link in _INVERSE_LINKS.items():
                if isinstance(scalar, kind):
                    return self._link(first, interval, "linear", link)
        return first.unstructured(interval, *inputs[1:])

    def _link(self, base: _Bound, interval: Interval, before: str, after: str) -> _Bound:
        if base.free_variable is not None and base.link == before:
            return replace(base, interval=interval, link=after)
        return base.unstructured(interval)

    def _elementwise_interval(self, scalar, intervals: list[Interval]) -> Interval:
        if isinstance(scalar, ps.Add):
            return Interval(sum(i.lower for i in intervals), sum(i.upper for i in intervals))
        if isinstance(scalar, ps.Sub):
            a, b = intervals
            return Interval(a.lower - b.upper, a.upper - b.lower)
        if isinstance(scalar, ps.Neg):
            (a,) = intervals
            return Interval(-a.upper, -a.lower)
        if isinstance(scalar, ps.Sign):
            (a,) = intervals
            return Interval(float(np.sign(a.lower)), float(np.sign(a.upper)))
        if isinstance(scalar, ps.Maximum | ps.Minimum):
            pick = max if isinstance(scalar, ps.Maximum) else min
            return Interval(pick(i.lower for i in intervals), pick(i.upper for i in intervals))
        increasing = {
            ps.Exp: np.exp,
            ps.Log: np.log,
            ps.Log1p: np.log1p,
            ps.Expm1: np.expm1,
            ps.Sqrt: np.sqrt,
            ps.Tanh: np.tanh,
            psm.Sigmoid: lambda x: 1.0 / (1.0 + np.exp(-x)),
            psm.Softplus: lambda x: np.logaddexp(0.0, x),
        }
        for kind, function in increasing.items():
            if isinstance(scalar, kind):
                (a,) = intervals
                domain_low = {ps.Log: 0.0, ps.Sqrt: 0.0, ps.Log1p: -1.0}.get(kind, -math.inf)
                if a.lower < domain_low:
                    raise self._unsupported(f"{scalar} of a value that may leave its domain")
                with np.errstate(divide="ignore", over="ignore"):
                    return Interval(float(function(a.lower)), float(function(a.upper)))
        raise self._unsupported(f"the operation {scalar}")


def _varying_intercepts(interval: Interval, first: _Bound, second: _Bound) -> _Bound | None:
    """``alpha[g] + X @ w`` (either order): a linear predictor with varying intercepts, g a
    public index (`GraphReader._public_groups`), alpha and w two free variables. The predictor
    keeps its structure, grouped by g, with ``alpha`` as its intercepts; its interval is the
    sum's, so a link's range and L account for alpha's bounds. None for any other sum."""
    for intercepts, predictor in ((first, second), (second, first)):
        if (
            predictor.covariates is not None
            and predictor.link == "linear"
            and predictor.free_variable is not None
            and predictor.intercept is None
            and intercepts.free_variable is not None
            and intercepts.free_variable != predictor.free_variable
            and intercepts.link == "identity"
            and intercepts.group_values is not None
            and len(intercepts.shape or ()) == 1
        ):
            return replace(
                predictor,
                interval=interval,
                free=_union((predictor.free, intercepts.free)),
                private=_union((predictor.private, intercepts.private)),
                group_by=intercepts.group_by,
                group_values=intercepts.group_values,
                intercept=intercepts.free_variable,
                n_intercepts=intercepts.shape[0],
            )
    return None


def _vector_radius(weights: _Bound, right: Variable) -> float | None:
    """R for the Cauchy–Schwarz bound |xᵀw| ≤ ‖x‖₂·R of a product ``x @ right``, or None
    when only the elementwise box bound applies.

    A norm-ball prior (``pmp.TruncatedMvNormal(radius=R)``) bounds the norm of each vector
    along its last axis. The product contracts x with the whole of ``right`` only when
    ``right`` is one such vector, the free variable itself: for weights W of shape (d, k)
    every row has ‖W[i]‖₂ ≤ R, but ``X @ W`` sums down the columns, whose norm reaches R·√d;
    a transformed vector (``1 / w``) is not in the ball at all.
    """
    single = weights.shape is not None and len(weights.shape) == 1 and right.ndim == 1
    if single and weights.free_variable is not None and weights.link == "identity":
        return weights.radius
    return None


def _is_point(bound: _Bound, value: float) -> bool:
    return bound.interval.lower == bound.interval.upper == value and not bound.free


def _indices(node) -> tuple:
    """The index of an advanced-indexing node, one entry per indexed axis: an index tensor,
    or a Python slice whose bounds are scalar variables or None (PyTensor keeps the slices'
    layout in the op's ``idx_list`` and their bounds among the node's inputs)."""
    return indices_from_subtensor(node.inputs[1:], node.op.idx_list)


def _source_axis(indexed: Variable, axis: int) -> int:
    """The axis of the user's variable that ``axis`` of ``indexed`` is, through the broadcast
    axes PyTensor adds before indexing (``mu[None, :, g]`` indexes ``mu`` expanded on the
    left; its axis 2 is axis 1 of ``mu``)."""
    while indexed.owner is not None and isinstance(indexed.owner.op, DimShuffle):
        source = indexed.owner.op.new_order[axis]
        if source == "x":
            break
        indexed, axis = indexed.owner.inputs[0], source
    return axis


def _is_full_slice(index) -> bool:
    return (
        isinstance(index, slice)
        and index.start is None
        and index.stop is None
        and index.step is None
    )


def _public_name(variable: Variable, values: np.ndarray) -> str:
    """The name of a public array: its ``pm.Data`` name, or one made from its values (two
    different unnamed arrays never share a name)."""
    variable = strip_casts(variable)
    if isinstance(variable, SharedVariable) and variable.name:
        return variable.name
    digest = hashlib.blake2b(np.ascontiguousarray(values).tobytes(), digest_size=4).hexdigest()
    return f"public covariates #{digest}"


def _public_array(variable: Variable) -> np.ndarray:
    """The value of a public input of a parameter graph (a graph of constants, or a shared
    variable that is not `PrivateData`: ``pm.Data``), in its own dtype, a copy."""
    if isinstance(variable, SharedVariable):
        return np.asarray(variable.get_value())
    return np.asarray(constant_fold([variable])[0])


def _mul(a: Interval, b: Interval) -> Interval:
    products = []
    for x in (a.lower, a.upper):
        for y in (b.lower, b.upper):
            products.append(0.0 if x == 0.0 or y == 0.0 else x * y)
    return Interval(min(products), max(products))


def _reciprocal(a: Interval) -> Interval:
    if a.lower > 0 or a.upper < 0:
        return Interval(1.0 / a.upper, 1.0 / a.lower)
    if a.lower == 0 and a.upper > 0:
        return Interval(1.0 / a.upper, math.inf)
    if a.upper == 0 and a.lower < 0:
        return Interval(-math.inf, 1.0 / a.lower)
    return Interval(-math.inf, math.inf)


def _abs(a: Interval) -> Interval:
    if a.lower >= 0:
        return a
    if a.upper <= 0:
        return Interval(-a.upper, -a.lower)
    return Interval(0.0, max(-a.lower, a.upper))


def _pow(a: Interval, c: float) -> Interval | None:
    """[a]^c, or None when it is undefined (a fractional power of a negative number)."""

    def power(x: float) -> float:
        if x == 0.0:
            return math.inf if c < 0 else (1.0 if c == 0 else 0.0)
        if math.isinf(x):
            return 0.0 if c < 0 else (math.inf if x > 0 or c % 2 == 0 else -math.inf)
        return x**c

    if a.lower >= 0:
        values = [power(a.lower), power(a.upper)]
        return Interval(min(values), max(values))
    if c != int(c):
        return None
    if c < 0 and a.lower <= 0 <= a.upper:
        return Interval(-math.inf, math.inf)
    values = [power(a.lower), power(a.upper)]
    if a.lower < 0 < a.upper and c > 0:
        values.append(0.0)
    return Interval(min(values), max(values))
