"""Zhang et al. (2016) Algorithm 2: the release of Boolean count tables in the Fourier domain.

The default release of `pmp.privatize` noises every cell a record can move and then
estimates the group sizes jointly from all of them (`pymc_private.privatize`). This is the
papers' alternative for models whose private variables are all Boolean (Bernoulli naive
Bayes: a binary class g and binary features x_1 … x_d with ``x ~ Bernoulli(theta[g])``):
``pmp.privatize(model, epsilon, release="fourier")``.

The mechanism
-------------
Let h be the contingency table of the records over the Boolean variables I. The marginal
tables the model needs (g alone, each (g, x_j) pair, or x_j alone) lie in the span of the
Fourier basis vectors f_γ, γ in the downward closure N_I of the variable sets they cover
(Barak et al. 2007, Theorem 2 in Zhang et al.). Each coefficient is an affine function of
a *parity count*, c_γ = #{records whose variables in γ have an odd sum}:

    ⟨f_γ, h⟩ = 2^{−|I|/2} (n − 2 c_γ),

and c_∅ = 0, so with n public the release is the parity counts of the other coefficients:
c_{g} = Σ g, and for every feature j, c_{x_j} = Σ x_j and c_{g,x_j} = Σ (g ⊕ x_j)
(or c_{x_j} alone for a Boolean variable no index groups). Noise is added to these integers,
and every marginal the model reads is reconstructed from them (post-processing):

    #(g=1, x=1) = (c_g + c_x − c_{g,x}) / 2,   #(g=1, x=0) = c_g − #(1, 1),
    #(g=0, x=1) = c_x − #(1, 1),               #(g=0, x=0) = n − c_g − #(0, 1).

Any real coefficients give tables that are *consistent* with one another (each feature's
table sums to the same class sizes c_g and n − c_g), which is the point of the paper's
construction; the plug-in posterior then projects them onto non-negative integers as usual.
Zhang et al.'s steps 7 (raising the first coefficient so that the table is non-negative with
high probability, for "stealth") is replaced by that projection, which is also
post-processing.

Privacy cost
------------
Replacing one record moves each parity count by at most 1, so with m released counts
Δ₁ = m and Δ₂ = √m; the counts are released at once by OpenDP's exact discrete Laplace with
scale m/ε (ε-DP; Zhang et al. 2016, Corollary 2, whose scale 2|N_I| ε⁻¹ 2^{−|I|/2} on the
normalised coefficients is this one on parity counts, with the coefficient of ∅ known since
n is public) or its exact discrete Gaussian at ρ = `zcdp_rho`(ε, δ) with σ = √m/√(2ρ). The
exact supremum of the moved L1 mass is m − 1 for naive Bayes (a record keeps its class and
flips every feature: 2d of the 2d + 1 counts); the ledger records the sound, larger cost of
m. The default release has the same Δ₁ = 2d + 1 but releases 4d + 1 noisy cells instead of
2d + 1 coefficients; `benchmarks/fourier.py` compares the two.

The noise of a reconstructed cell is a combination of the coefficients' noises, correlated
across cells, which the noise-aware posterior (`pymc_private.noise_aware`) does not model:
this release is for the plug-in posterior (``noise_aware=False``) only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pymc_private.analysis import PrivacyAnalysis
from pymc_private.dp.events import Release, zcdp_rho
from pymc_private.dp.integer_release import integer_release, planned_release
from pymc_private.errors import UnsupportedModelError
from pymc_private.noise_aware import NoiseLaw
from pymc_private.statistics import StatisticSpec

__all__ = ["FourierPlan", "fourier_plan"]


@dataclass(frozen=True)
class FourierPlan:
    """Which parity counts the Fourier release of a model's statistics consists of.

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
    """

    index: str | None
    index_spec: StatisticSpec | None
    grouped: tuple[StatisticSpec, ...]
    plain: tuple[StatisticSpec, ...]
    n_records: int

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

    def parities(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
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
        parity counts: consistent for any real input (module docstring)."""
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

    def planned_release(self, epsilon: float, delta: float, mechanism: str, secure: bool):
        """The `Release` the ledger records for this plan (before any noise)."""
        return planned_release(
            self.name, _share(epsilon, delta, mechanism), delta, mechanism, secure
        )

    def release(
        self,
        arrays: dict[str, np.ndarray],
        epsilon: float,
        delta: float,
        mechanism: str,
        secure: bool,
        rng: np.random.Generator,
    ) -> tuple[dict[str, np.ndarray], list[Release], dict[str, NoiseLaw]]:
        """Noise the parity counts once (module docstring) and reconstruct the tables:
        (tables by statistic name, [the release], the noise law of the released index
        count)."""
        noisy, release, scale = integer_release(
            self.parities(arrays),
            _share(epsilon, delta, mechanism),
            mechanism,
            sensitivity_l1=self.size,
            sensitivity_l2_squared=self.size,
            delta=delta,
            rng=rng,
            secure=secure,
            statistic=self.name,
        )
        noise = {self.index_spec.name: NoiseLaw(mechanism, scale)} if self.index_spec else {}
        return self.tables(noisy), [release], noise


def _share(epsilon: float, delta: float, mechanism: str) -> float:
    """The whole budget of the one release: ε, or ρ = `zcdp_rho`(ε, δ) for the Gaussian."""
    return zcdp_rho(epsilon, delta) if mechanism == "gaussian" else epsilon


def fourier_plan(analysis: PrivacyAnalysis) -> FourierPlan:
    """The Fourier release of ``analysis``'s statistics, or `UnsupportedModelError` saying
    why the model is not one of Boolean variables (counts of two categories, grouped by at
    most one Boolean index). Public: reads the analysis only."""
    public = sorted({s.group_by for s in analysis.statistics if s.group_values is not None})
    if public:
        raise UnsupportedModelError(
            f"release='fourier' transforms the joint table of the record's Boolean variables; "
            f"the public index {public[0]!r} is not part of the record. Use the default "
            "release='cells', whose per-group counts cost what ungrouped ones do."
        )
    index_names = {spec.group_by for spec in analysis.statistics if spec.group_by is not None}
    if len(index_names) > 1:
        raise UnsupportedModelError(
            f"release='fourier' needs counts grouped by at most one private index; this model "
            f"groups by {sorted(index_names)}. Use the default release='cells'."
        )
    index = next(iter(index_names), None)
    index_spec, grouped, plain = None, [], []
    for spec in analysis.statistics:
        boolean = spec.kind == "counts" and spec.n_categories == 2
        if not boolean or (spec.group_by is not None and spec.n_groups != 2):
            raise UnsupportedModelError(
                f"release='fourier' (Zhang et al. 2016, Algorithm 2) is for Boolean variables: "
                f"the statistic {spec.name} is not a count of a binary variable"
                f"{'' if spec.group_by is None else ' grouped by a binary index'}. Declare "
                "bounds=(0, 1) on Bernoulli data, or use the default release='cells'."
            )
        if spec.group_by is not None:
            if spec.derived_first or spec.shape[0] != 2 or spec.shape[-1] != 2:
                raise UnsupportedModelError(
                    f"release='fourier' reads both categories of both groups of {spec.name}, "
                    f"whose released shape is {spec.shape}; use the default release='cells'."
                )
            grouped.append(spec)
        elif spec.data == (index,) and spec.shape == (1,):
            index_spec = spec
        else:
            plain.append(spec)
    return FourierPlan(
        index=index,
        index_spec=index_spec,
        grouped=tuple(grouped),
        plain=tuple(plain),
        n_records=analysis.n_records,
    )
