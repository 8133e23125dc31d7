"""Privacy reports for people: the ledger as a table, and cumulative ε against draws."""

from __future__ import annotations

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pymc_private.accounting import PrivacyLedger, Release
from pymc_private.sampling import ledger_of

__all__ = ["plot_privacy", "privacy_report"]


def _ledger(source: az.InferenceData | PrivacyLedger) -> PrivacyLedger:
    return source if isinstance(source, PrivacyLedger) else ledger_of(source)


def privacy_report(
    source: az.InferenceData | PrivacyLedger, *, delta: float = 1e-6, show: bool = True
) -> pd.DataFrame:
    """Print and return the ledger of a private fit as a table.

    One row per kind of release (mechanism, what it was computed from, ε and δ of one
    release, how many, subtotal, whether the noise was secure), then the totals: the plain
    sum (exact for pure ε-DP) and the composition at ``delta`` with the accountant that gave
    it (the smaller valid figure). For a sampler the "ε each" of a release is the ε per draw.

    Parameters
    ----------
    source
        An InferenceData returned by `pmp.sample` (also after `to_netcdf`/`from_netcdf`), or
        a `PrivacyLedger`.
    delta
        The δ at which to report the tighter (ε, δ) composition.
    show
        Print the table (the ledger's own rendering).
    """
    ledger = _ledger(source)
    table = pd.DataFrame(ledger.summary(delta))
    if show:
        print(ledger)
        print(ledger.composition(delta).description)
    return table


def _composed(
    earlier: list[Release], per_chain: dict[int, float], iterations: np.ndarray, delta: float
) -> np.ndarray:
    """Total ε at ``delta`` after each of ``iterations`` iterations of every chain."""
    return np.asarray(
        [
            PrivacyLedger(
                earlier
                + [Release("draws", eps, count=int(k)) for eps in per_chain.values() if k and eps]
            ).epsilon(delta)
            for k in iterations
        ]
    )


def plot_privacy(
    source: az.InferenceData | PrivacyLedger,
    *,
    delta: float = 1e-6,
    ax: plt.Axes | None = None,
    points: int = 25,
) -> plt.Axes:
    """Cumulative ε against the iteration index: each chain, and the total, plain and at δ.

    Chains are releases from the same data, so the total composes every chain's draws (and
    whatever was released before sampling, e.g. privatised statistics). Tuning iterations are
    charged and counted from iteration 0.

    Parameters
    ----------
    source
        An InferenceData returned by `pmp.sample`, or its ledger.
    delta
        The δ of the tighter composed curve.
    ax
        Axes to draw on (a new figure otherwise).
    points
        How many iteration counts to evaluate the δ-composed curve at.
    """
    ledger = _ledger(source)
    sampling = [r for r in ledger.releases if r.chain is not None]
    earlier = [r for r in ledger.releases if r.chain is None]
    per_chain: dict[int, float] = {}
    iterations_per_chain = 0
    for release in sampling:
        per_chain[release.chain] = per_chain.get(release.chain, 0.0) + release.epsilon
        iterations_per_chain = max(iterations_per_chain, release.count)
    with az.style.context("arviz-darkgrid"):
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 4))
        offset = sum(r.epsilon * r.count for r in earlier)
        steps = np.arange(iterations_per_chain + 1)
        for chain, eps in sorted(per_chain.items()):
            ax.plot(steps, offset + eps * steps, lw=1, alpha=0.7, label=f"chain {chain}")
        grid = np.unique(np.linspace(0, iterations_per_chain, points).round().astype(int))
        ax.plot(steps, offset + sum(per_chain.values()) * steps, color="k", lw=2, label="total")
        ax.plot(
            grid,
            _composed(earlier, per_chain, grid, delta),
            color="C3",
            lw=2,
            ls="--",
            label=f"total at δ = {delta:g}",
        )
        ax.set_xlabel("iteration (tuning included)")
        ax.set_ylabel("cumulative ε")
        ax.set_title("Privacy spent")
        ax.legend(fontsize="small")
    return ax
