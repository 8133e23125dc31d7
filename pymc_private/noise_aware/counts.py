"""The count parts of a noise-aware model, as the numpy sampler holds them: a node whose
released statistic is integer counts or an integer sum (`CountNode`), the latent group sizes
of a private group index (`GroupSizes`), and a free variable of count nodes drawn from its
conjugate conditional (`CountBlock`). `pymc_private.noise_aware.sampler` builds them;
`pymc_private.noise_aware.chain` moves them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_private.dp.noise import NoiseLaw
from pymc_private.families.likelihood import LikelihoodTerm
from pymc_private.families.statistics import StatisticSpec

__all__ = ["CountBlock", "CountNode", "GroupSizes"]


@dataclass(frozen=True, eq=False)
class CountNode:
    """A node whose released statistic is integer counts or an integer sum: its latent
    statistic, in the layout of `pymc_private.noise_aware.latent` (a category axis for counts and
    Binomial
    sums, none for a Poisson sum), with ``released`` in that layout (NaN where a category is
    not released) and its integer ``noise``; ``sizes`` names the group-count statistic whose
    latent group sizes are its totals (None: public totals)."""

    term: LikelihoodTerm
    spec: StatisticSpec
    released: np.ndarray
    noise: NoiseLaw
    sizes: str | None
    poisson: bool


@dataclass(frozen=True, eq=False)
class GroupSizes:
    """The latent group sizes N of a private group index: the released group counts (full
    layout, NaN where derived) and their noise, the node that observes the index (its counts
    are N; None when no node does: a flat prior), the count nodes grouped by it and the other
    (sums) nodes grouped by it."""

    spec: StatisticSpec
    released: np.ndarray
    noise: NoiseLaw
    node: LikelihoodTerm | None
    counts: tuple[str, ...]
    sums: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class CountBlock:
    """A free variable of count nodes, drawn from its conjugate conditional (``block``);
    ``collapsible`` when no node it enters observes a group index (whose counts are the
    latent sizes, moved by the thinning moves instead)."""

    block: object
    nodes: tuple[str, ...]
    collapsible: bool
