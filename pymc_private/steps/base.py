"""What every private step method shares: a data-independent cost known before sampling.

A private step method is an ordinary PyMC step method that also inherits `PrivateStep`. Each of
its transitions is one differentially private release whose ε is a function of public
quantities only (bounds, prior supports, temperature, model structure), fixed when the step is
built. It emits that ε as the sample stat ``privacy_epsilon`` on every draw; `pmp.sample` turns
it into ledger releases *before* sampling, so a budget is checked without touching data. The
step never composes anything itself: composition is the ledger's job.
"""

from __future__ import annotations

import warnings
from typing import ClassVar

import numpy as np
from pymc.util import get_untransformed_name, is_transformed_name

from pymc_private.data.ledgers import PrivacyLedger
from pymc_private.dp.events import PureEvent, Release

__all__ = ["PrivateStep"]


class PrivateStep:
    """Mixin for step methods whose every draw is an accounted private release.

    Subclasses define a static ``cost``, the ε of one draw from public quantities only,
    before any data (its formula and proof in the subclass docstring: a constant over
    ``temperature`` plus a floating-point allowance, `temperature_for`), and set, in
    ``__init__``, ``privacy_epsilon_per_draw`` from it, ``temperature``, ``sensitivity`` (the
    Lipschitz constant or Δ₁ it is calibrated to) and ``mechanism`` (a name from the papers),
    set ``secure`` (True: every data-dependent choice is drawn by an exact sampler from the
    operating system's generator, `pymc_private.dp.mechanisms.exact_choice`, and ``self.rng``
    feeds only data-independent randomness such as proposals; False: everything is drawn
    from ``self.rng``, so the chain is reproducible from a seed by whoever holds it, and its
    releases are marked not secure), and list in ``released_stats`` the sample stats that
    are safe to release: stats that are public functions of the released chain and of
    public quantities (never a log density or an acceptance probability computed from raw
    data).
    """

    mechanism: ClassVar[str]
    # Python code that refers to a private step (a sampling callback that steps it by hand)
    # reads nothing the step does not charge (`pymc_private.analysis.leak_guard`).
    charges_as_it_runs: ClassVar[bool] = True
    released_stats: ClassVar[tuple[str, ...]] = ("privacy_epsilon",)
    privacy_epsilon_per_draw: float
    temperature: float
    sensitivity: float | None
    touches_raw_data: bool = True
    secure: bool = True
    ledger: PrivacyLedger | None = None
    datasets: tuple[str, ...] = ()
    prepaid: bool = False
    _warned: bool = False

    def __reduce_ex__(self, protocol):
        """Pickle the step's state only. PyMC's `BlockedStep` keeps the arguments of its
        construction, the model included, to rebuild a step when unpickling; the model's
        `PrivateData` hold raw data, which must not travel with a pickled step. Steps keep
        what they need from the data in a `pymc_private.dp.session.PrivatePayload`."""
        state = {k: v for k, v in self.__getstate__().items() if k != "_BlockedStep__newargs"}
        return _bare_step, (type(self),), state

    def planned_release(self, draws: int, chain: int | None) -> Release:
        """The release of ``draws`` transitions of this step in chain ``chain``.

        Sequential composition of per-draw releases is left to the ledger: the record says
        "``draws`` releases of ``privacy_epsilon_per_draw`` each".
        """
        return Release(
            mechanism=self.mechanism,
            event=PureEvent(float(self.privacy_epsilon_per_draw)),
            count=int(draws),
            sensitivity=None if self.sensitivity is None else float(self.sensitivity),
            statistic=", ".join(_variable_name(v.name) for v in self.vars),
            secure=bool(self.secure) or not self.touches_raw_data,
            chain=None if chain is None else int(chain),
            draw=None if chain is None else 0,
            note=self.release_note(),
        )

    def temperature_for(self, factor: float) -> float:
        """The temperature that divides this step's ε per draw by ``factor``: every per-draw
        ε here is a constant over T (2L/T, Σ_j 2L_j/T, 2c/T: `tempered_epsilon`) plus a
        floating-point allowance ~1e-13 of it, so T·factor (`pmp.sample` quotes it when a
        run does not fit its budget)."""
        return factor * self.temperature

    def charge(self) -> None:
        """Record one transition in the data sets' ledger before it is drawn.

        `pmp.sample` plans, checks and records a whole run before sampling and marks its steps
        ``prepaid``; a step run any other way (plain ``pm.sample``, by hand) charges every
        transition here as it runs, in whichever process runs it (the ledger lives in journal
        files every worker appends to), and warns once that the result is not releasable.
        """
        if not self.touches_raw_data or self.prepaid:
            return
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"{type(self).__name__} is running outside pmp.sample: each transition is "
                "charged to the data set's ledger as it runs, but the DataTree pm.sample "
                "returns holds the raw observed_data (and a log density computed from it) and "
                "is not releasable. Use pmp.sample for a result you can release.",
                UserWarning,
                stacklevel=3,
            )
        self.ledger.record(self.planned_release(1, None))

    def release_note(self) -> str:
        """Public words for the report (temperature, clipping ...); subclasses may extend."""
        return ""

    def privacy_stats(self) -> dict[str, np.float64]:
        """The privacy sample stats of one draw: its ε as the ledger charges it (per person
        when the data is declared per person, `PrivacyLedger.charged`)."""
        if self.ledger is None or not self.touches_raw_data:
            return {"privacy_epsilon": np.float64(self.privacy_epsilon_per_draw)}
        (charged,) = self.ledger.charged([self.planned_release(1, None)])
        return {"privacy_epsilon": np.float64(charged.epsilon)}


def _variable_name(value_name: str) -> str:
    """The model variable a value variable stands for (``pi`` for ``pi_interval__``)."""
    return get_untransformed_name(value_name) if is_transformed_name(value_name) else value_name


def _bare_step(cls: type) -> PrivateStep:
    """An uninitialised step for unpickling (`BlockedStep.__new__` wants a model)."""
    return object.__new__(cls)
