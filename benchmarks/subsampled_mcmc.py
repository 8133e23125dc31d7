"""Subsampled PrivateMetropolis against full-data PrivateMetropolis and NUTS, at ε ≤ 2.

Run with ``python benchmarks/subsampled_mcmc.py [n]`` (default n = 10⁵). A Bayesian logistic
regression with two features uniform on [−1, 1] (so a record's log-likelihood ratio is at most
‖θ' − θ‖₁), 2 chains × (500 tuning + 1000 kept) steps, every private run under
``pmp.Budget(2, delta=1e-6)``:

- *barker*: full-data `PrivateMetropolis(clip=c)`, pure ε = 2c per step, composed by the
  ledger (PLD/RDP) at δ = 1e-6; c the largest that fits;
- *subsampled q*: `PrivateMetropolis(clip=c, sampling_rate=q, noise_scale=1)`, the
  Poisson-subsampled Gaussian test; c the largest that fits (ε depends on σT/c alone once q
  is small: amplification gives back what the 1/q scale-up costs).

Printed per sampler: the ledger's ε at δ = 1e-6, posterior means minus NUTS's in NUTS
posterior sds, R-hat, bulk ESS (worst coordinate) and ESS per unit ε.
"""

from __future__ import annotations

import sys
import time

import arviz as az
import numpy as np
import pymc as pm

import pymc_private as pmp
from pymc_private.dp import session
from pymc_private.dp.events import subsampled_gaussian_epsilon

N_RECORDS = int(float(sys.argv[1])) if len(sys.argv) > 1 else 100_000
TRUE_WEIGHTS = np.array([1.0, -0.5])
TUNE, DRAWS, CHAINS = 500, 1000, 2
STEPS = CHAINS * (TUNE + DRAWS)
BUDGET = pmp.Budget(2.0, delta=1e-6)


def model_for(n: int) -> pm.Model:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(n, 2))
    y = (rng.random(n) < 1 / (1 + np.exp(-x @ TRUE_WEIGHTS))).astype(int)
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=(-1, 1))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(0, 1))
        b = pm.Normal("b", 0, 2, shape=2)
        pm.Bernoulli("y", logit_p=x_obs @ b, observed=y_obs)
    return model


def largest_clip(total) -> float:
    """The largest clip c (to 1 %) whose chain composes to ε ≤ 2 at δ = 1e-6."""
    low, high = 1e-6, 1.0
    while high / low > 1.01:
        middle = (low * high) ** 0.5
        low, high = (middle, high) if total(middle) <= 2.0 else (low, middle)
    return low


def barker_total(clip: float) -> float:
    release = pmp.Release("clipped_barker_metropolis", 2 * clip + 2**-43, count=STEPS)
    return pmp.PrivacyLedger([release]).composition(1e-6).epsilon


def subsampled_total(q: float, clip: float) -> float:
    return subsampled_gaussian_epsilon(q, q / clip, 1e-6, STEPS)  # z = σqT/c, σ = T = 1


def summarise(name: str, idata, epsilon: float, reference, seconds: float) -> None:
    posterior = idata.posterior["b"]
    mean = posterior.mean(("chain", "draw")).values
    shift = (mean - reference["mean"]) / reference["sd"]
    rhat = float(az.rhat(idata)["b"].max())
    ess = float(az.ess(idata)["b"].min())
    accept = float(idata.sample_stats["accepted"].mean())
    print(
        f"{name:>16}: ε = {epsilon:.3f}, mean − NUTS = {np.round(shift, 2)} sd, R-hat = "
        f"{rhat:.3f}, ESS = {ess:.0f}, ESS/ε = {ess / epsilon:.1f}, accept = {accept:.3f}, "
        f"{seconds:.0f} s"
    )


def main() -> None:
    model = model_for(N_RECORDS)
    public = pm.Model()
    with public:
        rng = np.random.default_rng(0)
        x = rng.uniform(-1, 1, size=(N_RECORDS, 2))
        y = (rng.random(N_RECORDS) < 1 / (1 + np.exp(-x @ TRUE_WEIGHTS))).astype(int)
        b = pm.Normal("b", 0, 2, shape=2)
        pm.Bernoulli("y", logit_p=x @ b, observed=y)
        nuts = pm.sample(1000, tune=500, chains=2, random_seed=1, progressbar=False)
    reference = {
        "mean": nuts.posterior["b"].mean(("chain", "draw")).values,
        "sd": nuts.posterior["b"].std(("chain", "draw")).values,
    }
    print(f"n = {N_RECORDS}, NUTS mean {reference['mean']}, sd {reference['sd']}")
    sd = float(reference["sd"].mean())
    runs = {"barker": (largest_clip(barker_total), {})}
    for q in (1.0, 0.3):
        runs[f"subsampled q={q}"] = (
            largest_clip(lambda c, q=q: subsampled_total(q, c)),
            {"sampling_rate": q, "noise_scale": 1.0},
        )
    for name, (clip, kwargs) in runs.items():
        session.reset()  # each sampler is a separate benchmark of the same (public) data
        with model:
            step = pmp.PrivateMetropolis(clip=clip, proposal_scale=sd / 2, secure=False, **kwargs)
            start = time.perf_counter()
            idata = pmp.sample(
                DRAWS, tune=TUNE, chains=CHAINS, step=step, random_seed=2, budget=BUDGET
            )
        print(f"{name}: clip c = {clip:.4g}")
        epsilon = pmp.privacy_report(idata).ledger.composition(1e-6).epsilon
        summarise(name, idata, epsilon, reference, time.perf_counter() - start)


if __name__ == "__main__":
    main()
