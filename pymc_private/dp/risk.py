"""What a guarantee means for the people in the data: the bound on a membership attacker's
true-positive rate at a chosen false-positive rate, and the Gaussian-DP μ, beside (ε, δ).

**Trade-off functions** (f-DP; Dong, Roth & Su 2022, "Gaussian differential privacy", JRSS-B
84(1)). An attacker who sees the release and must tell whether a given record was in the data
(or which of two neighbouring records it was) runs a test; at false-positive rate α (type-I
error) its true-positive rate (power) is 1 − β(α), and β(α) is at least the mechanism's
trade-off function. A mechanism that is (ε, δ)-DP has trade-off at least

    f_{ε,δ}(α) = max(0, 1 − δ − e^ε·α, e^{−ε}·(1 − δ − α))

(Wasserman & Zhou 2010; Kairouz, Oh & Viswanath 2015; Dong et al. 2022, Proposition 2.5), and
one that is (ε(δ), δ)-DP for every δ of its privacy profile has trade-off at least the largest
of these (each bounds the same trade-off from below). Every bound is at least α, what guessing
at random reaches. So

    TPR(α) ≤ min over the profile of min(1, δ + e^{ε(δ)}·α, 1 − e^{−ε(δ)}·(1 − δ − α)),

which `true_positive_bound` computes from the ledger's composition at a grid of δ
(`pymc_private.dp.ledger.PrivacyLedger.risk`): every (ε(δ), δ) the ledger reports is a valid
guarantee, so the minimum over any set of them is a valid bound.

**Gaussian DP.** μ-GDP means trade-off at least G_μ(α) = Φ(Φ⁻¹(1 − α) − μ): then
TPR(α) ≤ Φ(Φ⁻¹(α) + μ), and μ reads as the distance between two unit-variance Gaussians an
attacker must tell apart. Pure ε-DP implies μ-GDP with μ = 2Φ⁻¹(e^ε / (1 + e^ε))
(`pure_gaussian_mu`): G_μ is convex, equals 1 at α = 0 and meets f_{ε,0} at the kink
α* = 1/(1 + e^ε) (there G_μ(α*) = Φ(Φ⁻¹(1 − α*) − μ) = Φ(−Φ⁻¹(1 − α*)) = α*), so on [0, α*]
it lies below the chord from (0, 1) to (α*, α*), whose slope −(1 − α*)/α* = −e^ε makes it
the line 1 − e^ε·α of f_{ε,0}; by the symmetry of both functions the same holds on [α*, 1].
Equality at α* makes this μ the smallest. μᵢ-GDP releases compose to √(Σ μᵢ²)-GDP (Dong et al.
2022, Corollary 3.3), so a ledger of pure releases alone is μ-GDP with μ = √(Σᵢ μ(εᵢ)²)
(`pymc_private.dp.composition.gaussian_mu`). With δᵢ > 0 no finite μ holds (f(0) = 1 − δ < 1 =
G_μ(0)), and the package states none for releases of the discrete Gaussian or of subsampled
steps, whose trade-off is not proved Gaussian here: μ is then ``None`` and the bound comes from
the profile alone. Where both apply the smaller bound is reported.

These bound what any attacker can reach, whatever it knows besides (the other records
included): the worst case DP protects against, not a typical attack (Gomez et al. 2025, "(ε,
δ) considered harmful", argue for reporting exactly this pair beside ε).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from scipy import special, stats

from pymc_private.errors import InvalidPrivacyParameterError

__all__ = [
    "FALSE_POSITIVE_RATES",
    "AttackerRisk",
    "checked_false_positive_rates",
    "pure_gaussian_mu",
    "true_positive_bound",
]

FALSE_POSITIVE_RATES = (0.001, 0.01, 0.1)
"""The false-positive rates at which reports state the attacker's true-positive bound."""


def pure_gaussian_mu(epsilon: float) -> float:
    """μ = 2Φ⁻¹(e^ε / (1 + e^ε)), the smallest μ for which ε-DP implies μ-GDP (module
    docstring), evaluated as 2√2·erfinv(tanh(ε/2)) (the same number: Φ⁻¹(p) =
    √2·erfinv(2p − 1) and 2e^ε/(1 + e^ε) − 1 = tanh(ε/2)), accurate for tiny ε where
    e^ε/(1 + e^ε) rounds to ½, and where tanh(ε/2) rounds to 1 by the upper-tail inverse;
    rounded up by a few ulps (a larger μ is implied too)."""
    if epsilon == 0.0:
        return 0.0
    if epsilon < 30.0:
        mu = 2.0 * math.sqrt(2.0) * float(special.erfinv(math.tanh(epsilon / 2.0)))
    else:
        mu = float(2.0 * stats.norm.isf(special.expit(-epsilon)))
    return _up(mu)


def _up(value: float, ulps: int = 4) -> float:
    """``value`` moved up by a few ulps: a bound computed in floating point, made safe."""
    for _ in range(ulps):
        value = math.nextafter(value, math.inf)
    return value


def true_positive_bound(
    profile: Iterable[tuple[float, float]], mu: float | None, false_positive_rate: float
) -> float:
    """The largest true-positive rate any membership attacker reaches at
    ``false_positive_rate`` against a mechanism with every (ε, δ) of ``profile`` and, when
    ``mu`` is not None, μ-GDP: the smallest of min(1, δ + e^ε·α, 1 − e^{−ε}(1 − δ − α)) over
    the profile and Φ(Φ⁻¹(α) + μ) (module docstring)."""
    alpha = false_positive_rate
    bound = 1.0
    for epsilon, delta in profile:
        if math.isinf(epsilon):
            continue
        # e^ε·α may overflow where it exceeds 1 anyway.
        rising = delta + (math.exp(epsilon) * alpha if epsilon < 700 else math.inf)
        bound = min(bound, rising, 1.0 - math.exp(-epsilon) * (1.0 - delta - alpha))
    if mu is not None:
        bound = min(bound, float(stats.norm.cdf(stats.norm.ppf(alpha) + mu)))
    # Rounded up, and never below α, which guessing at random reaches.
    return min(1.0, max(_up(bound), alpha))


def checked_false_positive_rates(rates: Sequence[float]) -> tuple[float, ...]:
    """The rates as floats, each strictly between 0 and 1 (`InvalidPrivacyParameterError`
    otherwise)."""
    try:
        values = tuple(float(rate) for rate in rates)
    except (TypeError, ValueError):
        raise InvalidPrivacyParameterError(
            f"false_positive_rates must be numbers strictly between 0 and 1, got {rates!r}."
        ) from None
    if not values or not all(0.0 < value < 1.0 for value in values):
        raise InvalidPrivacyParameterError(
            f"false_positive_rates must be numbers strictly between 0 and 1 (e.g. 0.01 for "
            f"one false alarm in a hundred), got {rates!r}."
        )
    return values


class AttackerRisk(NamedTuple):
    """The membership risk of everything a ledger recorded (module docstring).

    Parameters
    ----------
    mu
        The Gaussian-DP μ when every release is pure ε-DP, else None.
    false_positive_rates
        The attacker's false-positive rates α considered.
    true_positive_rates
        At each α, the largest true-positive rate any attacker can reach.
    protects
        Whom the attacker targets, the ledger's `PrivacyLedger.protects`.
    """

    mu: float | None
    false_positive_rates: tuple[float, ...]
    true_positive_rates: tuple[float, ...]
    protects: str = "one record"

    @property
    def description(self) -> str:
        """One sentence for a person."""
        pairs = ", ".join(
            f"{_percent(tpr)} at {_percent(fpr)}"
            for fpr, tpr in zip(self.false_positive_rates, self.true_positive_rates, strict=True)
        )
        gdp = (
            f"The releases are μ-Gaussian-DP with μ = {self.mu:.3g}: as hard to attack as telling "
            f"apart two unit-variance Gaussians {self.mu:.3g} apart. "
            if self.mu is not None
            else ""
        )
        return (
            f"{gdp}An attacker who tries to tell whether the data holds {self._target} "
            f"reaches at most these true-positive rates at these false-positive rates: "
            f"{pairs}."
        )

    @property
    def _target(self) -> str:
        """Whose presence the attacker tests, in words."""
        if self.protects.startswith("one person"):
            return "one person's records" + self.protects.removeprefix("one person")
        return "one record"

    @property
    def line(self) -> str:
        """The same in one line, for the ledger's display."""
        pairs = ", ".join(
            f"{_percent(tpr)} at {_percent(fpr)}"
            for fpr, tpr in zip(self.false_positive_rates, self.true_positive_rates, strict=True)
        )
        gdp = "" if self.mu is None else f"; Gaussian DP μ = {self.mu:.3g}"
        return f"membership attacker: true positives at most {pairs} false positives{gdp}"


def _percent(rate: float) -> str:
    return f"{100.0 * rate:.3g}%"
