"""What may leave the building: sealed groups of a result (the `xarray.DataTree` PyMC and
ArviZ use), the ledger they carry (`ledger_of`) and `check_release`.

Every group a private route returns (`pmp.sample`, `pmp.sample_posterior`,
`pmp.sample_posterior_predictive`) is *sealed*: its attributes hold a SHA-256 digest of its
variables and coordinates (``privacy_release``). The digest is of values that are released
anyway, so it reveals nothing more. `check_release` recomputes it for every group of the
tree, nested ones included: a group without a seal (``observed_data``, ``log_likelihood`` or
the ``posterior_predictive`` of ``pm.sample_posterior_predictive`` on the original model,
added by ``idata.update``), a sealed group changed since, data at the root of the tree
(outside every group), or an attribute outside the public ones is reported with the reason.
The seal guards against accidents, not against a user who forges it.
"""

from __future__ import annotations

import hashlib
import html
import json
from dataclasses import dataclass
from typing import NoReturn

import numpy as np
import pandas as pd
import xarray as xr

from pymc_private.data.ledgers import PrivacyLedger
from pymc_private.errors import (
    NotReleasableError,
    UnsupportedModelError,
    counted,
)

__all__ = [
    "ReleaseCheck",
    "check_release",
    "ledger_of",
    "loo",
    "seal",
    "seal_frame",
    "sealed",
]

SEAL_ATTR = "privacy_release"
LEDGER_ATTR = "privacy_ledger"
# A synthetic table's posterior draw (chain, draw), public: an index into a released posterior.
POSTERIOR_DRAW_ATTR = "posterior_draw"
# 1 on the ``constant_data`` of a fit of a noise-aware privatised model, 0 on a plug-in one.
NOISE_AWARE_ATTR = "noise_aware"
# The group of the noise-aware likelihood's latent variables (`noise_aware.latent_names`):
# released like the posterior, kept out of it so that ArviZ shows the user's model.
LATENT_GROUP = "latent_posterior"
# Attributes PyMC and ArviZ write that are public: versions and settings. Anything else (e.g.
# `sampling_time`, a timing side channel of data-dependent rejection sampling) is dropped.
PUBLIC_ATTRS = (
    "created_at",
    "creation_library",
    "creation_library_version",
    "creation_library_language",
    "inference_library",
    "inference_library_version",
    "sample_dims",
    "tuning_steps",
    "sampler",
    "temperature",
    NOISE_AWARE_ATTR,
)

_WHY = {
    "observed_data": "the raw observed values of the private data",
    "constant_data": "the values of the model's data, which may include raw `PrivateData`",
    "log_likelihood": (
        "the log-likelihood of each raw record: a function of that record alone, so it is "
        "not releasable (this is why az.loo and az.compare cannot run on a private "
        "fit; pmp.release.loo says what to run instead)"
    ),
    "posterior_predictive": (
        "draws of the original model's observed nodes, computed from its raw covariates; "
        "use pmp.sample_posterior_predictive"
    ),
    "predictions": "predictions of the original model; use pmp.sample_posterior_predictive",
    "prior_predictive": "prior predictive draws computed from the model's raw covariates",
    "posterior": (
        "draws not released by a private route: pm.sample may read raw data, and nothing "
        "checked what its draws depend on; sample with pmp.sample"
    ),
    "sample_stats": "sampler statistics (lp, energy, ...) of a run no private route checked",
}


_POST_PROCESSING = (
    "Selecting, thinning or concatenating released draws is post-processing and costs "
    "nothing, but this check cannot tell it from other changes: release the fit as a private "
    "route returned it, or check the change yourself."
)
_NOT_PUBLIC = (
    "an attribute that is not public: its value was not checked by a private route; delete "
    "it before releasing."
)


_NOT_PUBLIC_ENCODING = (
    "an encoding that is not how xarray stores the values (it is written into the file as an "
    "attribute, and no private route checked it); delete it before releasing."
)
# What xarray's writers and readers put in a variable's encoding: how its values are stored.
_STORAGE_ENCODING = {
    "dtype",
    "source",
    "original_shape",
    "zlib",
    "szip",
    "zstd",
    "bzip2",
    "blosc",
    "complevel",
    "shuffle",
    "fletcher32",
    "contiguous",
    "chunksizes",
    "compression",
    "compressor",
    "compressors",
    "filters",
    "serializer",
    "chunks",
    "preferred_chunks",
    "shards",
    "endian",
    "write_empty_chunks",
}


def _public_encoding(key: str, value) -> bool:
    """Whether a variable's encoding entry only says how its values are stored: a storage
    key, or a fill value that is the marker xarray and zarr write (None, NaN or 0)."""
    if key in _STORAGE_ENCODING:
        return True
    if key not in ("_FillValue", "fill_value") or value is None:
        return value is None
    try:
        return np.ndim(value) == 0 and (np.isnan(float(value)) or float(value) == 0.0)
    except (TypeError, ValueError):
        return False


def _digest(group: xr.DataTree | xr.Dataset, attrs: dict | None = None, names=PUBLIC_ATTRS) -> str:
    """SHA-256 of a group's variables and coordinates (names, dims, dtypes, values, and the
    names of their own attributes) and of the values of its attributes ``names`` (from
    ``attrs``, the group's own by default), in a
    form that survives ``to_netcdf`` and ``to_zarr`` (numbers come back as numpy scalars,
    lists as arrays)."""
    digest = hashlib.sha256()
    if isinstance(group, xr.DataTree):  # where it sits: a name can spell anything
        digest.update(f"group|{group.name}|".encode())
    attrs = group.attrs if attrs is None else attrs
    for name in names:
        if name in attrs:
            value = json.dumps(np.asarray(attrs[name]).tolist())
            digest.update(f"attr|{name}|{value}|".encode())
    for kind, variables in (("var", group.data_vars), ("coord", group.coords)):
        for name in sorted(variables, key=str):
            values = np.asarray(variables[name].values)
            digest.update(f"{kind}|{name}|{variables[name].dims}|{values.shape}|".encode())
            digest.update(f"{sorted(map(str, variables[name].attrs))}|".encode())
            if values.dtype.kind in "OUSMm":
                digest.update(json.dumps(values.astype(str).tolist()).encode())
            else:
                digest.update(values.dtype.str.lstrip("<>=|").encode())
                digest.update(np.ascontiguousarray(values).astype(values.dtype.newbyteorder("<")))
    return digest.hexdigest()


def seal(idata: xr.DataTree) -> xr.DataTree:
    """Seal every group of ``idata`` (in place) as released by a private route; returns it.

    Only the private routes call this, on what they release: trees whose root holds no data
    and whose groups are its children."""
    for group in idata.children.values():
        group.attrs = {key: group.attrs[key] for key in PUBLIC_ATTRS if key in group.attrs}
        for variable in (*group.data_vars.values(), *group.coords.values()):
            variable.attrs = {}
            variable.encoding = {}
        group.attrs[SEAL_ATTR] = _digest(group)
    idata.attrs[SEAL_ATTR] = _root_digest(idata)
    return idata


def _root_digest(idata: xr.DataTree) -> str:
    """SHA-256 of the values of a result's public attributes and its ledger."""
    return _digest(xr.Dataset(), idata.attrs, (LEDGER_ATTR, *PUBLIC_ATTRS))


def sealed(group: xr.DataTree | xr.Dataset) -> bool:
    """Whether a group was sealed by a private route and is unchanged since."""
    return group.attrs.get(SEAL_ATTR) == _digest(group)


def _frame_digest(frame: pd.DataFrame) -> str:
    """SHA-256 of a table's columns (position, name, dtype, values) and index, by `_digest`."""
    columns = {
        f"{j}|{name}": xr.DataArray(frame.iloc[:, j].to_numpy(), dims=["row"])
        for j, name in enumerate(frame.columns)
    }
    table = xr.Dataset(columns, coords={"row": frame.index.to_numpy()})
    return _digest(table, frame.attrs, (LEDGER_ATTR, POSTERIOR_DRAW_ATTR))


def seal_frame(frame: pd.DataFrame, ledger: str, draw: tuple[int, int]) -> pd.DataFrame:
    """Seal a synthetic table (in place), with the JSON ``ledger`` of what paid for it and the
    (chain, draw) of the released posterior draw it was generated from (``frame.attrs``);
    returns it."""
    frame.attrs = {LEDGER_ATTR: ledger, POSTERIOR_DRAW_ATTR: [int(i) for i in draw]}
    frame.attrs[SEAL_ATTR] = _frame_digest(frame)
    return frame


def separate_latents(idata: xr.DataTree, names: list[str]) -> xr.DataTree:
    """Move the variables ``names`` (latents of the noise-aware likelihood) from
    ``idata.posterior`` to its group ``latent_posterior`` (in place; returns ``idata``), so
    that az.summary and az.plot_trace show the variables the user declared."""
    posterior = idata["posterior"].to_dataset()
    names = [name for name in names if name in posterior]
    if names:
        idata[LATENT_GROUP] = posterior[names]
        kept = posterior.drop_vars(names)
        used = {dim for variable in kept.data_vars.values() for dim in variable.dims}
        idata["posterior"] = kept.drop_vars(
            [c for c in kept.coords if not set(kept[c].dims) <= used]
        )
    return idata


def ledger_of(idata: xr.DataTree) -> PrivacyLedger:
    """The ledger `pmp.sample` attached to its result (also after `to_netcdf`/`to_zarr`)."""
    if not isinstance(idata, xr.DataTree):
        raise TypeError(
            f"ledger_of takes the xarray.DataTree pmp.sample returned, got {type(idata).__name__}."
        )
    if LEDGER_ATTR not in idata.attrs:
        raise UnsupportedModelError(
            "This DataTree carries no privacy ledger: it was not returned by pmp.sample."
        )
    return PrivacyLedger.from_json(idata.attrs[LEDGER_ATTR])


@dataclass(frozen=True, repr=False)
class ReleaseCheck:
    """What `check_release` found: one ``(where, why)`` per item that would leak.

    ``releasable`` is True when nothing was found; ``repr()``, ``str()`` and Jupyter show
    the list, one finding a line."""

    findings: tuple[tuple[str, str], ...]

    @property
    def releasable(self) -> bool:
        return not self.findings

    def __bool__(self) -> bool:
        return self.releasable

    def __str__(self) -> str:
        if self.releasable:
            return "Releasable: every group was sealed by a private route and is unchanged."
        lines = [f"Not releasable ({counted(len(self.findings), 'finding')}):"]
        lines += [f"- {where}: {why}" for where, why in self.findings]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        if self.releasable:
            return f"<p>{html.escape(str(self))}</p>"
        items = "".join(
            f"<li><code>{html.escape(where)}</code>: {html.escape(why)}</li>"
            for where, why in self.findings
        )
        heading = f"Not releasable ({counted(len(self.findings), 'finding')}):"
        return f"<p>{heading}</p><ul>{items}</ul>"


def check_release(idata: xr.DataTree | pd.DataFrame) -> ReleaseCheck:
    """Whether ``idata`` may be released: which groups and attributes would leak, and why.

    A pandas DataFrame (a synthetic data set of `pmp.synthesize`) is releasable when it is
    sealed and unchanged since (its values, columns, dtypes and index), with no attribute but
    the seal, the ledger and the posterior draw it came from.

    Releasable means every group of the tree (nested ones included) was sealed by
    `pmp.sample`, `pmp.sample_posterior` or `pmp.sample_posterior_predictive` and is unchanged
    since (also after ``to_netcdf`` or ``to_zarr``), the root holds no data of its own, and
    every attribute is public (versions, settings, the privacy ledger). Reported otherwise:
    groups without a seal (``observed_data``, ``constant_data``, ``log_likelihood``, the
    ``posterior_predictive`` of ``pm.sample_posterior_predictive`` on the original model, a
    posterior from ``pm.sample``, a group nested in a sealed one), sealed groups whose values,
    variables, coordinates or public attributes changed, variables or coordinates at the root,
    a changed ledger, and other attributes (e.g. ``sampling_time``, a timing side channel).
    """
    if isinstance(idata, pd.DataFrame):
        return _check_frame(idata)
    if not isinstance(idata, xr.DataTree):
        raise TypeError(
            "check_release takes an xarray.DataTree or a pandas DataFrame (what pmp.sample "
            f"and pmp.synthesize return), got {type(idata).__name__}."
        )
    findings = []
    root = sorted(str(name) for name in (*idata.data_vars, *idata.coords))
    if root:
        findings.append(
            (
                "/",
                f"data at the root of the tree, outside every group ({', '.join(root)}): no "
                "private route puts any there; what it was computed from is unknown.",
            )
        )
    for group in idata.descendants:
        name = group.path.lstrip("/")
        seal_value = group.attrs.get(SEAL_ATTR)
        if seal_value is None:
            why = _WHY.get(name, "added after the release: what it was computed from is unknown")
            findings.append((name, f"not sealed by a private route: {why}."))
            continue
        if seal_value != _digest(group):
            findings.append(
                (
                    name,
                    "changed since a private route sealed it (values, variables, coords or "
                    f"public attributes). {_POST_PROCESSING}",
                )
            )
        for key in sorted(set(group.attrs) - {SEAL_ATTR, *PUBLIC_ATTRS}):
            findings.append((f"{name}.attrs[{key!r}]", _NOT_PUBLIC))
        for kind, variables in (("", group.data_vars), ("coords", group.coords)):
            for variable_name, variable in variables.items():
                where = f"{name}.{kind + '.' if kind else ''}{variable_name}"
                findings += [(f"{where}.attrs[{key!r}]", _NOT_PUBLIC) for key in variable.attrs]
                findings += [
                    (f"{where}.encoding[{key!r}]", _NOT_PUBLIC_ENCODING)
                    for key, value in variable.encoding.items()
                    if not _public_encoding(key, value)
                ]
    root_seal = idata.attrs.get(SEAL_ATTR)
    if root_seal is None and LEDGER_ATTR in idata.attrs:
        findings.append(("attrs", "a privacy ledger that no private route sealed."))
    elif root_seal is not None and root_seal != _root_digest(idata):
        findings.append(
            ("attrs", "the ledger or a public attribute changed since a private route sealed it.")
        )
    for key in sorted(set(idata.attrs) - {SEAL_ATTR, LEDGER_ATTR, *PUBLIC_ATTRS}):
        findings.append((f"attrs[{key!r}]", _NOT_PUBLIC))
    return ReleaseCheck(tuple(findings))


def _check_frame(frame: pd.DataFrame) -> ReleaseCheck:
    """`check_release` of a table: sealed by a private route and unchanged since."""
    seal_value = frame.attrs.get(SEAL_ATTR)
    if seal_value is None:
        findings = [("table", "not sealed by a private route: what it holds is unknown.")]
    elif seal_value != _frame_digest(frame):
        findings = [("table", "changed since a private route sealed it (values, columns, index).")]
    else:
        findings = []
    for key in sorted(set(frame.attrs) - {SEAL_ATTR, LEDGER_ATTR, POSTERIOR_DRAW_ATTR}, key=str):
        findings.append((f"attrs[{key!r}]", _NOT_PUBLIC))
    return ReleaseCheck(tuple(findings))


def loo(data: xr.DataTree, *args, **kwargs) -> NoReturn:
    """`az.loo` on a private fit: it cannot run, and this says why and what to run instead.

    PSIS-LOO (like az.compare) reads log p(x_i | θ_s), the log-likelihood of every
    record x_i under every posterior draw θ_s: a function of record i alone, computed
    without noise, so releasing it would release each record (its sensitivity to one
    record is unbounded; no ε covers it). No private route computes it, so the DataTree
    of a private fit has no ``log_likelihood`` group and az.loo fails with ArviZ's "log
    likelihood not found". `check_release` reports the group if one is added.

    Instead, free of privacy cost: posterior predictive checks of what was released,
    ``pmp.sample_posterior_predictive(idata, private)`` and `pmp.plot_ppc`, with their
    tail probabilities (compare models by how well each reproduces the released
    statistics); or az.loo on a model fitted to public data.

    Parameters
    ----------
    data, *args, **kwargs
        As for az.loo; not read.

    Raises
    ------
    NotReleasableError
        Always (also a `TypeError`, as ArviZ's), with the explanation above.
    """
    raise NotReleasableError(
        "az.loo (and az.compare) needs the log-likelihood of every raw record under "
        "every draw, a function of each record alone that no private route releases, so a "
        "private fit has no log_likelihood group. Check the fit on what was released instead, "
        "free: ppc = pmp.sample_posterior_predictive(idata, private); pmp.plot_ppc(ppc) (one "
        "panel per released cell, with P(rep >= released)); compare models by how well each "
        "reproduces the released statistics."
    )
