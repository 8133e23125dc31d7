"""The compiled log-ratio terms of a `PrivateMetropolis` step: (q1, q0, *data) ↦ [log ξ(q1) −
log ξ(q0), (ℓ(x_i; q1) − ℓ(x_i; q0))_i], on every record or, for the Poisson-subsampled step,
on the rows of its subsample only (where the terms are computed row by row on any number of
rows, decided on public stand-ins). Computed from raw data: never released; the step's
mechanism turns them into one noisy decision.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.initial_point import PointType
from pymc.pytensorf import compile, join_nonshared_inputs
from pytensor.graph.basic import Variable
from pytensor.graph.replace import graph_replace
from pytensor.tensor.shape import SpecifyShape

from pymc_private.compiling import compiling

__all__ = ["compile_log_ratio_terms", "reads_rows", "row_subset_graph"]


def row_subset_graph(
    point: PointType, outputs: list[Variable], vars: list[Variable], shared: dict, data: list
) -> tuple:
    """The arguments of `compile_log_ratio_terms` for terms of any number of rows: each data
    input of any length along the record axis, and the per-record terms without the
    assertion of n entries (`record_log_likelihood`), which `reads_rows` checks instead."""
    log_prior, per_record = outputs
    if per_record.owner is not None and isinstance(per_record.owner.op, SpecifyShape):
        per_record = per_record.owner.inputs[0]
    rows = {v: pt.tensor(dtype=v.dtype, shape=(None, *v.type.shape[1:]), name=v.name) for v in data}
    per_record = graph_replace(per_record, rows, strict=False)
    return point, [log_prior, per_record], vars, shared, list(rows.values())


def reads_rows(function, point: PointType, graph: tuple, placeholders: list):
    """``function`` if it computes one term per row, the same whatever the number of rows,
    else False.

    Decided on public values only: it runs on 0 to 3 rows of each array's declared lower
    bounds, for a move from the initial point by a small step, and must return that many
    terms without raising, each row's term the same at every length. A graph that fixes n
    anywhere (a public array of n rows beside the records, a constant length) fails on fewer
    rows, and one that reads the record count (``x_obs.shape[0]``) gives another term on
    another length: the step then reads every record and keeps the subsample's ratios, as
    before."""
    _, _, vars, _, _ = graph
    dtype = function.maker.inputs[0].variable.dtype
    q = np.concatenate([np.ravel(point[v.name]) for v in vars]).astype(dtype)
    moved = (q + 1e-3 * (1.0 + np.abs(q))).astype(dtype)
    first = None
    for rows in (0, 1, 2, 3):
        stand_ins = [
            np.ascontiguousarray(np.broadcast_to(lower, (rows, *lower.shape)), dtype=kind)
            for lower, kind in placeholders
        ]
        try:
            with np.errstate(all="ignore"):
                _, terms = function(moved, q, *stand_ins)
        except Exception:
            return False
        if np.shape(terms) != (rows,):
            return False
        if rows and first is None:
            first = terms[0]
        elif rows and not np.allclose(terms, first, rtol=1e-9, atol=0.0, equal_nan=True):
            return False
    return function


def compile_log_ratio_terms(
    point: PointType,
    outputs: list[Variable],
    vars: list[Variable],
    shared: dict,
    data: list[Variable],
    *,
    compile_kwargs: dict | None,
):
    """Compile (q1, q0, *data) ↦ [log ξ(q1) − log ξ(q0), (ℓ(x_i; q1) − ℓ(x_i; q0))_i] on
    raveled sampling-space vectors from ``outputs`` = [log ξ, (ℓ(x_i; ·))_i] (only the prior
    without likelihood), the other variables shared and the private data explicit inputs;
    tempering, clipping and summation happen in `barker_log_odds`.
    """
    outputs, q0 = join_nonshared_inputs(
        point=point, outputs=outputs, inputs=vars, shared_inputs=shared
    )
    q1 = q0.type("q1")
    ratios = [graph_replace(output, {q0: q1}, strict=False) - output for output in outputs]
    # The data are unused by a block no likelihood depends on (its prior ratio alone).
    kwargs = {"on_unused_input": "ignore", **compile_kwargs}
    with compiling():
        function = compile([q1, q0, *data], ratios, **kwargs)
    function.trust_input = True
    return function
