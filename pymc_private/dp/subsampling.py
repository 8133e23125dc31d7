"""The Poisson-subsampled Gaussian test of `pmp.PrivateMetropolis` with ``sampling_rate=q``.

`SubsampledGaussianTest` is the plan that runs: built from public quantities (q, the clip c,
the temperature T, the noise scale σ), it states its cost (`SubsampledGaussianTest.release`)
before any data, and its `SubsampledGaussianTest.noisy_log_odds` is the whole mechanism a step
runs on the data: Poisson subsample, clipped sum on the exact grid, Gaussian noise. The
accept/reject decision (`SubsampledGaussianTest.accepts`) reads only that noisy output and is
post-processing. :ref:`costs-subsampled-metropolis` has the formulas; the proofs are here.

Privacy of one step (replace-one neighbours, n public)
------------------------------------------------------
Each record enters the subsample S independently with probability q' = ⌈q·2⁵³⌉·2⁻⁵³ (the
exact probability of the sampler: a record is kept when a uniform 53-bit integer is below
⌈q·2⁵³⌉), drawn from the operating system's generator with ``secure=True``. The statistic is

    Λ̂ = RN(clamp(p + (g/τ)·Σ_{i∈S} m_i, −B, B)),   τ = fl(q'·T),

`pymc_private.dp.barker.barker_log_odds` on the subsample's ratios at temperature τ:
m_i = rint(clip(r_i, −c, c)/g) ∈ [−2⁵², 2⁵²] on the grid g = c·2⁻⁵², summed exactly. Record j
adds g·m_j/τ ∈ [−c/τ, c/τ] to the exact value when it is sampled and nothing otherwise; the
clamp is 1-Lipschitz and the one rounding moves a value of [−B, B] by at most uB = 2⁻⁴⁴. So
against the data set D₀ with record j's term set to 0, Λ̂ moves by at most

    Δ = c/τ + 2⁻⁴³   when j ∈ S, and not at all when j ∉ S,

whatever the other records and their sampling. The release is Λ̃ = Λ̂ + N(0, σ²): the
Gaussian mechanism on a Poisson subsample, `pymc_private.dp.events.SubsampledGaussianEvent`
(q', z) with z = σ/Δ, whose replace-one Rényi curve that event proves from the add/remove
curve of dp-accounting (Mironov, Talwar & Zhang 2019) by the weak triangle inequality through
D₀ (Mironov 2017, Proposition 11). With ``secure=True`` the noise is OpenDP's float Gaussian
(``make_gaussian``), which adds discrete Gaussian noise on a fine dyadic grid to Λ̂ rounded to
that grid and rounds the result to a float; its privacy map gives ρ = Δ²/(2σ²) up to
rounding, and the step uses z = 1/√(2ρ), the continuous Gaussian of that ρ. That
the sampled-Gaussian curve holds for OpenDP's discrete sampler at that z is assumed, not
proved here (the discrete Gaussian's Rényi divergences are at most the continuous ones for one
release, Canonne, Kamath & Steinke 2020, Proposition 5; the subsampled mixture is not covered
by that proposition). With ``secure=False`` the noise is numpy's, z = σ/Δ, marked not secure.
When p is not finite (θ or θ' outside the prior support) the decision is p alone: no data, no
noise.

What the chain targets
----------------------
The decision is the penalty method (Ceperley & Dewing 1999, "The penalty method for random
walks with uncertain energies", J. Chem. Phys. 110): accept with probability
min(1, exp(Λ̃ − σ²/2)). If Λ̃ were N(Λ, σ²) around the full-data tempered log-odds Λ, the
kernel would satisfy detailed balance for the tempered posterior exactly. Here Λ̃ is
N(Λ̂, σ²) and Λ̂ is unbiased for Λ only where no clip binds, with a minibatch variance
v = (1 − q)/(q·T²)·Σ_i r_i² that the penalty does not correct (it is data-dependent and is not
released). The chain therefore targets an approximation of the tempered posterior whose error
grows with v/σ² and with how often the clip binds; it is measured against NUTS in
``benchmarks/subsampled_mcmc.py``. DP-MCMC (Heikkilä, Jälkö, Dikmen & Honkela 2019,
"Differentially private Markov chain Monte Carlo", NeurIPS) instead fills Barker's logistic
noise with σ² + v ≤ 1 and the correction distribution of Seita et al. 2017; that is not
built here.

*Errors, randomness and work.* Nothing raises on a value. The subsample costs n uniform
words whatever the data; every record's ratio is computed (the graph is evaluated on all n
records) and the subsample is selected from them, so the work does not depend on S. With
``secure=False`` the sampling and the noise come from the step's generator (reproducible by
whoever holds the seed). The decision's uniform comes from the step's generator in both cases:
it is post-processing of Λ̃.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from pymc_private.dp.barker import ROUNDING_ALLOWANCE, barker_log_odds
from pymc_private.dp.events import STEP_DELTA, Release, SubsampledGaussianEvent
from pymc_private.dp.measurements import ceil_float, opendp_gaussian_at

__all__ = ["SubsampledGaussianTest", "exact_sampling_rate"]

_RATE_BITS = 53


def exact_sampling_rate(sampling_rate: float) -> float:
    """q' = ⌈q·2⁵³⌉·2⁻⁵³: the exact inclusion probability of the Poisson sampler for q."""
    return math.ldexp(math.ceil(math.ldexp(sampling_rate, _RATE_BITS)), -_RATE_BITS)


@dataclass(frozen=True)
class SubsampledGaussianTest:
    """One subsampled, Gaussian-noised log-odds and its penalty-method decision.

    Parameters
    ----------
    sampling_rate
        q' in (0, 1], already exact (`exact_sampling_rate`).
    clip
        c: each record's log-likelihood ratio is clipped to [−c, c].
    temperature
        T ≥ 1.
    noise_scale
        σ > 0, the standard deviation of the Gaussian noise on Λ̂.
    secure
        OpenDP noise and OS-entropy sampling (True), or numpy from the step's generator.
    """

    sampling_rate: float
    clip: float
    temperature: float
    noise_scale: float
    secure: bool = True

    @property
    def scaled_temperature(self) -> float:
        """τ = fl(q'·T): the temperature of the subsample's sum (its scale-up 1/q' folded in)."""
        return self.sampling_rate * self.temperature

    @property
    def sensitivity(self) -> float:
        """Δ = c/τ + 2⁻⁴³, rounded up: how far one record's term moves Λ̂ from 0 (module
        docstring)."""
        return ceil_float(
            Fraction(self.clip) / Fraction(self.scaled_temperature) + ROUNDING_ALLOWANCE
        )

    @cached_property
    def noise_multiplier(self) -> float:
        """z = σ/Δ (numpy noise), or 1/√(2ρ) with ρ OpenDP's map of its Gaussian at Δ,
        rounded down: the float quotient (and square root) are within 2⁻⁵² of the exact
        value, and the factor 1 − 2⁻⁵⁰ puts the result below it (a larger z would charge less)."""
        if not self.secure:
            exact = self.noise_scale / self.sensitivity
        else:
            rho = opendp_gaussian_at("float", self.noise_scale).map(self.sensitivity)
            exact = 1.0 / math.sqrt(2.0 * rho)
        return exact * (1.0 - 2.0**-50)

    @cached_property
    def event(self) -> SubsampledGaussianEvent:
        """The cost of one step, before any data: the event (q', z), stating its own ε at
        δ = `STEP_DELTA` from its Rényi curve."""
        return SubsampledGaussianEvent(self.sampling_rate, self.noise_multiplier, STEP_DELTA)

    @property
    def epsilon_per_step(self) -> float:
        """ε of one step at δ = `STEP_DELTA`, from its Rényi curve."""
        return self.event.epsilon

    def release(self, mechanism: str, count: int, **fields) -> Release:
        """``count`` steps as one ledger record: the event (q', z) and its own (ε, δ)."""
        return Release(
            mechanism,
            self.event,
            count=count,
            sensitivity=self.sensitivity,
            secure=self.secure,
            **fields,
        )

    def subsample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """The Poisson subsample's mask: each of n records kept with probability q'."""
        threshold = int(math.ldexp(self.sampling_rate, _RATE_BITS))
        if self.secure:
            words = np.frombuffer(os.urandom(8 * n), dtype=np.uint64) >> np.uint64(64 - _RATE_BITS)
        else:
            words = rng.integers(0, 2**_RATE_BITS, size=n, dtype=np.uint64)
        return words < np.uint64(threshold)

    def noisy_log_odds(
        self, prior_ratio: float, record_ratios: np.ndarray, rng: np.random.Generator
    ) -> float:
        """Λ̃ = Λ̂ + N(0, σ²) on a fresh Poisson subsample: the step's whole mechanism. Returns
        p itself when it is not finite (no data read, no noise)."""
        if not math.isfinite(prior_ratio):
            return prior_ratio
        ratios = np.asarray(record_ratios, dtype=np.float64)
        return self.noisy_log_odds_of_subsample(
            prior_ratio, ratios[self.subsample(ratios.size, rng)], rng
        )

    def noisy_log_odds_of_subsample(
        self, prior_ratio: float, kept_ratios: np.ndarray, rng: np.random.Generator
    ) -> float:
        """`noisy_log_odds` given the ratios of the records ``subsample`` kept (drawn by the
        caller from ``rng`` before any record was read, for a finite ``prior_ratio``): the
        same Λ̃ from the same words, for a step that reads only the subsample's rows."""
        log_odds = barker_log_odds(
            prior_ratio,
            np.asarray(kept_ratios, dtype=np.float64),
            record_bound=self.clip,
            temperature=self.scaled_temperature,
        )
        if self.secure:
            return float(opendp_gaussian_at("float", self.noise_scale)([log_odds])[0])
        return log_odds + float(rng.normal(0.0, self.noise_scale))

    def accepts(self, noisy_log_odds: float, rng: np.random.Generator) -> bool:
        """The penalty method's decision on Λ̃: accept with probability min(1, e^{Λ̃ − σ²/2})
        (+∞ accepts, −∞ rejects); one uniform drawn whatever Λ̃."""
        uniform = rng.random()
        if not math.isfinite(noisy_log_odds):
            return noisy_log_odds == math.inf
        return math.log1p(-uniform) < noisy_log_odds - self.noise_scale**2 / 2
