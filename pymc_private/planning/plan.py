"""The record `pmp.plan` returns: the predicted posterior sd of every parameter entry and the
noise on every released statistic at one ε, with its display.

The prediction itself (the Fisher information of the released statistics' law, and the
inverse that finds the ε a target needs) is `pymc_private.planning.planner`; a `PrivacyPlan` keeps
it to answer `PrivacyPlan.sd` and `PrivacyPlan.epsilon_for` at other ε.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

__all__ = ["ParameterSpread", "Predictor", "PrivacyPlan", "StatisticNoise"]


class Predictor(Protocol):
    """What a plan asks of the prediction it was made from (`pmp.plan`'s planner): the
    posterior sd of a parameter at an ε, and the ε a target needs."""

    def sd(self, parameter: str, epsilon: float, delta: float, *, private: bool) -> np.ndarray: ...

    def epsilon_for(self, delta, sd_inflation, sd, parameters) -> float: ...


@dataclass(frozen=True)
class ParameterSpread:
    """The predicted posterior standard deviation of one parameter entry.

    Attributes
    ----------
    parameter
        The entry, by the model's coords where it has them, e.g. ``"theta[1, 0]"``.
    at
        The value θ₀ at which the prediction is made.
    sd_exact
        Without privacy noise: the posterior of the raw data.
    sd_private
        With the release's noise: the noise-aware posterior.
    """

    parameter: str
    at: float
    sd_exact: float
    sd_private: float

    @property
    def inflation(self) -> float:
        """``sd_private / sd_exact``: how much wider the private posterior is."""
        return self.sd_private / self.sd_exact


@dataclass(frozen=True)
class StatisticNoise:
    """The noise on one released statistic against its own sampling spread at θ₀.

    Attributes
    ----------
    statistic
        The statistic's name (`pmp.analyze`).
    mechanism
        ``"laplace"`` or ``"gaussian"``.
    noise_sd
        The noise's standard deviation per cell (natural units).
    sampling_sd
        The median over cells of the statistic's sampling standard deviation at θ₀; NaN for
        a statistic the posterior plugs in rather than models (a regression's Gram matrix).
    """

    statistic: str
    mechanism: str
    noise_sd: float
    sampling_sd: float

    @property
    def ratio(self) -> float:
        """``noise_sd / sampling_sd``: above about ½ the noise matters (plug-in intervals
        would be too narrow by √(1 + ratio²))."""
        return self.noise_sd / self.sampling_sd if self.sampling_sd != 0 else math.inf


@dataclass(frozen=True)
class PrivacyPlan:
    """What `pmp.privatize(model, epsilon, delta=delta)` will cost in accuracy, predicted
    before any data is read (`plan`).

    Attributes
    ----------
    epsilon, delta
        The release's privacy parameters.
    mechanism
        The mechanism `pmp.privatize` would choose (``"laplace"`` or ``"gaussian"``).
    n_records
        The public n.
    parameters
        One `ParameterSpread` per parameter entry.
    statistics
        One `StatisticNoise` per noised statistic.
    notes
        What the prediction assumed where the data would decide, and where it is known to
        be optimistic.
    planner
        The prediction itself, which `sd` and `epsilon_for` evaluate at other ε.
    """

    epsilon: float
    delta: float
    mechanism: str
    n_records: int
    parameters: tuple[ParameterSpread, ...]
    statistics: tuple[StatisticNoise, ...]
    notes: tuple[str, ...]
    planner: Predictor = field(repr=False, compare=False)

    def sd(self, parameter: str, *, private: bool = True) -> np.ndarray:
        """The predicted posterior sd of every entry of the free variable ``parameter``, in
        its shape (``private=False``: without the noise)."""
        return self.planner.sd(parameter, self.epsilon, self.delta, private=private)

    def epsilon_for(
        self,
        *,
        target_sd_inflation: float | None = None,
        target_sd: float | Mapping[str, float] | None = None,
        parameters: Sequence[str] | None = None,
    ) -> float:
        """The smallest ε (at this plan's δ and mechanism choice) whose release meets a target.

        Parameters
        ----------
        target_sd_inflation
            The largest ratio, private posterior sd over the raw-data one, allowed for every
            entry of ``parameters``: e.g. 1.1 for intervals at most 10% wider.
        target_sd
            The largest private posterior sd allowed: one number for every entry of
            ``parameters``, or a number per free variable. A central 90% interval is about
            3.29 sd wide.
        parameters
            The free variables the target is for (default: all those the data informs).

        Raises
        ------
        InvalidPrivacyParameterError
            No target, both, a target that is not a finite number (> 1 for an inflation,
            > 0 for an sd), an unknown parameter, or a target no ε up to 10⁴ meets (the
            message gives what ε = 10⁴ reaches).
        """
        return self.planner.epsilon_for(self.delta, target_sd_inflation, target_sd, parameters)

    def _rows(self) -> tuple[list[list[str]], list[list[str]]]:
        parameters = [
            [
                p.parameter,
                f"{p.at:.4g}",
                f"{p.sd_exact:.4g}",
                f"{p.sd_private:.4g}",
                f"{p.inflation:.3f}",
            ]
            for p in self.parameters
        ]
        statistics = [
            [
                s.statistic,
                s.mechanism,
                f"{s.noise_sd:.4g}",
                _shown(s.sampling_sd, ".4g"),
                _shown(s.ratio, ".3g"),
            ]
            for s in self.statistics
        ]
        return parameters, statistics

    def _title(self) -> str:
        delta = f", δ = {self.delta:g}" if self.delta else ""
        return (
            f"PrivacyPlan: pmp.privatize at ε = {self.epsilon:.4g}{delta} ({self.mechanism}), "
            f"n = {self.n_records}"
        )

    _PARAMETER_HEADER = ("parameter", "at", "sd (no noise)", "sd (private)", "inflation")
    _STATISTIC_HEADER = ("statistic", "noise", "noise sd", "sampling sd", "ratio")

    def __repr__(self) -> str:
        parameters, statistics = self._rows()
        lines = [self._title()]
        for title, header, rows in (
            ("Predicted posterior sd", self._PARAMETER_HEADER, parameters),
            ("Noise per statistic", self._STATISTIC_HEADER, statistics),
        ):
            widths = [max(len(c) for c in column) for column in zip(header, *rows, strict=True)]
            lines += ["", title]
            for row in [header, *rows]:
                cells = (c.ljust(w) for c, w in zip(row, widths, strict=True))
                lines.append(("  " + "  ".join(cells)).rstrip())
        lines += ["", *(f"Note: {a}" for a in self.notes)]
        return "\n".join(lines).rstrip()

    def _repr_html_(self) -> str:
        parameters, statistics = self._rows()
        parts = [f"<div><strong>{html.escape(self._title())}</strong>"]
        for title, header, rows in (
            ("Predicted posterior sd", self._PARAMETER_HEADER, parameters),
            ("Noise per statistic", self._STATISTIC_HEADER, statistics),
        ):
            parts.append(f"<p>{html.escape(title)}</p><table><thead><tr>")
            parts.extend(f"<th>{html.escape(h)}</th>" for h in header)
            parts.append("</tr></thead><tbody>")
            parts.extend(
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                for row in rows
            )
            parts.append("</tbody></table>")
        parts.extend(f"<p><em>Note: {html.escape(a)}</em></p>" for a in self.notes)
        parts.append("</div>")
        return "".join(parts)


def _shown(value: float, spec: str) -> str:
    return "-" if math.isnan(value) else format(value, spec)
