"""The demo behind ``python -m pymc_private demo``: private naive Bayes on a medical data set.

Bernoulli naive Bayes on scikit-learn's Wisconsin breast cancer data (569 records, 30
features, shipped with scikit-learn, no download). The rows are split once, with a fixed
seed, into

- a small **public** split, used only to choose the binarisation thresholds (per-feature
  medians) and the features the model uses (the ``n_features`` whose binarised class means
  differ most). Choices computed from the private rows would themselves be a release about
  them; computed from public rows they cost nothing. Fewer features matter under DP: one
  record moves 2d + 1 counts, so the noise on every count grows with d;
- a **private training** split, the only data the private model sees, declared with
  `pmp.PrivateData` and bounds (0, 1);
- a **test** split, to measure the accuracy of the released posterior.

For each ε the model is privatised (`pmp.privatize`, discrete Laplace noise on the class and
class-by-feature counts, Zhang et al. 2016 Algorithm 1) and sampled for free with
`pmp.sample`. The classifier is the posterior predictive one: class probabilities averaged
over the posterior draws of ``pi`` and ``theta``. Because the accuracy depends on the noise
drawn, each ε is repeated over several independent privatisations (fresh noise from OpenDP's
secure samplers, which are not seedable, so these numbers vary from run to run); only one of
them would ever be released, the repetitions show the spread a user should expect.

The non-private baseline uses the exact conjugate posterior of the same truncated-Beta model on
the raw training counts (independent draws by inverse CDF on [a, 1 − a], in numpy/scipy) and
the same classifier. It is computed for the comparison only and is never released.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import arviz as az
import matplotlib
import numpy as np
import pymc as pm
import xarray as xr
from matplotlib.figure import Figure
from scipy import stats
from sklearn.datasets import load_breast_cancer

from pymc_private.analysis.core import analyze
from pymc_private.analysis.privatisation import privatisation_of
from pymc_private.data.declaration import PrivateData
from pymc_private.data.ledgers import PrivacyLedger, ledger_for
from pymc_private.pay_once.privatize import privatize
from pymc_private.planning.planner import plan
from pymc_private.priors.distributions import TruncatedBeta
from pymc_private.release.report import privacy_report
from pymc_private.sampling.sample import sample

__all__ = [
    "EPSILONS",
    "TRUNCATION",
    "DemoData",
    "DemoResult",
    "UtilityRow",
    "class_probabilities",
    "exact_posterior_draws",
    "load_data",
    "naive_bayes_model",
    "plot_utility",
    "run",
]

EPSILONS = (0.1, 1.0, 10.0)
TRUNCATION = 0.05
"""a: every probability of the model is truncated to [a, 1 − a] (:ref:`costs-lipschitz-table`)."""


@dataclass(frozen=True)
class DemoData:
    """The binarised breast cancer data, split into public, private training and test rows.

    Attributes
    ----------
    feature_names
        The names of the features used (chosen on the public split).
    thresholds
        Per-feature binarisation thresholds: medians of the public split only.
    x_train, y_train
        Private training features (0/1, shape (n_train, n_features)) and labels (0 malignant,
        1 benign).
    x_test, y_test
        Test features and labels, binarised with the same thresholds.
    n_public
        Number of public rows (used for the thresholds, the feature choice and the class prior).
    majority_class
        The most frequent label in the public split: the data-free reference classifier.
    class_prior
        Beta(1 + public ones, 1 + public zeros): the prior of ``pi`` from the public split's
        labels, public knowledge a calibrated posterior falls back to when the noise hides
        the private counts.
    """

    feature_names: list[str]
    thresholds: np.ndarray
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_public: int
    majority_class: int
    class_prior: tuple[float, float] = (1.0, 1.0)


def load_data(
    *, n_public: int = 60, n_test: int = 150, n_features: int = 5, seed: int = 0
) -> DemoData:
    """Split scikit-learn's breast cancer data, binarise it at public medians, keep a few features.

    Parameters
    ----------
    n_public
        Rows in the public split, the only rows the thresholds are computed from.
    n_test
        Rows in the test split. The rest (569 − n_public − n_test) is the private training
        split.
    n_features
        How many of the 30 features to keep: those whose binarised means differ most between
        the two classes of the public split (ties by column order), kept in column order.
    seed
        Seed of the row permutation that makes the split.
    """
    bunch = load_breast_cancer()
    features, labels = bunch.data, bunch.target.astype(np.int64)
    n = len(labels)
    if not 1 <= n_features <= features.shape[1]:
        raise ValueError(f"n_features={n_features} must be in 1..{features.shape[1]}.")
    if n_public < 1 or n_test < 1 or n_public + n_test >= n:
        raise ValueError(
            f"n_public={n_public} and n_test={n_test} must be >= 1 and leave private training "
            f"rows out of the {n} records."
        )
    order = np.random.default_rng(seed).permutation(n)
    public, test, train = np.split(order, [n_public, n_public + n_test])
    thresholds = np.median(features[public], axis=0)

    binary_public = features[public] > thresholds
    separation = np.abs(
        binary_public[labels[public] == 1].mean(axis=0)
        - binary_public[labels[public] == 0].mean(axis=0)
    )
    kept = np.sort(np.argsort(-separation, kind="stable")[:n_features])

    def binarise(rows: np.ndarray) -> np.ndarray:
        return (features[rows][:, kept] > thresholds[kept]).astype(np.int64)

    return DemoData(
        feature_names=[str(bunch.feature_names[j]) for j in kept],
        thresholds=thresholds[kept],
        x_train=binarise(train),
        y_train=labels[train],
        x_test=binarise(test),
        y_test=labels[test],
        n_public=n_public,
        majority_class=int(np.bincount(labels[public], minlength=2).argmax()),
        class_prior=(1.0 + labels[public].sum(), 1.0 + n_public - labels[public].sum()),
    )


def naive_bayes_model(
    labels: np.ndarray,
    features: np.ndarray,
    feature_names: Sequence[str] | None = None,
    *,
    a: float = TRUNCATION,
    out_of_bounds: str = "raise",
    class_prior: tuple[float, float] = (1.0, 1.0),
) -> pm.Model:
    """Bernoulli naive Bayes with every probability truncated to [a, 1 − a], as in the quickstart.

    One record is a binary label with its d binary features; ``feature_names`` default to
    0..d−1; ``out_of_bounds`` is passed to `PrivateData`; ``class_prior`` are the Beta
    parameters of ``pi`` (public knowledge only).
    """
    names = list(range(np.shape(features)[1])) if feature_names is None else list(feature_names)
    with pm.Model(coords={"cls": [0, 1], "feature": names}) as model:
        y_obs = PrivateData("y_obs", labels, bounds=(0, 1), out_of_bounds=out_of_bounds)
        x_obs = PrivateData("x_obs", features, bounds=(0, 1), out_of_bounds=out_of_bounds)
        pi = TruncatedBeta("pi", *class_prior, lower=a, upper=1 - a)
        theta = TruncatedBeta("theta", 1, 1, lower=a, upper=1 - a, dims=("cls", "feature"))
        pm.Bernoulli("y", pi, observed=y_obs)
        pm.Bernoulli("x", theta[y_obs], observed=x_obs)
    return model


def _truncated_beta_draws(
    alpha: np.ndarray, beta: np.ndarray, a: float, size: tuple[int, ...], rng: np.random.Generator
) -> np.ndarray:
    """Draws from Beta(alpha, beta) truncated to [a, 1 − a], by inverse CDF."""
    low = stats.beta.cdf(a, alpha, beta)
    high = stats.beta.cdf(1 - a, alpha, beta)
    u = rng.uniform(size=size + np.shape(alpha))
    return np.clip(stats.beta.ppf(low + u * (high - low), alpha, beta), a, 1 - a)


def exact_posterior_draws(
    labels: np.ndarray,
    features: np.ndarray,
    draws: int,
    *,
    a: float = TRUNCATION,
    class_prior: tuple[float, float] = (1.0, 1.0),
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Independent draws from the exact, non-private posterior of `naive_bayes_model`.

    With TruncatedBeta priors on [a, 1 − a] (``class_prior`` on ``pi``, Beta(1, 1) on
    ``theta``) the posterior factorises: ``pi`` is Beta(α + n₁, β + n₀) and ``theta[c, j]``
    is Beta(1 + s_cj, 1 + n_c − s_cj), each truncated to [a, 1 − a], where n_c counts
    class c and s_cj counts the ones of feature j in class c.
    These are the raw counts: the result is NOT private.

    Returns
    -------
    pi, theta
        Arrays of shape ``(draws,)`` and ``(draws, 2, n_features)``.
    """
    n_class = np.bincount(labels, minlength=2)
    ones = np.stack([features[labels == c].sum(axis=0) for c in (0, 1)])
    alpha, beta = class_prior
    pi = _truncated_beta_draws(np.float64(alpha + n_class[1]), beta + n_class[0], a, (draws,), rng)
    theta = _truncated_beta_draws(1.0 + ones, 1.0 + n_class[:, None] - ones, a, (draws,), rng)
    return pi, theta


def class_probabilities(pi: np.ndarray, theta: np.ndarray, features: np.ndarray) -> np.ndarray:
    """Posterior predictive class probabilities p(y = c | x), averaged over the draws.

    Parameters
    ----------
    pi
        Draws of P(y = 1), shape ``(S,)``.
    theta
        Draws of P(x_j = 1 | y = c), shape ``(S, 2, d)``.
    features
        Binary records to classify, shape ``(m, d)``.

    Returns
    -------
    np.ndarray
        Shape ``(m, 2)``: for each record, the mean over draws of the normalised class
        probabilities of that draw.
    """
    log_prior = np.log(np.stack([1 - pi, pi], axis=-1))
    log_lik = np.einsum("md,scd->smc", features, np.log(theta)) + np.einsum(
        "md,scd->smc", 1 - features, np.log1p(-theta)
    )
    log_joint = log_prior[:, None, :] + log_lik
    log_joint -= log_joint.max(axis=-1, keepdims=True)
    per_draw = np.exp(log_joint)
    per_draw /= per_draw.sum(axis=-1, keepdims=True)
    return per_draw.mean(axis=0)


def _accuracy(pi: np.ndarray, theta: np.ndarray, data: DemoData) -> float:
    predicted = class_probabilities(pi, theta, data.x_test).argmax(axis=1)
    return float(np.mean(predicted == data.y_test))


def _posterior_arrays(idata: xr.DataTree) -> tuple[np.ndarray, np.ndarray]:
    posterior = idata["posterior"].to_dataset()
    pi = posterior["pi"].stack(sample=("chain", "draw")).transpose("sample").to_numpy()
    theta = (
        posterior["theta"]
        .stack(sample=("chain", "draw"))
        .transpose("sample", "cls", "feature")
        .to_numpy()
    )
    return pi, theta


@dataclass(frozen=True)
class UtilityRow:
    """Test accuracy at one ε: one private accuracy per privatisation, and the baseline."""

    epsilon: float
    private_accuracies: tuple[float, ...]
    non_private_accuracy: float

    @property
    def mean(self) -> float:
        return float(np.mean(self.private_accuracies))

    @property
    def sd(self) -> float:
        return float(np.std(self.private_accuracies, ddof=1)) if self.seeds > 1 else 0.0

    @property
    def seeds(self) -> int:
        return len(self.private_accuracies)


@dataclass(frozen=True)
class DemoResult:
    """What `run` computed: the utility table, one released posterior and the plot."""

    rows: tuple[UtilityRow, ...]
    majority_accuracy: float
    report_epsilon: float
    idata: xr.DataTree
    plot_path: Path
    seconds: float


@contextlib.contextmanager
def _quiet_pymc() -> Iterator[None]:
    """Silence PyMC's per-run "Sampling 2 chains ..." log lines while the demo loops."""
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def plot_utility(rows: Sequence[UtilityRow], majority_accuracy: float, path: str | Path) -> Path:
    """Save a PNG of private test accuracy (mean ± sd over privatisations) against ε.

    Draws on a bare `matplotlib.figure.Figure` (Agg canvas), leaving pyplot's state and
    backend alone.
    """
    eps = [row.epsilon for row in rows]
    with matplotlib.style.context("arviz-darkgrid"):
        fig = Figure(figsize=(6, 4))
        ax = fig.subplots()
        ax.errorbar(
            eps,
            [row.mean for row in rows],
            yerr=[row.sd for row in rows],
            marker="o",
            capsize=4,
            label=f"private (pay once), mean ± sd over {rows[0].seeds} privatisations",
        )
        ax.axhline(rows[0].non_private_accuracy, color="k", ls="--", label="non-private")
        ax.axhline(majority_accuracy, color="C3", ls=":", label="majority class (no data)")
        ax.set_xscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel("test accuracy")
        ax.set_ylim(0, 1.02)
        ax.set_title("Private naive Bayes, breast cancer data")
        ax.legend(fontsize="small", loc="lower right")
        path = Path(path)
        fig.savefig(path, dpi=100, bbox_inches="tight")
    return path


def _print_table(rows: Sequence[UtilityRow], majority_accuracy: float) -> None:
    seeds = rows[0].seeds
    print(f"{'ε':>6}  {'private accuracy':>24}  {'non-private accuracy':>20}")
    for row in rows:
        private = f"{row.mean:.3f} ± {row.sd:.3f}"
        print(f"{row.epsilon:>6g}  {private:>24}  {row.non_private_accuracy:>20.3f}")
    print(
        f"private: mean ± sd over {seeds} independent privatisations. Majority class of the "
        f"public split (no private data): {majority_accuracy:.3f}."
    )


def run(
    *,
    epsilons: Sequence[float] = EPSILONS,
    draws: int = 500,
    tune: int = 200,
    chains: int = 2,
    seeds: int = 6,
    n_features: int = 5,
    out: str | Path = "demo_accuracy.png",
    seed: int = 0,
    report_epsilon: float = 1.0,
) -> DemoResult:
    """Run the demo and print its story; return what it computed.

    Parameters
    ----------
    epsilons
        The ε of the privatisations compared.
    draws, tune, chains
        Per privatisation: `pmp.sample` draws, tuning iterations and chains (free after the
        release; sampled with ``cores=1``).
    seeds
        Independent privatisations per ε (fresh secure noise each; the spread of the private
        accuracy).
    n_features
        Features kept, chosen on the public split (`load_data`).
    out
        Path of the PNG of accuracy against ε.
    seed
        Seed of the data split, of the baseline draws and of the samplers (the privatisation
        noise comes from OpenDP's secure samplers and has no seed).
    report_epsilon
        The ε whose privacy report and posterior summary are printed (must be in
        ``epsilons``).
    """
    if report_epsilon not in epsilons:
        raise ValueError(f"report_epsilon={report_epsilon} must be one of epsilons={epsilons}.")
    if seeds < 1 or draws < 1 or chains < 1:
        raise ValueError("draws, chains and seeds must be >= 1.")
    start = time.perf_counter()
    data = load_data(n_features=n_features, seed=seed)
    n_train, d = data.x_train.shape
    print("pymc-private demo: Bernoulli naive Bayes on the breast cancer data (scikit-learn)")
    print(
        f"{n_train + len(data.y_test) + data.n_public} records, 30 features; split (seed "
        f"{seed}): {data.n_public} public, {n_train} private training, {len(data.y_test)} test."
    )
    print(
        f"Features are binarised at the medians of the {data.n_public} PUBLIC rows only, and "
        f"the {d} features whose classes differ most on those rows are kept: the thresholds "
        "and the choice do not come from the private training rows, so they release nothing "
        "about them. Fewer features, less noise: one record moves 2d + 1 counts."
    )
    print("Features kept: " + ", ".join(data.feature_names))

    model = naive_bayes_model(
        data.y_train, data.x_train, data.feature_names, class_prior=data.class_prior
    )
    print("\n== What each route would cost: pmp.analyze(model) ==")
    print(analyze(model))
    planned = plan(model, epsilon=report_epsilon)
    print(f"\n== Before any data is read: pmp.plan(model, epsilon={report_epsilon:g}) ==")
    print(planned)
    needed = planned.epsilon_for(target_sd_inflation=1.5)
    print(
        "The smallest ε whose posterior sd is at most 1.5 times the non-private one: "
        f"planned.epsilon_for(target_sd_inflation=1.5) = {needed:.3g}"
    )

    pi, theta = exact_posterior_draws(
        data.y_train,
        data.x_train,
        draws * chains,
        class_prior=data.class_prior,
        rng=np.random.default_rng(seed),
    )
    non_private = _accuracy(pi, theta, data)
    majority = float(np.mean(data.y_test == data.majority_class))

    rows = []
    reported, releases = None, ()
    print(f"\n== Pay once: privatize + pmp.sample, {seeds} privatisations per ε ==")
    print(
        "Discrete Laplace noise of scale Δ₁/ε on the counts from OpenDP's secure sampler (not "
        "seedable: these accuracies vary from run to run); sampling after it is free."
    )
    with _quiet_pymc():
        for epsilon in epsilons:
            accuracies, begun = [], time.perf_counter()
            print(f"ε = {epsilon:g}: accuracies", end="", flush=True)
            for k in range(seeds):
                private = privatize(model, epsilon=epsilon)
                with private:
                    idata = sample(
                        draws,
                        tune=tune,
                        chains=chains,
                        cores=1,
                        random_seed=seed + k,
                        progressbar=False,
                        compute_convergence_checks=False,
                    )
                accuracies.append(_accuracy(*_posterior_arrays(idata), data))
                print(f" {accuracies[-1]:.3f}", end="", flush=True)
                if epsilon == report_epsilon and reported is None:
                    reported, releases = idata, privatisation_of(private).releases
            rows.append(UtilityRow(float(epsilon), tuple(accuracies), non_private))
            print(f" ({time.perf_counter() - begun:.0f} s)")

    print("\n== Utility: test accuracy of the posterior predictive classifier ==")
    _print_table(rows, majority)
    print(
        "non-private: exact conjugate posterior of the same model on the raw training counts "
        "(truncated-Beta draws in numpy/scipy), for comparison only: it is never released."
    )

    print(f"\n== Privacy report of one privatisation at ε = {report_epsilon:g} ==")
    print(privacy_report(PrivacyLedger(releases)))
    total = ledger_for(model).composition()
    print(
        "Each repetition above is a separate privatisation of the same data, run to show the "
        "spread of the accuracy. The data set's ledger composes all of them: releasing them "
        f"all would cost ε = {total.epsilon:.4g} in total."
    )

    print("\n== az.summary of that private posterior (first rows) ==")
    print(az.summary(reported, var_names=["pi", "theta"], round_to=3).head(5).to_string())

    path = plot_utility(rows, majority, out)
    seconds = time.perf_counter() - start
    print(f"\nAccuracy against ε saved to {path.resolve()}")
    print(f"Demo finished in {seconds:.0f} s.")
    return DemoResult(tuple(rows), majority, float(report_epsilon), reported, path, seconds)
