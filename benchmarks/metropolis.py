"""The cost of exact acceptance in PrivateMetropolis: steps per second, in one run.

Run with ``python benchmarks/metropolis.py``. Every sampler runs the same Bayesian logistic
regression (bounded features, a TruncatedMvNormal prior on the weights), one chain on one
core, compilation before the clock starts, once with L from the privacy analysis and once
with per-record clipping (clip=1). Three acceptances are timed on the same compiled
per-record terms:

- *float*: the acceptance before the fix, Λ = prior ratio + (1/T)·(float sum of the record
  ratios) and the test log u < −log(1 + e^−Λ) with a float uniform u (not DP as implemented:
  see `PrivateMetropolis`);
- *exact, secure=False*: Λ summed exactly on the public grid, clamped and rounded once, the
  decision a seeded numpy Gumbel-max;
- *exact, secure=True* (the default): the same Λ, the decision OpenDP's exact sampler.

The ratios exact/float are the cost of exactness. pm.Metropolis is printed for scale (it
proposes each weight in turn, so one of its steps is a sweep of five proposals).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pymc as pm
from pymc.blocking import RaveledVars
from pymc.pytensorf import floatX

from pymc_private.data.declaration import PrivateData
from pymc_private.priors.distributions import TruncatedMvNormal
from pymc_private.steps.metropolis import PrivateMetropolis

N_RECORDS = 1000
N_FEATURES = 5
DRAWS = 3000


class FloatBarkerMetropolis(PrivateMetropolis):
    """PrivateMetropolis with the float acceptance it had before exact_choice (timing only)."""

    def astep(self, q0: RaveledVars):
        q = floatX(q0.data + self.proposal_dist(self.rng) * self.scaling)
        prior_ratio, ratios = self._log_ratio_terms(q, q0.data)
        if self.clip is not None:
            ratios = np.clip(np.where(np.isnan(ratios), 0.0, ratios), -self.clip, self.clip)
        log_ratio = prior_ratio + np.sum(ratios) / self.temperature
        accepted = bool(np.log(self.rng.uniform()) < -np.logaddexp(0.0, -log_ratio))
        if self.adaptive and self.tune:
            self.tuning_steps += 1
            self.scaling *= math.exp(
                5.0 * self.tuning_steps**-0.75 * (accepted - self.target_accept)
            )
        stats = {**self.privacy_stats(), "accepted": accepted}
        return RaveledVars(q if accepted else q0.data, q0.point_map_info), [stats]


def logistic_model(seed: int = 0) -> pm.Model:
    rng = np.random.default_rng(seed)
    features = rng.uniform(-1, 1, size=(N_RECORDS, N_FEATURES)) / np.sqrt(N_FEATURES)
    weights = rng.normal(size=N_FEATURES)
    labels = rng.uniform(size=N_RECORDS) < 1 / (1 + np.exp(-features @ weights))
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", features, bounds=(-1, 1))
        y_obs = PrivateData("y_obs", labels.astype(np.int64), bounds=(0, 1))
        w = TruncatedMvNormal("w", mu=np.zeros(N_FEATURES), cov=np.eye(N_FEATURES), radius=3.0)
        pm.Bernoulli("y", logit_p=x_obs @ w, observed=y_obs)
    return model


def steps_per_second(model: pm.Model, step) -> float:
    """DRAWS / seconds of the faster of two timed runs, after an untimed warm-up."""
    rates = []
    for draws in (100, DRAWS, DRAWS):
        with model:
            start = time.perf_counter()
            pm.sample(
                draws,
                tune=0,
                step=step,
                chains=1,
                cores=1,
                random_seed=1,
                progressbar=False,
                compute_convergence_checks=False,
            )
        rates.append(draws / (time.perf_counter() - start))
    return max(rates[1:])


def main() -> None:
    model = logistic_model()
    print(f"logistic regression, n={N_RECORDS}, d={N_FEATURES}, {DRAWS} steps, 1 chain")
    print(f"{'':28s} {'steps/s':>10s} {'vs float':>9s}")
    for label, clip in (("2L/T", None), ("clip=1", 1.0)):
        with model:
            steps = {
                "float (before the fix)": FloatBarkerMetropolis(clip=clip, proposal_scale=0.1),
                "exact, secure=False": PrivateMetropolis(
                    clip=clip, proposal_scale=0.1, secure=False
                ),
                "exact, secure=True": PrivateMetropolis(clip=clip, proposal_scale=0.1),
            }
        rates = {name: steps_per_second(model, step) for name, step in steps.items()}
        print(f"PrivateMetropolis ({label})")
        for name, rate in rates.items():
            ratio = rate / rates["float (before the fix)"]
            print(f"  {name:26s} {rate:10.0f} {ratio:9.2f}")
    with model:
        rate = steps_per_second(model, pm.Metropolis())
    print(f"{'pm.Metropolis (5 proposals)':28s} {rate:10.0f}")


if __name__ == "__main__":
    main()
