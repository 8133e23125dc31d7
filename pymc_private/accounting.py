"""Privacy accounting: immutable releases, the ledger that alone composes them, and budgets.

A mechanism never composes anything itself: it describes what it spent as a `Release` (in
the spirit of dp-accounting's `DpEvent`) and hands it to a `PrivacyLedger`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from pymc_private.errors import InvalidPrivacyParameterError

__all__ = ["Release"]


@dataclass(frozen=True)
class Release:
    """One differentially private release, or ``count`` identical ones composed in sequence.

    Parameters
    ----------
    mechanism
        What produced it, in the papers' words (``"laplace"``, ``"discrete_laplace"``,
        ``"exponential_mechanism"``, ``"gibbs_exponential"``, ``"barker_metropolis"`` ...).
    epsilon
        The ε of one release, a function of public quantities only. ``0.0`` for releases that
        touch only already-privatised statistics.
    delta
        The δ of one release (0 for pure ε-DP).
    count
        How many identical releases this record stands for (a sampler plans thousands).
    sensitivity
        The sensitivity the noise was calibrated to (Δ₁, or the record Lipschitz constant L),
        when there is one.
    statistic
        What private data it was computed from (names only, never values).
    secure
        False when the noise came from a textbook floating-point sampler (``secure=False``).
    chain, draw
        Where it happened inside sampling, when it did (``draw`` is the first draw index of a
        composed run of ``count`` draws).
    note
        Free text for the report (public words only).
    """

    mechanism: str
    epsilon: float
    delta: float = 0.0
    count: int = 1
    sensitivity: float | None = None
    statistic: str | None = None
    secure: bool = True
    chain: int | None = None
    draw: int | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if not (isinstance(self.epsilon, int | float) and math.isfinite(self.epsilon)):
            raise InvalidPrivacyParameterError(
                f"Release epsilon must be a finite number >= 0, got {self.epsilon!r}."
            )
        if self.epsilon < 0:
            raise InvalidPrivacyParameterError(
                f"Release epsilon must be >= 0, got {self.epsilon!r}."
            )
        if not (isinstance(self.delta, int | float) and 0.0 <= self.delta < 1.0):
            raise InvalidPrivacyParameterError(
                f"Release delta must be in [0, 1), got {self.delta!r}."
            )
        if not (isinstance(self.count, int) and self.count >= 1):
            raise InvalidPrivacyParameterError(
                f"Release count must be a positive integer, got {self.count!r}."
            )
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "delta", float(self.delta))

    def to_dict(self) -> dict:
        """A JSON-serialisable dict; `Release.from_dict` inverts it exactly."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Release:
        return cls(**data)
