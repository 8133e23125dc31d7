"""Shared helpers of the noise-aware tests: the log density the NUTS route samples."""

from __future__ import annotations

import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.replace import graph_replace, vectorize_graph


@pytest.fixture(scope="session")
def nuts_log_density():
    """``f(model, names)``: the log density the NUTS route samples (priors and the
    noise-aware likelihood Potentials), compiled as a function of the named variables' values
    in their own space, vectorised over a leading batch axis of every input."""
    return _constrained_logp


def _constrained_logp(model: pm.Model, names: list[str]):
    inputs = [model[name].type() for name in names]
    terms = [pm.logp(model[name], value).sum() for name, value in zip(names, inputs, strict=True)]
    graph = pt.add(*terms, *(potential.sum() for potential in model.potentials))
    graph = graph_replace(
        graph, {model[name]: value for name, value in zip(names, inputs, strict=True)}
    )
    batched = [pt.tensor(shape=(None, *value.type.shape)) for value in inputs]
    vectorised = vectorize_graph(graph, replace=dict(zip(inputs, batched, strict=True)))
    return pytensor.function(batched, vectorised)
