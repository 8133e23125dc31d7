"""Reports for people: the ledger as a table, cumulative ε against draws, and the posterior
predictive check of every released cell."""

from __future__ import annotations

import dataclasses
import html
import math

import arviz  # noqa: F401 (registers ArviZ's matplotlib styles, arviz-darkgrid among them)
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr

from pymc_private.data.ledgers import PrivacyLedger
from pymc_private.dp.events import Release
from pymc_private.dp.risk import FALSE_POSITIVE_RATES
from pymc_private.errors import UnsupportedModelError
from pymc_private.release.seal import ledger_of

__all__ = ["PrivacyReport", "plot_ppc", "plot_privacy", "privacy_report"]


def _ledger(source: xr.DataTree | PrivacyLedger) -> PrivacyLedger:
    return source if isinstance(source, PrivacyLedger) else ledger_of(source)


class PrivacyReport:
    """The ledger of a private fit, for people: shown once in Jupyter (an HTML table), printed
    as text by ``print``, and as numbers by ``table``.

    Attributes
    ----------
    ledger
        The `PrivacyLedger` it reports.
    delta
        The δ at which the tighter (ε, δ) composition is reported.
    risk
        `pymc_private.dp.risk.AttackerRisk`: the largest true-positive rate of a membership
        attacker at each false-positive rate, and the Gaussian-DP μ where it applies.
    table
        A `pandas.DataFrame`: one row per kind of release (``kind="release"``: mechanism,
        statistic, ε and δ of one release, count, ``subtotal`` = Σ ε, secure), then the totals
        (``kind="total"``: the composed ε in ``subtotal``, its ``delta`` and ``method``; the
        composition at ``delta`` only when it is smaller than the plain sum). Cells
        that do not apply to a row are missing (NaN in number columns); the displays show
        them empty.
    """

    def __init__(
        self, ledger: PrivacyLedger, delta: float, false_positive_rates=FALSE_POSITIVE_RATES
    ):
        self.ledger = ledger
        self.delta = delta
        self.risk = ledger.risk(false_positive_rates)
        self.table = pd.DataFrame(ledger.summary(delta))

    @property
    def description(self) -> str:
        """The (ε, δ) guarantee of everything in the ledger and how it was composed, then
        what it means for a membership attacker (`risk`)."""
        return f"{self.ledger.composition(self.delta).description}. {self.risk.description}"

    def __str__(self) -> str:
        return f"{self.ledger.render(self.delta, self.risk)}\n{self.description}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        html_table = self.ledger.render_html(self.delta, self.risk)
        return f"{html_table}<p>{html.escape(self.description)}</p>"


def privacy_report(
    source: xr.DataTree | PrivacyLedger,
    *,
    delta: float = 1e-6,
    false_positive_rates=FALSE_POSITIVE_RATES,
) -> PrivacyReport:
    """The ledger of a private fit as a report: shown once in Jupyter, ``print``-able as text,
    its numbers in ``.table`` (`PrivacyReport`).

    One row per kind of release (mechanism, what it was computed from, ε and δ of one
    release, how many, subtotal, whether the noise was secure), then the totals: the plain
    sum (exact for pure ε-DP) and the composition at ``delta`` with the accountant that gave
    it, when it differs (the smaller valid figure). For a sampler the "ε each" of a release
    is the ε per draw.

    Parameters
    ----------
    source
        A DataTree returned by `pmp.sample` (also after `to_netcdf` and `xr.open_datatree`), or
        a `PrivacyLedger`.
    delta
        The δ at which to report the tighter (ε, δ) composition.
    false_positive_rates
        The rates at which to bound a membership attacker's true-positive rate (default
        0.1%, 1% and 10%; `pymc_private.dp.risk`), stated with the Gaussian-DP μ where every
        release is pure ε-DP, in ``.risk`` and the description.
    """
    return PrivacyReport(_ledger(source), delta, false_positive_rates)


def _chain_timelines(sampling: list[Release]) -> dict[int, list[Release]]:
    """Each chain's releases in ledger order: its iterations, call after call."""
    timelines: dict[int, list[Release]] = {}
    for release in sampling:
        timelines.setdefault(release.chain, []).append(release)
    return timelines


def _per_iteration(timeline: list[Release], length: int) -> np.ndarray:
    """ε spent by a chain at each iteration (0 after its last one)."""
    spent = np.zeros(length)
    start = 0
    for release in timeline:
        spent[start : start + release.count] += release.epsilon
        start += release.count
    return spent


def _prefix(timeline: list[Release], k: int) -> list[Release]:
    """The releases of a chain's first ``k`` iterations."""
    out, left = [], k
    for release in timeline:
        if left <= 0:
            break
        out.append(dataclasses.replace(release, count=int(min(release.count, left))))
        left -= release.count
    return out


def plot_privacy(
    source: xr.DataTree | PrivacyLedger,
    *,
    delta: float = 1e-6,
    ax: plt.Axes | None = None,
    points: int = 25,
) -> plt.Axes:
    """Cumulative ε against the iteration index: each chain's plain sum, the plain sum of
    all, and the ledger's composition at δ (much below the plain sum for long chains of
    Gaussian or subsampled steps, whose own ε each holds only at its own δ).

    Chains are releases from the same data, so the total composes every chain's draws (and
    whatever was released outside sampling, e.g. privatised statistics, which is the
    curves' starting point). Tuning iterations are charged and counted; a chain sampled in
    several calls continues its iteration count.

    Parameters
    ----------
    source
        A DataTree returned by `pmp.sample`, or its ledger.
    delta
        The δ of the tighter composed curve.
    ax
        Axes to draw on (a new figure otherwise).
    points
        How many iteration counts to evaluate the δ-composed curve at.
    """
    ledger = _ledger(source)
    earlier = [r for r in ledger.releases if r.chain is None]
    timelines = _chain_timelines([r for r in ledger.releases if r.chain is not None])
    length = max((sum(r.count for r in t) for t in timelines.values()), default=0)
    offset = float(sum(r.epsilon * r.count for r in earlier))
    # Make the figure before entering the style context: the first figure of a Jupyter
    # session switches on interactive mode, which leaving the context would switch off again.
    # A constrained layout keeps the axis labels inside the figure when it is saved.
    figure = plt.figure(figsize=(7, 4), layout="constrained") if ax is None else None
    with plt.style.context("arviz-darkgrid"):
        if figure is not None:
            ax = figure.add_subplot()
        if not timelines:
            _plot_pay_once(ax, source, ledger, offset, delta)
        else:
            _plot_per_draw(ax, earlier, timelines, length, offset, delta, points)
        ax.set_ylabel("cumulative ε")
        ax.set_title("Privacy spent")
        ax.legend(fontsize="small")
    return ax


# Chains often spend alike, so their curves coincide: each is drawn thinner than the one
# below it, in its own dash pattern, so that every chain stays visible.
_CHAIN_STYLES = ("-", "--", ":", "-.")


def _plot_per_draw(ax, earlier, timelines, length, offset, delta, points) -> None:
    steps = np.arange(length + 1)
    cumulative = {
        chain: np.concatenate([[0.0], np.cumsum(_per_iteration(timeline, length))])
        for chain, timeline in sorted(timelines.items())
    }
    grid = np.unique(np.linspace(0, length, points).round().astype(int))
    composed = [
        PrivacyLedger(earlier + [r for t in timelines.values() for r in _prefix(t, k)]).epsilon(
            delta
        )
        for k in grid
    ]
    widths = np.linspace(3.0, 1.0, len(cumulative)) if len(cumulative) > 1 else [1.5]
    for k, ((chain, spent), width) in enumerate(zip(cumulative.items(), widths, strict=True)):
        style = _CHAIN_STYLES[k % len(_CHAIN_STYLES)]
        ax.plot(steps, offset + spent, lw=width, ls=style, alpha=0.8, label=f"chain {chain}")
    total = offset + sum(cumulative.values(), np.zeros(length + 1))
    ax.plot(steps, total, color="k", lw=2, label="plain sum of ε")
    ax.plot(grid, composed, color="C3", lw=2, ls="--", label=f"composed at δ = {delta:g}")
    ax.set_xlabel("iteration (tuning included)")


def _plot_pay_once(ax, source, ledger, offset, delta) -> None:
    """A fit on privatised statistics: ε was spent once, before sampling; each draw is
    post-processing (ε = 0). Shown as a step at iteration 0 and a flat line over the draws."""
    draws = 1
    if isinstance(source, xr.DataTree) and "posterior" in source.children:
        draws = int(source["posterior"].sizes["draw"])
    steps = np.array([-0.5, 0.0, draws])
    ax.step(steps, [0.0, offset, offset], where="post", color="k", lw=2, label="total")
    if ledger.releases:
        composed = ledger.epsilon(delta)
        if composed < offset:
            ax.hlines(composed, 0, draws, color="C3", lw=2, ls="--", label=f"at δ = {delta:g}")
    ax.annotate(
        f"released once before sampling: ε = {offset:.4g}\neach draw: ε = 0 (post-processing)",
        xy=(0.4, 0.45),
        xycoords="axes fraction",
        fontsize="small",
    )
    ax.set_ylim(0.0, max(offset, 1e-12) * 1.15)
    ax.set_xlabel("draw")


def plot_ppc(
    ppc: xr.DataTree,
    var_names: list[str] | None = None,
    *,
    bins: int = 30,
    max_panels: int = 24,
) -> np.ndarray:
    """The posterior predictive check of a privatised fit, one panel per released cell: the
    histogram of the replicated releases s̃_rep against the released value s̃ (a vertical
    line), with the tail probability P(s̃_rep ≥ s̃).

    az.plot_ppc pools every cell of a statistic into one density (twelve counts of naive
    Bayes in one curve) and cannot draw a density of a single released value; here each
    cell, a scalar release included, is its own check. Reads only what
    `pmp.sample_posterior_predictive` returned for a privatised model (public): free.

    Parameters
    ----------
    ppc
        What `pmp.sample_posterior_predictive` returned for a privatised model (its
        ``posterior_predictive`` beside the released ``observed_data``), alone or extended
        into the fit's DataTree.
    var_names
        The released statistics to show (default: all).
    bins
        Histogram bins per panel.
    max_panels
        At most this many cells are drawn, in the order of the statistics and their cells
        (the figure's title says how many were left out).

    Returns
    -------
    numpy.ndarray
        The axes, one per panel (rows of four), unused ones hidden.
    """
    groups = set(ppc.children) if isinstance(ppc, xr.DataTree) else set()
    if not {"posterior_predictive", "observed_data"} <= groups:
        raise UnsupportedModelError(
            "plot_ppc takes what pmp.sample_posterior_predictive returns for a privatised "
            "model: replicated releases (posterior_predictive) beside the released ones "
            "(observed_data). For predictions at public inputs, plot idata.predictions."
        )
    released = ppc["observed_data"].to_dataset()
    replicates = ppc["posterior_predictive"].to_dataset()
    names = list(released.data_vars) if var_names is None else list(var_names)
    unknown = [n for n in names if n not in released or n not in replicates]
    if unknown:
        raise UnsupportedModelError(
            f"var_names must name released statistics ({sorted(released.data_vars)}); "
            f"got {unknown}."
        )
    cells = [(name, index) for name in names for index in np.ndindex(released[name].shape)]
    shown = cells[:max_panels]
    columns = min(4, len(shown))
    rows = math.ceil(len(shown) / columns)
    # The figure before the style context (see plot_privacy).
    figure, axes = plt.subplots(
        rows, columns, figsize=(3.2 * columns, 2.5 * rows), layout="constrained", squeeze=False
    )
    with plt.style.context("arviz-darkgrid"):
        for ax, (name, index) in zip(axes.flat, shown, strict=False):
            replicated = replicates[name].values[(Ellipsis, *index)].ravel()
            value = float(released[name].values[index])
            ax.hist(replicated, bins=bins, color="C0", alpha=0.75)
            ax.axvline(value, color="C3", lw=2)
            tail = float(np.mean(replicated >= value))
            ax.set_title(name + (str(list(index)) if index else ""), fontsize="small")
            ax.text(
                0.02,
                0.92,
                f"P(rep ≥ released) = {tail:.2f}",
                transform=ax.transAxes,
                fontsize="x-small",
            )
            ax.set_yticks([])
        for ax in axes.flat[len(shown) :]:
            ax.set_visible(False)
    left_out = len(cells) - len(shown)
    figure.suptitle(
        "Replicated releases (histogram) against the released value (line)"
        + (f"; {left_out} more cells not shown" if left_out else ""),
        fontsize="small",
    )
    return axes
