"""Posterior predictive draws of a private fit that read no raw data: post-processing, free
of privacy cost (`sample_posterior_predictive`). On a privatised model, replicated releases
of its statistics; on the original model, draws of its observed nodes on a copy whose
`PrivateData` are replaced by public inputs. Every group it returns is sealed
(`pymc_private.release.seal`).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import xarray as xr
from pymc.model.fgraph import clone_model
from pytensor.graph.traversal import ancestors

from pymc_private.analysis.intervals import check_public_indices
from pymc_private.analysis.leak_guard import refuse_private_paths
from pymc_private.analysis.privatisation import privatised_route
from pymc_private.compiling import (
    CHECKED_MODE,
    checked_compile_kwargs,
    compiling,
    quiet_sampling,
)
from pymc_private.data.declaration import private_data
from pymc_private.errors import DataBoundsError, UnsupportedModelError
from pymc_private.noise_aware.likelihood import replicate_statistics
from pymc_private.release.seal import LATENT_GROUP, seal, sealed

__all__ = ["sample_posterior_predictive"]


def sample_posterior_predictive(
    idata: xr.DataTree,
    model: pm.Model | None = None,
    *,
    inputs: dict | None = None,
    var_names: list[str] | None = None,
    random_seed=None,
    progressbar: bool = False,
    extend_inferencedata: bool = False,
    return_inferencedata: bool = True,
    **kwargs,
) -> xr.DataTree | dict[str, np.ndarray]:
    """Posterior predictive draws of a private fit that read no raw data: post-processing,
    free of privacy cost. Takes `pm.sample_posterior_predictive`'s keywords.

    On a model returned by `pmp.privatize`: replicated releases s̃_rep ~ p(s̃ | θ), one per
    posterior draw (`noise_aware.replicate_statistics`), in ``posterior_predictive``,
    beside the released values in ``observed_data`` (both public); `pmp.plot_ppc` draws one
    panel per released cell.

    On the original model (with its `pmp.PrivateData`) and the idata of its private fit or of
    its privatised version (the parameters' names are the same): draws of its observed nodes
    on a copy of the model in which every `PrivateData` is replaced, by ``inputs[name]``
    (public values, e.g. new covariates or group indices to predict at), or, for data the
    predicted nodes only *observe*, by a placeholder at the declared lower bound (a forward
    draw reads only its shape). So ``n_new`` new records (the length of the ``inputs``) get
    predictions; without ``inputs``, n replicated records (n is public), which needs
    predicted nodes that read no private covariates. They are in the group ``predictions``
    (with ``inputs``, the public values, in ``predictions_constant_data``).

    Every group is sealed: `check_release` accepts the fit extended with them.

    Parameters
    ----------
    idata
        What a private route (`pmp.sample`, `pmp.sample_posterior`) returned.
    model
        The privatised model, or the original one (default: the context model).
    inputs
        Public values of the original model's data to predict at, by name.
    var_names
        The released statistics (privatised model) or observed nodes (original model) to
        draw; default all.
    random_seed
        Seed of the draws.
    progressbar
        PyMC's progress bar on the original model (off by default: the draws take seconds;
        the replicated releases of a privatised model are drawn in numpy, without one).
    extend_inferencedata
        True: add the groups to ``idata`` (``idata.update``) and return it, as PyMC.
    return_inferencedata
        False: return the draws as a dict of arrays by name (chain, draw, ...), as PyMC.
    **kwargs
        ``sample_dims``, ``progressbar_theme`` and ``compile_kwargs`` go to
        `pm.sample_posterior_predictive` on the original model. ``predictions`` and
        ``idata_kwargs`` are refused: the group is decided by the model (above), and an
        DataTree of PyMC's making could hold the observed data.

    Raises
    ------
    UnsupportedModelError
        ``idata`` holds no sealed posterior; a predicted node reads private data that
        ``inputs`` does not replace (the message names it); ``var_names`` not observed nodes
        or released statistics; ``inputs`` for a privatised model.
    DataBoundsError
        ``inputs`` not finite, of different lengths, or of the wrong record shape.
    TypeError
        A keyword `pm.sample_posterior_predictive` does not take, or one refused above.
    """
    refused = sorted(set(kwargs) & set(_REFUSED_PREDICTIVE))
    if refused:
        raise TypeError(
            f"pmp.sample_posterior_predictive does not take {refused[0]}=: "
            f"{_REFUSED_PREDICTIVE[refused[0]]}"
        )
    unknown = sorted(set(kwargs) - _PASSED_PREDICTIVE)
    if unknown:
        raise TypeError(
            f"pmp.sample_posterior_predictive got unexpected keyword arguments {unknown}."
        )
    if "compile_kwargs" in kwargs:
        kwargs["compile_kwargs"] = checked_compile_kwargs(
            kwargs["compile_kwargs"], "pmp.sample_posterior_predictive"
        )
    result = _predictive(
        idata, model, inputs, var_names, random_seed, {"progressbar": progressbar, **kwargs}
    )
    if not return_inferencedata:
        group = "posterior_predictive" if "posterior_predictive" in result else "predictions"
        return {name: values.values for name, values in result[group].data_vars.items()}
    if extend_inferencedata:
        idata.update(result.children)
        return idata
    return result


# pm.sample_posterior_predictive keywords passed through on the original model, and those
# refused (with why).
_PASSED_PREDICTIVE = {"sample_dims", "progressbar_theme", "compile_kwargs"}
_REFUSED_PREDICTIVE = {
    "predictions": "the group is decided by the model (see the docstring).",
    "idata_kwargs": "the DataTree is built by pmp, without the observed data.",
    "trace": "pass the private fit as idata.",
}


def _predictive(idata, model, inputs, var_names, random_seed, pm_kwargs) -> xr.DataTree:
    """`sample_posterior_predictive` once its keywords are checked."""
    model = pm.modelcontext(model)
    if not isinstance(idata, xr.DataTree) or "posterior" not in idata.children:
        raise UnsupportedModelError("idata must be a DataTree with a posterior group.")
    if not sealed(idata["posterior"]):
        raise UnsupportedModelError(
            "This posterior was not released by a private route (or changed since): its "
            "predictive draws would carry whatever it was computed from. Sample with "
            "pmp.sample or pmp.sample_posterior first."
        )
    posterior = idata["posterior"].to_dataset()
    privatisation = privatised_route(model)
    if privatisation is not None:
        if LATENT_GROUP in idata.children:  # the latent group sizes replicate the counts
            if not sealed(idata[LATENT_GROUP]):
                raise UnsupportedModelError(
                    f"The group {LATENT_GROUP} was not released by a private route (or "
                    "changed since). Sample with pmp.sample first."
                )
            posterior = xr.merge([posterior, idata[LATENT_GROUP].to_dataset()])
        return _replicated(posterior, model, privatisation, inputs, var_names, random_seed)
    # The draws run the observed nodes' random graphs and Python random functions (a
    # pm.CustomDist's) on a copy whose data are replaced: none may read the private data.
    refuse_private_paths(model)
    specs = private_data(model)
    inputs = dict(inputs or {})
    observed = {rv.name: model.rvs_to_values[rv] for rv in model.observed_RVs}
    var_names = list(observed) if var_names is None else list(var_names)
    unknown = sorted(set(var_names) - set(observed))
    if unknown:
        raise UnsupportedModelError(
            f"var_names must name observed nodes of the model ({sorted(observed)}); got {unknown}."
        )
    public = {v.name: v.get_value(borrow=True) for v in model.data_vars if v.name not in specs}
    unknown = sorted(set(inputs) - set(specs) - set(public))
    if unknown:
        raise UnsupportedModelError(
            f"inputs replace the model's data ({sorted(specs)} private, "
            f"{sorted(public)} public pm.Data); got {unknown}."
        )
    records = {name: (spec.record_shape, spec.integer) for name, spec in specs.items()}
    for name, value in public.items():
        records[name] = (np.shape(value)[1:], np.asarray(value).dtype.kind in "iub")
    size = _checked_inputs(inputs, records)
    if size is None:  # public pm.Data already set to the new records (pm.set_data)
        lengths = {np.shape(value)[0] for value in public.values() if np.ndim(value)}
        n = next(iter(specs.values())).n if specs else 0
        size = lengths.pop() if len(lengths) == 1 else n
    # Private data each predicted node reads, other than its own observed values (whose
    # shape alone sizes its draw). Every PrivateData is replaced below whatever this finds,
    # so nothing raw is read either way; this refuses predictions at placeholder covariates.
    read = set()
    for name in var_names:
        own = {v.name for v in ancestors([observed[name]]) if v.name in specs}
        read |= {v.name for v in ancestors([model[name]]) if v.name in specs} - own
    missing = sorted(read - set(inputs))
    if missing:
        raise UnsupportedModelError(
            f"The predicted nodes read the private data {missing}: pass public values for it "
            f"(inputs={{{missing[0]!r}: ...}}, e.g. new covariates to predict at); predictions "
            "at the raw values would release them."
        )
    copy = clone_model(model)
    values = {
        name: np.asarray(inputs[name]).astype(np.asarray(public[name]).dtype)
        for name in public
        if name in inputs
    }
    for name, spec in specs.items():
        current = copy[name].get_value(borrow=True)
        if name in inputs:
            values[name] = np.asarray(inputs[name]).astype(current.dtype)
        else:
            placeholder = np.broadcast_to(spec.lower, (size, *spec.record_shape))
            values[name] = placeholder.astype(current.dtype)
    with copy:
        pm.set_data(values, coords=_record_coords(copy, values, size))
    check_public_indices(
        [copy[name] for name in var_names], "the predicted nodes", inputs_public=True
    )
    parameters = [name for name in posterior.data_vars if name in copy.named_vars]
    # Under a mode that checks indices, without rich's ipywidgets warning in Jupyter.
    with quiet_sampling(pm_kwargs.get("compile_kwargs", {}).get("mode", CHECKED_MODE)):
        result = pm.sample_posterior_predictive(
            posterior[parameters],
            model=copy,
            var_names=var_names,
            predictions=True,
            random_seed=random_seed,
            **pm_kwargs,
        )
    groups = {"predictions": result.predictions}
    if inputs:
        groups["predictions_constant_data"] = xr.Dataset(
            {
                name: xr.DataArray(values[name], dims=_dims(name, values[name].ndim))
                for name in inputs
            }
        )
    return seal(xr.DataTree.from_dict(groups))


def _replicated(posterior, model, privatisation, inputs, var_names, random_seed):
    """Posterior predictive checks of a privatised model: its replicated released statistics
    in ``posterior_predictive`` against the released ones in ``observed_data`` (both public,
    so az.plot_ppc and az.bpv run on the sealed result)."""
    if inputs:
        raise UnsupportedModelError(
            "A privatised model holds released statistics, not records, so it predicts no "
            "new records: pass the original model (with its PrivateData) and the idata of "
            "the privatised fit to predict at public inputs."
        )
    with compiling():
        replicated, released = replicate_statistics(
            posterior, model, privatisation, np.random.default_rng(random_seed)
        )
    var_names = list(replicated) if var_names is None else list(var_names)
    unknown = sorted(set(var_names) - set(replicated))
    if unknown:
        raise UnsupportedModelError(
            f"var_names must name released statistics ({sorted(replicated)}); got {unknown}."
        )
    coords = {"chain": posterior.chain.values, "draw": posterior.draw.values}
    return seal(
        xr.DataTree.from_dict(
            {
                "posterior_predictive": xr.Dataset(
                    {
                        name: xr.DataArray(
                            replicated[name],
                            dims=["chain", "draw", *_dims(name, replicated[name].ndim - 2)],
                            coords=coords,
                        )
                        for name in var_names
                    }
                ),
                "observed_data": xr.Dataset(
                    {
                        name: xr.DataArray(released[name], dims=_dims(name, released[name].ndim))
                        for name in var_names
                    }
                ),
            }
        )
    )


def _record_coords(model: pm.Model, values: dict, size: int) -> dict:
    """New coordinates 0 … size − 1 for the record dimension of every replaced data
    variable whose dims name one of another length (PyMC requires them with pm.set_data)."""
    coords = {}
    for name in values:
        dims = model.named_vars_to_dims.get(name) or ()
        if dims and dims[0] is not None and len(model.coords.get(dims[0]) or ()) != size:
            coords[dims[0]] = np.arange(size)
    return coords


def _dims(name: str, ndim: int) -> list[str]:
    """ArviZ's default names for the ``ndim`` axes of a variable's values."""
    return [f"{name}_dim_{i}" for i in range(ndim)]


def _checked_inputs(inputs: dict, records: dict) -> int | None:
    """The common length of the public ``inputs`` (None without inputs), checked against
    ``records``: (record shape, integer) of each data variable by name."""
    sizes = set()
    for name, value in inputs.items():
        array = np.asarray(value)
        record_shape, integer = records[name]
        if array.dtype.kind not in "biuf" or not np.all(np.isfinite(array)):
            raise DataBoundsError(f"inputs[{name!r}] must hold finite numbers.")
        if array.ndim < 1 or array.shape[0] == 0 or array.shape[1:] != record_shape:
            raise DataBoundsError(
                f"inputs[{name!r}] must have shape (n_new, *{record_shape}) with n_new "
                f">= 1, like the records of {name}; got {array.shape}."
            )
        if integer and not np.all(array == np.round(array)):
            raise DataBoundsError(f"inputs[{name!r}] must hold integers, like {name}.")
        sizes.add(array.shape[0])
    if len(sizes) > 1:
        raise DataBoundsError(f"inputs must all have the same length; got {sorted(sizes)}.")
    return sizes.pop() if sizes else None
