"""Release plans: one class per layout of `pmp.privatize`'s release, each built once from
public quantities (the analysis, ε, δ, the mechanism), stating its cost before any data is
read and drawing its noise from the same fields.

Every plan answers three questions, in this order:

- ``plan.releases()``: the `Release` records its cost is checked as (`PrivacyLedger.limits`),
  from public quantities only, before any data is read;
- ``plan.read(data)``: what it reads from the data (the exact statistics, or the records),
  through the one door in (`pymc_private.data.declaration`);
- ``plan.run(values, rng)``: the noisy statistics in natural units, the releases the ledger
  records (those of ``plan.releases()``: each plan holds mechanism objects,
  `pymc_private.dp.mechanisms`, whose event is the cost before the data and whose call draws
  the noise), and the noise law of every noised statistic.

The layouts are `CellsPlan` (every statistic by its own integer mechanism, a regression's
moments recorded jointly), `UnitShiftPlan` (count statistics under the discrete Gaussian of
their exact privacy profile, one vector release) and `FourierPlan` (Zhang et al.'s parity
counts). `chosen_plan` picks one, once. Each plan's docstring states its ε (δ) and the paper
it comes from. The noise primitives are `pymc_private.dp.mechanisms`'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pymc as pm

from pymc_private.analysis.core import PrivacyAnalysis
from pymc_private.data.declaration import exact_statistics, in_memory_values
from pymc_private.data.records import Placeholder, Source, statistics_pass
from pymc_private.dp import mechanisms
from pymc_private.dp.events import Release, ZcdpEvent, unit_shift_scale, zcdp_rho
from pymc_private.dp.measurements import ceil_float
from pymc_private.dp.mechanisms import RandomState, ceil_sqrt
from pymc_private.dp.noise import NoiseLaw
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedModelError
from pymc_private.families.kinds import COUNTS
from pymc_private.families.statistics import StatisticSpec, regression_group, regression_l2_squared

__all__ = [
    "CellsPlan",
    "FourierPlan",
    "ParityCounts",
    "ReleasePlan",
    "UnitShiftPlan",
    "checked_mechanism",
    "chosen_plan",
]

Noised = tuple[dict[str, np.ndarray], list[Release], dict[str, NoiseLaw]]

# The integer mechanism of each ``mechanism=`` a cell release takes, whose noise law the plan
# hands to the noise-aware likelihood.
_CELL_MECHANISMS: dict[str, type[mechanisms.Mechanism]] = {
    "laplace": mechanisms.DiscreteLaplaceMechanism,
    "gaussian": mechanisms.DiscreteGaussianMechanism,
}


def chosen_plan(
    analysis: PrivacyAnalysis,
    epsilon: float,
    *,
    delta: float = 0.0,
    mechanism: str = "auto",
    release: str = "cells",
    secure: bool = True,
    split: Mapping[str, float] | None = None,
) -> ReleasePlan:
    """The plan `pmp.privatize` runs for ``analysis`` at (ε, δ), from public quantities only.

    ``split`` gives the budget's split across the noised statistics of a `CellsPlan` (public
    weights by statistic name, `CellsPlan.of`); the unit-shift and Fourier plans release
    their statistics as one and ignore it.

    ``release="fourier"`` gives a `FourierPlan` (or `UnsupportedModelError` saying why the
    model is not one of Boolean variables). Otherwise the unit-shift gate is decided once:
    when every noised statistic is a count whose cells one record moves by at most 1
    (Δ∞ = 1, unit 1), a record moves at most K = Σ_j Δ₁_j cells by 1 each in all (each moved
    cell adds at least 1 to Δ₁_j), and the Gaussian is a `UnitShiftPlan` at the σ of the
    exact profile of K unit shifts (`dp.events.unit_shift_scale`), if there is one; else a
    `CellsPlan`.

    ``mechanism`` is ``"laplace"``, ``"gaussian"`` or ``"auto"``: the mechanism whose noise
    variance per cell (natural units, the same for every cell) is lower at (ε, δ): Laplace
    2(Δ₁/ε)², Gaussian Δ₂²/(2ρ) with ρ = `zcdp_rho` (ε, δ) and Δ₂² = Σ_j Δ₂_j² over the
    statistics (`CellsPlan.l2_weights`; for the Fourier release of m parity counts,
    Δ₁ = Δ₂² = m), or σ² of the unit-shift plan when the gate admits it. Laplace when
    δ = 0. The arguments are validated by the caller (`pymc_private.pay_once.privatize`).
    """
    if release == "fourier":
        counts = ParityCounts.of(analysis)
        if mechanism == "auto":
            mechanism = _lower_variance(analysis, epsilon, delta, counts, None)
        return FourierPlan.of(counts, epsilon, delta, mechanism, secure)
    automatic = mechanism == "auto" and delta > 0 and analysis.sensitivity_l1 not in (None, 0)
    gaussian = mechanism == "gaussian" or automatic
    shifts = _unit_shifts(analysis, epsilon, delta) if gaussian else None
    if mechanism == "auto":
        mechanism = _lower_variance(analysis, epsilon, delta, None, shifts)
    if mechanism == "gaussian" and shifts is not None:
        return UnitShiftPlan.of(analysis, shifts, epsilon, delta, secure)
    return CellsPlan.of(analysis, epsilon, delta, mechanism, secure, split)


def checked_mechanism(mechanism, delta: float) -> str:
    """``mechanism`` of `pmp.privatize` and `pmp.plan`: ``"auto"``, ``"laplace"``, or
    ``"gaussian"`` with δ > 0."""
    if mechanism not in ("auto", "laplace", "gaussian"):
        raise InvalidPrivacyParameterError(
            f"mechanism must be 'auto', 'laplace' or 'gaussian', got {mechanism!r}."
        )
    if mechanism == "gaussian" and delta == 0:
        raise InvalidPrivacyParameterError(
            "mechanism='gaussian' needs delta > 0 (a Gaussian release is (ε, δ)-DP only for "
            "δ > 0); pass e.g. delta=1e-6, or use mechanism='laplace'."
        )
    return mechanism


def _lower_variance(
    analysis: PrivacyAnalysis,
    epsilon: float,
    delta: float,
    counts: ParityCounts | None,
    shifts: int | None,
) -> str:
    """The mechanism of lower noise variance per cell (`chosen_plan`), of the parity
    ``counts`` if given, of the unit-shift Gaussian of K = ``shifts`` if given."""
    if delta == 0 or analysis.sensitivity_l1 in (None, 0):
        return "laplace"
    l1 = analysis.sensitivity_l1 if counts is None else counts.size
    l2_squared = float(CellsPlan.l2_weights(analysis)[1]) if counts is None else counts.size
    laplace = 2.0 * (l1 / epsilon) ** 2
    gaussian = l2_squared / (2.0 * zcdp_rho(epsilon, delta))
    if shifts is not None:
        gaussian = unit_shift_scale(epsilon, delta, shifts) ** 2
    return "gaussian" if gaussian < laplace else "laplace"


def _unit_shifts(analysis: PrivacyAnalysis, epsilon: float, delta: float) -> int | None:
    """K when every noised statistic is a unit-shift count and the exact profile of K unit
    shifts has a σ at (ε, δ) (`chosen_plan`); None otherwise."""
    noised = [spec for spec in analysis.statistics if spec.sensitivity > 0]
    if not noised:
        return None
    if any(
        spec.kind is not COUNTS or spec.unit != 1 or spec.sensitivity_linf != 1 for spec in noised
    ):
        return None
    shifts = sum(spec.sensitivity for spec in noised)
    return shifts if unit_shift_scale(epsilon, delta, shifts) is not None else None


def _exact_statistics(data: pm.Model | Mapping[str, np.ndarray], specs) -> dict[str, np.ndarray]:
    """s(D) of ``specs`` from the model's `PrivateData` (checked), or from raw in-memory
    arrays by `PrivateData` name (checked by the caller), in one pass."""
    if isinstance(data, pm.Model):
        return exact_statistics(data, specs)
    if any(isinstance(values, Placeholder) for values in data.values()):
        raise UnsupportedModelError(
            "release_statistics was handed the placeholder of Dask-backed PrivateData "
            "as records: pass the model, whose records are read where they are."
        )
    sources = {name: Source(np.asarray(values)) for name, values in data.items()}
    return statistics_pass(specs, sources).statistics


@dataclass(frozen=True)
class CellsPlan:
    """Every statistic released by its own integer mechanism (Zhang et al. 2016, Algorithm 1;
    Foulds et al. 2016, eq. 16): the default layout of `pmp.privatize`.

    Laplace (ε-DP): statistic j (Δ_j in grid steps, Δ₁_j = unit_j·Δ_j in natural units) gets
    OpenDP's exact discrete Laplace at ε_j = ε·Δ₁_j/Δ₁, scale Δ_j/ε_j in grid steps, so every
    cell has scale Δ₁/ε in natural units; the ε_j compose to Σ_j ε_j ≤ ε.

    Gaussian (ρ-zCDP, (ε, δ)-DP; Canonne, Kamath & Steinke 2020): ρ = `zcdp_rho` (ε, δ), the
    largest ρ the ledger converts to at most ε at δ (`dp.events.zcdp_epsilon`), and statistic
    j gets OpenDP's exact discrete Gaussian at ρ_j = ρ·Δ₂_j²/Δ₂² and Δ₂ = `ceil_sqrt` (Δ₂_j²)
    in grid steps, so every cell has σ = Δ₂/√(2ρ) in natural units; the ρ_j add (Rényi
    composition). A regression's moments XᵀX, Xᵀy and yᵀy (`statistics.regression_group`)
    count in Δ₂² by their joint bound (`statistics.regression_l2_squared`) and are recorded as
    one release at the ρ of that bound (`joint_rho`), when that bound is below the sum of
    their own (`merged_group`).

    The shares are rounded down until their cost is ≤ ε (or ρ) exactly, and each must be
    finite and > 0 with a finite noise scale > 0 in floating point (checked when the plan is
    built, before any data). A statistic of sensitivity 0 is a public function of n and the
    bounds and is released as is, free. Each release records the ε (ρ) its mechanism's
    privacy map returns, at most its share.

    Attributes
    ----------
    mechanism
        ``"laplace"`` or ``"gaussian"``: the noise of every cell (and its `NoiseLaw`).
    delta
        δ at which a Gaussian release states its ε (0 for Laplace).
    secure
        OpenDP's exact samplers (True) or numpy's (False, marked not secure).
    shares
        Each statistic of the analysis with its share: ε_j (Laplace) or ρ_j (Gaussian); 0
        for the statistics of sensitivity 0, which come first.
    joint
        The regression's moments recorded as one release (Gaussian only), or ().
    """

    mechanism: str
    delta: float
    secure: bool
    shares: tuple[tuple[StatisticSpec, float], ...]
    joint: tuple[StatisticSpec, ...]

    @classmethod
    def of(
        cls,
        analysis: PrivacyAnalysis,
        epsilon: float,
        delta: float = 0.0,
        mechanism: str = "laplace",
        secure: bool = True,
        split: Mapping[str, float] | None = None,
    ) -> CellsPlan:
        """The plan of ``analysis``'s statistics at ε (δ) with ``mechanism``'s shares: in
        proportion to each statistic's Δ₁_j (Laplace) or Δ₂_j² (Gaussian), which gives every
        cell the same noise scale, or to the public weights ``split`` by statistic name (the
        split `pymc_private.planning.planner.forecast` chooses), except for a
        regression's moments released as one (their joint bound holds at one noise scale)."""
        noised = [spec for spec in analysis.statistics if spec.sensitivity > 0]
        gaussian = mechanism == "gaussian"
        if gaussian:
            weights, total = cls.l2_weights(analysis)
            budget = zcdp_rho(epsilon, delta)
        else:
            weights = [Fraction(spec.sensitivity_l1) for spec in noised]
            total = Fraction(analysis.sensitivity_l1)
            budget = epsilon
        group = cls.merged_group(analysis) if gaussian else ()
        if split is not None and not group:
            weights = [Fraction(_checked_weight(split, spec.name)) for spec in noised]
            total = sum(weights, Fraction(0))
        shares = [budget * float(weight / total) for weight in weights]
        while _spent(noised, shares, group) > Fraction(budget):
            shares = [math.nextafter(share, 0.0) for share in shares]
        plan = [(spec, 0.0) for spec in analysis.statistics if spec.sensitivity == 0]
        for spec, share in zip(noised, shares, strict=True):
            if gaussian:
                scale = (
                    math.sqrt(spec.sensitivity_l2_squared / (2 * share)) if share > 0 else math.inf
                )
            else:
                scale = spec.sensitivity / share if share > 0 else math.inf
            if not (share > 0 and math.isfinite(share) and 0 < scale < math.inf):
                raise InvalidPrivacyParameterError(
                    f"The statistic {spec.name} has sensitivity Δ = {spec.sensitivity_l1!r} of "
                    f"Δ₁ = {float(total)!r}, so its share ε·Δ/Δ₁ of epsilon={epsilon!r} is "
                    f"{share!r} with noise scale {scale!r} (in grid steps), not a finite ε > 0 "
                    f"with a finite scale > 0 in floating point. Rescale {list(spec.data)} (and "
                    "their bounds) so that the sensitivities are within a few orders of "
                    "magnitude of each other, or choose another epsilon."
                )
            plan.append((spec, share))
        return cls(mechanism, delta, secure, tuple(plan), tuple(group))

    @staticmethod
    def l2_weights(analysis: PrivacyAnalysis) -> tuple[list[Fraction], Fraction]:
        """Δ₂_j² of each noised statistic in natural units (exact) and the Δ₂² of them all:
        their sum, with a regression's moments counted by their joint bound when it is
        smaller (`statistics.regression_l2_squared`)."""
        noised = [spec for spec in analysis.statistics if spec.sensitivity > 0]
        weights = [Fraction(spec.unit) ** 2 * spec.sensitivity_l2_squared for spec in noised]
        total = sum(weights, Fraction(0))
        group = CellsPlan.merged_group(analysis)
        if group:
            apart = sum(
                (w for spec, w in zip(noised, weights, strict=True) if spec in group), Fraction(0)
            )
            total -= apart - regression_l2_squared(group)
        return weights, total

    @staticmethod
    def merged_group(analysis: PrivacyAnalysis) -> tuple[StatisticSpec, ...]:
        """A regression's moments (`statistics.regression_group`) when their joint Δ₂² bound
        is below the sum of their own, so that releasing them as one costs less; else () and
        each is its own release. (One-signed covariates, x ∈ [0, 1]: the joint bound
        S² + Q/2 exceeds the sum of the cells' own bounds.)"""
        noised = [spec for spec in analysis.statistics if spec.sensitivity > 0]
        group = regression_group(noised)
        apart = sum(
            (Fraction(spec.unit) ** 2 * spec.sensitivity_l2_squared for spec in group),
            Fraction(0),
        )
        return group if group and regression_l2_squared(group) < apart else ()

    def releases(self) -> list[Release]:
        """The releases of each statistic's mechanism at its share (discrete Laplace at ε_j;
        discrete Gaussian at ρ_j stated at δ), as their privacy maps state them, the
        regression's moments merged: the cost checked before any data, and recorded."""
        return self._merged(
            [
                self._noise(spec, share).release(spec.name)
                for spec, share in self.shares
                if share > 0
            ]
        )

    def read(self, data: pm.Model | Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The exact statistics (int64, grid steps) the plan noises."""
        return _exact_statistics(data, [spec for spec, _ in self.shares])

    def run(self, values: Mapping[str, np.ndarray], rng: RandomState) -> Noised:
        """Each statistic in integer steps plus its noise, then in natural units, with the
        noise's law in natural units: Laplace scale unit·Δ_j/ε_j, or Gaussian σ =
        unit·Δ₂_j/√(2ρ_j), with ε_j, ρ_j as recorded; statistics drawn in the analysis'
        order."""
        noisy: dict[str, np.ndarray] = {}
        releases: list[Release] = []
        noise: dict[str, NoiseLaw] = {}
        for spec, share in self.shares:
            exact = values[spec.name]
            if spec.sensitivity == 0:
                noisy[spec.name] = spec.natural(exact)
                continue
            drawn, release = self._noise(spec, share)(exact, rng=rng, statistic=spec.name)
            recorded = release.rho if self.mechanism == "gaussian" else release.epsilon
            noise[spec.name] = self._noise_law(spec, recorded)
            releases.append(release)
            noisy[spec.name] = spec.natural(drawn)
        return noisy, self._merged(releases), noise

    def _noise(
        self, spec: StatisticSpec, share: float
    ) -> mechanisms.DiscreteGaussianMechanism | mechanisms.DiscreteLaplaceMechanism:
        """Statistic j's mechanism at its share: the discrete Gaussian at ρ_j and Δ₂ =
        `ceil_sqrt` (Δ₂_j²) stated at δ, or the discrete Laplace at ε_j and Δ_j (grid steps)."""
        if self.mechanism == "gaussian":
            return mechanisms.DiscreteGaussianMechanism(
                ceil_sqrt(spec.sensitivity_l2_squared), share, self.delta, secure=self.secure
            )
        return mechanisms.DiscreteLaplaceMechanism(spec.sensitivity, share, secure=self.secure)

    def noise_laws(self) -> dict[str, NoiseLaw]:
        """The noise law of every noised statistic at its planned share, in natural units,
        known before any data (`pmp.plan` reads it). `run` records the law of what it drew,
        whose scale OpenDP may round up slightly (``secure=True``)."""
        return {spec.name: self._noise_law(spec, share) for spec, share in self.shares if share > 0}

    def _noise_law(self, spec: StatisticSpec, share: float) -> NoiseLaw:
        """Statistic j's noise in natural units at ε_j (ρ_j) = ``share``: Laplace scale
        unit·Δ_j/ε_j, or Gaussian σ = unit·Δ₂_j/√(2ρ_j)."""
        if self.mechanism == "gaussian":
            scale = ceil_sqrt(spec.sensitivity_l2_squared) / math.sqrt(2.0 * share)
        else:
            scale = spec.sensitivity / share
        return _CELL_MECHANISMS[self.mechanism].noise_law(float(spec.unit) * scale)

    def _merged(self, releases: list[Release]) -> list[Release]:
        """``releases`` with the regression's moments merged into one release at their joint
        ρ (`joint_rho`, from the ρ_j each records, rounded up), stated at δ."""
        if not self.joint:
            return releases
        names = {spec.name for spec in self.joint}
        members = [r for r in releases if r.statistic in names]
        rho = ceil_float(joint_rho(self.joint, {r.statistic: r.rho for r in members}))
        joint = Release(
            members[0].mechanism,
            ZcdpEvent(rho, self.delta),
            sensitivity=math.sqrt(float(regression_l2_squared(self.joint))),
            statistic=", ".join(r.statistic for r in members),
            secure=members[0].secure,
            note=(
                "the regression's moments released together, ρ from their joint L2 bound "
                "(sensitivity in natural units); " + "; ".join(r.note for r in members)
            ),
        )
        return [r for r in releases if r.statistic not in names] + [joint]


def joint_rho(group, shares: Mapping[str, float]) -> Fraction:
    """The ρ of a regression's moments released together when statistic j is ρ_j-zCDP at its
    own Δ₂_j: each gets σ_j² ≥ Δ₂_j²/(2ρ_j) (natural units), and the Rényi divergences of the
    independent cells add, so the release is (Δ₂²/2·min_j σ_j²)-zCDP with Δ₂² the joint bound,
    at most max_j ρ_j·Δ₂²/Δ₂_j²."""
    joint = regression_l2_squared(group)
    return max(
        Fraction(shares[spec.name])
        * joint
        / (Fraction(spec.unit) ** 2 * spec.sensitivity_l2_squared)
        for spec in group
    )


def _checked_weight(split: Mapping[str, float], name: str) -> float:
    """The split's weight of statistic ``name``: a finite number > 0."""
    weight = split.get(name)
    if not (isinstance(weight, int | float) and math.isfinite(weight) and weight > 0):
        raise InvalidPrivacyParameterError(
            f"A budget split needs a finite weight > 0 for every noised statistic; "
            f"{name} has {weight!r}."
        )
    return float(weight)


def _spent(noised, shares, group) -> Fraction:
    """What the shares cost in all: their sum, a regression's moments at their joint ρ."""
    named = {spec.name: share for spec, share in zip(noised, shares, strict=True)}
    apart = sum((Fraction(named[spec.name]) for spec in noised if spec not in group), Fraction(0))
    return apart + (joint_rho(group, named) if group else 0)


@dataclass(frozen=True)
class UnitShiftPlan:
    """The discrete Gaussian on count statistics one record moves by at most 1 per cell, in
    at most K cells in all, at the σ of their exact privacy profile: one release.

    Every cell of every noised statistic gets independent N_ℤ(0, σ²) noise with σ =
    `events.unit_shift_scale` (ε, δ, K), the smallest σ whose (ε, δ) profile,
    `events.unit_shift_epsilon` (the K-fold composition of the unit-shift discrete Gaussian,
    proved the worst case there; dp-accounting's PLD), is within (ε, δ). The statistics are
    one vector release, recorded as one `Release` stating that profile's ε at δ, with
    ρ = K/(2σ²) as OpenDP's privacy map gives it at Δ₂ = `ceil_sqrt` (K) (the same noise is
    ρ-zCDP, which the ledger's Rényi route composes; `events.Release`). Compared with the
    zCDP calibration of `CellsPlan` (σ = √(K/2ρ), ρ = `zcdp_rho` (ε, δ)) it is about 7 % less
    noise at ε = 1, δ = 10⁻⁶.

    ``secure=True`` draws with OpenDP's ``make_gaussian`` on integer vectors at scale σ (the
    exact sampler of Canonne, Kamath & Steinke 2020); ``secure=False`` runs the same
    algorithm on numpy's floating-point generator (`UnitShiftGaussianMechanism`), marked not
    secure. Rounded normals, which it drew before, are not the discrete Gaussian and exceed
    its profile at small σ.

    Attributes
    ----------
    statistics
        Every statistic of the analysis, those of sensitivity 0 (released as they are) first.
    noise
        The mechanism (`dp.mechanisms.UnitShiftGaussianMechanism`) at σ, K (`chosen_plan`
        checks the counts) and δ: its event is the cost, recorded as it is planned.
    """

    statistics: tuple[StatisticSpec, ...]
    noise: mechanisms.UnitShiftGaussianMechanism

    @property
    def shifts(self) -> int:
        """K, the cells one record moves by 1 in all."""
        return self.noise.shifts

    @property
    def sigma(self) -> float:
        """σ of every noised cell."""
        return self.noise.sigma

    @classmethod
    def of(
        cls,
        analysis: PrivacyAnalysis,
        shifts: int,
        epsilon: float,
        delta: float,
        secure: bool = True,
    ) -> UnitShiftPlan:
        """The plan at (ε, δ) for ``analysis``'s counts, which move at most ``shifts``
        cells by 1: ε = `events.unit_shift_epsilon` (σ, K, δ) ≤ ``epsilon`` at δ, and ρ from
        OpenDP's map of the vector Gaussian at scale σ and Δ₂ = √K."""
        sigma = unit_shift_scale(epsilon, delta, shifts)
        statistics = tuple(sorted(analysis.statistics, key=lambda spec: spec.sensitivity > 0))
        noise = mechanisms.UnitShiftGaussianMechanism(sigma, shifts, delta, secure=secure)
        return cls(statistics, noise)

    def releases(self) -> list[Release]:
        """The one release, the same before the data and after the noise."""
        return [self.noise.release(", ".join(spec.name for spec in self._noised))]

    @property
    def _noised(self) -> list[StatisticSpec]:
        return [spec for spec in self.statistics if spec.sensitivity > 0]

    def read(self, data: pm.Model | Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The exact statistics (int64 counts) the plan noises."""
        return _exact_statistics(data, self.statistics)

    def run(self, values: Mapping[str, np.ndarray], rng: RandomState) -> Noised:
        """The counts plus N_ℤ(0, σ²) per cell, statistic by statistic in the analysis'
        order, with the noise law N(0, σ²) per cell (counts: unit 1)."""
        noised = self._noised
        counts, release = self.noise({spec.name: values[spec.name] for spec in noised}, rng=rng)
        noisy = {spec.name: spec.natural(values[spec.name]) for spec in self.statistics}
        noisy.update({spec.name: spec.natural(counts[spec.name]) for spec in noised})
        return noisy, [release], self.noise_laws()

    def noise_laws(self) -> dict[str, NoiseLaw]:
        """N(0, σ²) per cell of every noised count (unit 1), known before any data."""
        return {spec.name: self.noise.noise_law(self.sigma) for spec in self._noised}


@dataclass(frozen=True)
class ParityCounts:
    """Which parity counts the Fourier release of a model's statistics consists of
    (`FourierPlan`), and the tables they rebuild.

    Attributes
    ----------
    index
        The Boolean private index that groups counts (the class), or None.
    index_spec
        The count statistic of the index itself, if the model releases it.
    grouped
        The count statistics grouped by ``index`` (cells [g, element, x]).
    plain
        Ungrouped count statistics of Boolean data other than the index.
    n_records
        n (public).
    private_data
        The model's `PrivateData`, whose records the parity counts read.
    """

    index: str | None
    index_spec: StatisticSpec | None
    grouped: tuple[StatisticSpec, ...]
    plain: tuple[StatisticSpec, ...]
    n_records: int
    private_data: tuple[str, ...]

    @classmethod
    def of(cls, analysis: PrivacyAnalysis) -> ParityCounts:
        """The parity counts of ``analysis``'s statistics, or `UnsupportedModelError` saying
        why the model is not one of Boolean variables (counts of two categories, grouped by
        at most one Boolean index). Public: reads the analysis only."""
        public = sorted({s.group_by for s in analysis.statistics if s.group_values is not None})
        if public:
            raise UnsupportedModelError(
                f"release='fourier' transforms the joint table of the record's Boolean "
                f"variables; the public index {public[0]!r} is not part of the record. Use the "
                "default release='cells', whose per-group counts cost what ungrouped ones do."
            )
        index_names = {spec.group_by for spec in analysis.statistics if spec.group_by is not None}
        if len(index_names) > 1:
            raise UnsupportedModelError(
                f"release='fourier' needs counts grouped by at most one private index; this "
                f"model groups by {sorted(index_names)}. Use the default release='cells'."
            )
        index = next(iter(index_names), None)
        index_spec, grouped, plain = None, [], []
        for spec in analysis.statistics:
            boolean = spec.kind is COUNTS and spec.n_categories == 2
            if not boolean or (spec.group_by is not None and spec.n_groups != 2):
                raise UnsupportedModelError(
                    f"release='fourier' (Zhang et al. 2016, Algorithm 2) is for Boolean "
                    f"variables: the statistic {spec.name} is not a count of a binary variable"
                    f"{'' if spec.group_by is None else ' grouped by a binary index'}. Declare "
                    "bounds=(0, 1) on Bernoulli data, or use the default release='cells'."
                )
            if spec.group_by is not None:
                if spec.derived_first or spec.shape[0] != 2 or spec.shape[-1] != 2:
                    raise UnsupportedModelError(
                        f"release='fourier' reads both categories of both groups of "
                        f"{spec.name}, whose released shape is {spec.shape}; use the default "
                        "release='cells'."
                    )
                grouped.append(spec)
            elif spec.data == (index,) and spec.shape == (1,):
                index_spec = spec
            else:
                plain.append(spec)
        return cls(
            index=index,
            index_spec=index_spec,
            grouped=tuple(grouped),
            plain=tuple(plain),
            n_records=analysis.n_records,
            private_data=tuple(analysis.private_data),
        )

    @property
    def name(self) -> str:
        """The release's public label, e.g. ``"fourier(y_obs; x_obs | y_obs)"``."""
        names = [spec.name for spec in (self.index_spec, *self.plain, *self.grouped) if spec]
        if self.index_spec is None and self.index is not None:
            names.insert(0, f"parity({self.index})")
        return f"fourier({'; '.join(names)})"

    @property
    def size(self) -> int:
        """m: the number of parity counts released (Δ₁ = m, Δ₂² = m)."""
        elements = sum(math.prod(spec.shape[1:-1]) for spec in self.grouped)
        plain = sum(math.prod(spec.shape) for spec in self.plain)
        return (self.index is not None) + 2 * elements + plain

    def parities(self, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
        """The exact parity counts (int64): c_g, then each plain statistic, then c_x and
        c_{g,x} of each grouped statistic's elements."""
        parts = []
        if self.index is not None:
            index = np.asarray(arrays[self.index]).astype(np.int64).reshape(self.n_records)
            parts.append(np.array([index.sum()], dtype=np.int64))
        parts += [np.asarray(spec.compute(arrays), dtype=np.int64).ravel() for spec in self.plain]
        for spec in self.grouped:
            (data,) = spec.data
            values = np.asarray(arrays[data]).astype(np.int64).reshape(self.n_records, -1)
            parts.append(values.sum(axis=0))
            parts.append((values ^ index[:, None]).sum(axis=0))
        return np.concatenate(parts).astype(np.int64)

    def tables(self, parities: np.ndarray) -> dict[str, np.ndarray]:
        """The model's count statistics (natural units, released form) reconstructed from
        parity counts: consistent for any real input (`FourierPlan`)."""
        parities = np.asarray(parities, dtype=np.float64)
        n = float(self.n_records)
        out: dict[str, np.ndarray] = {}
        at = 0
        ones = 0.0
        if self.index is not None:
            ones, at = parities[0], 1
            if self.index_spec is not None:
                out[self.index_spec.name] = np.array([ones])
        for spec in self.plain:
            size = math.prod(spec.shape)
            out[spec.name] = parities[at : at + size].reshape(spec.shape)
            at += size
        for spec in self.grouped:
            elements = math.prod(spec.shape[1:-1])
            x_ones = parities[at : at + elements]
            odd = parities[at + elements : at + 2 * elements]
            at += 2 * elements
            both = (ones + x_ones - odd) / 2.0
            cells = np.empty((2, elements, 2))
            cells[1, :, 1] = both
            cells[1, :, 0] = ones - both
            cells[0, :, 1] = x_ones - both
            cells[0, :, 0] = n - ones - cells[0, :, 1]
            out[spec.name] = cells.reshape(spec.shape)
        return out


@dataclass(frozen=True)
class FourierPlan:
    """Zhang et al. (2016) Algorithm 2: the release of Boolean count tables in the Fourier
    domain, ``pmp.privatize(model, epsilon, release="fourier", noise_aware=False)``.

    The default `CellsPlan` noises every cell a record can move and then estimates the group
    sizes jointly from all of them (`pymc_private.pay_once.privatize`). This is the papers'
    alternative for models whose private variables are all Boolean (Bernoulli naive Bayes: a
    binary class g and binary features x_1 … x_d with ``x ~ Bernoulli(theta[g])``).

    The mechanism
    -------------
    Let h be the contingency table of the records over the Boolean variables I. The marginal
    tables the model needs (g alone, each (g, x_j) pair, or x_j alone) lie in the span of the
    Fourier basis vectors f_γ, γ in the downward closure N_I of the variable sets they cover
    (Barak et al. 2007, Theorem 2 in Zhang et al.). Each coefficient is an affine function of
    a *parity count*, c_γ = #{records whose variables in γ have an odd sum}:

        ⟨f_γ, h⟩ = 2^{−|I|/2} (n − 2 c_γ),

    and c_∅ = 0, so with n public the release is the parity counts of the other coefficients
    (`ParityCounts`): c_{g} = Σ g, and for every feature j, c_{x_j} = Σ x_j and
    c_{g,x_j} = Σ (g ⊕ x_j) (or c_{x_j} alone for a Boolean variable no index groups). Noise
    is added to these integers, and every marginal the model reads is reconstructed from them
    (post-processing):

        #(g=1, x=1) = (c_g + c_x − c_{g,x}) / 2,   #(g=1, x=0) = c_g − #(1, 1),
        #(g=0, x=1) = c_x − #(1, 1),               #(g=0, x=0) = n − c_g − #(0, 1).

    Any real coefficients give tables that are *consistent* with one another (each feature's
    table sums to the same class sizes c_g and n − c_g), which is the point of the paper's
    construction; the plug-in posterior then projects them onto non-negative integers as
    usual. Zhang et al.'s steps 7 (raising the first coefficient so that the table is
    non-negative with high probability, for "stealth") is replaced by that projection, which
    is also post-processing.

    Privacy cost
    ------------
    Replacing one record moves each parity count by at most 1, so with m released counts
    Δ₁ = m and Δ₂ = √m; the counts are released at once by OpenDP's exact discrete Laplace
    with scale m/ε (ε-DP; Zhang et al. 2016, Corollary 2, whose scale 2|N_I| ε⁻¹ 2^{−|I|/2}
    on the normalised coefficients is this one on parity counts, with the coefficient of ∅
    known since n is public) or its exact discrete Gaussian at ρ = `zcdp_rho` (ε, δ) with
    σ = √m/√(2ρ). The exact supremum of the moved L1 mass is m − 1 for naive Bayes (a record
    keeps its class and flips every feature: 2d of the 2d + 1 counts); the ledger records the
    sound, larger cost of m. The default release has the same Δ₁ = 2d + 1 but releases 4d + 1
    noisy cells instead of 2d + 1 coefficients; `benchmarks/fourier.py` compares the two.

    The noise of a reconstructed cell is a combination of the coefficients' noises, correlated
    across cells, which the noise-aware posterior (`pymc_private.noise_aware.likelihood`) does not
    model:
    this release is for the plug-in posterior (``noise_aware=False``) only.

    Attributes
    ----------
    counts
        The parity counts released and the tables they rebuild.
    mechanism
        ``"laplace"`` or ``"gaussian"``.
    share
        The whole budget of the one release: ε (Laplace), or ρ = `zcdp_rho` (ε, δ).
    delta
        δ at which a Gaussian release states its ε.
    secure
        OpenDP's exact samplers (True) or numpy's (False, marked not secure).
    """

    counts: ParityCounts
    mechanism: str
    share: float
    delta: float
    secure: bool

    @classmethod
    def of(
        cls,
        counts: ParityCounts,
        epsilon: float,
        delta: float = 0.0,
        mechanism: str = "laplace",
        secure: bool = True,
    ) -> FourierPlan:
        """The release of ``counts`` at ε (δ) with ``mechanism``."""
        share = zcdp_rho(epsilon, delta) if mechanism == "gaussian" else epsilon
        return cls(counts, mechanism, share, delta, secure)

    @property
    def noise(self) -> mechanisms.DiscreteGaussianMechanism | mechanisms.DiscreteLaplaceMechanism:
        """The mechanism of the parity counts at the plan's share: the discrete Gaussian at ρ
        and Δ₂ = `ceil_sqrt` (Δ) stated at δ, or the discrete Laplace at ε and Δ₁ = Δ, with Δ
        = ``counts.size`` the counts one record moves by 1."""
        size = self.counts.size
        if self.mechanism == "gaussian":
            return mechanisms.DiscreteGaussianMechanism(
                ceil_sqrt(size), self.share, self.delta, secure=self.secure
            )
        return mechanisms.DiscreteLaplaceMechanism(size, self.share, secure=self.secure)

    def releases(self) -> list[Release]:
        """The one release, as the mechanism states it before any noise."""
        return [self.noise.release(self.counts.name)]

    def read(self, data: pm.Model | Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The records of the Boolean variables (in memory: the parities read them one by
        one), from the model, or raw arrays by `PrivateData` name (checked by the caller)."""
        if not isinstance(data, pm.Model):
            return dict(data)
        names = list(self.counts.private_data)
        values = in_memory_values(data, names, 'release="fourier"')
        return dict(zip(names, values, strict=True))

    def run(self, values: Mapping[str, np.ndarray], rng: RandomState) -> Noised:
        """Noise the parity counts once and reconstruct the tables: (tables by statistic
        name, [the release], the noise law of the released index count)."""
        mechanism = self.noise
        noisy, release = mechanism(
            self.counts.parities(values), rng=rng, statistic=self.counts.name
        )
        if self.mechanism == "gaussian":
            scale = mechanism.sensitivity / math.sqrt(2.0 * release.rho)
        else:
            scale = mechanism.sensitivity / release.epsilon
        index = self.counts.index_spec
        noise = {index.name: mechanism.noise_law(scale)} if index else {}
        return self.counts.tables(noisy), [release], noise


ReleasePlan = CellsPlan | UnitShiftPlan | FourierPlan
