"""Subsampled PrivateMetropolis against full-data PrivateMetropolis and NUTS, at ε ≤ 2.

Run with ``python benchmarks/subsampled_mcmc.py [n | fair] [--nuts] [--start-at-reference]
[--warm-start [--step=k] [--tune]] [--control-variate [--warm=ε₀] [--step=k]] [--only=name]``
(default n = 10⁵; ``fair`` is the real data set of benchmarks/glm.py; ``--only`` runs the
samplers whose name contains it; ``--warm=ε₀`` the warm start's ε, default 0.3). A Bayesian
logistic regression with two features uniform on [−1, 1] (so a record's log-likelihood ratio
is at most ‖θ' − θ‖₁), 2 chains × (500 tuning + 1000 kept) steps from the public start 0,
every private run under ``pmp.Budget(2, delta=1e-6)``:

- *barker*: full-data `PrivateMetropolis(clip=c)`, pure ε = 2c per step, composed by the
  ledger (PLD/RDP) at δ = 1e-6; c the largest that fits;
- *gaussian q, σ*: `PrivateMetropolis(clip=c, sampling_rate=q, noise_scale=σ)`, the
  Poisson-subsampled Gaussian test; c the largest that fits (for small q, ε depends on σT/c
  alone: amplification gives back what the 1/q scale-up costs).

Each proposal is a Gaussian walk of scale c/3 per coordinate, fixed (``tune=False``: a scale
that grows makes the clip bind, and the clipped chain then drifts away from the posterior), so
a record's ratio rarely reaches c. The reference is NUTS on the same (public) simulated data
with ``--nuts``, else the Laplace approximation at the mode (accurate here: two parameters,
n ≥ 10⁵). ``--start-at-reference`` starts the chains at the reference mean instead: not a
private run (the start is read from the data), a measurement of the target's bias and of the
mixing without the climb from 0. Printed per sampler: the ledger's ε at δ = 1e-6, posterior
means minus the reference's in reference posterior sds, R-hat, bulk ESS (worst coordinate),
ESS per unit ε, the acceptance rate and the wall time.

``--warm-start`` is the private run from a released start (issue 26, second round): the model
gains an intercept column (weights (0.3, 1, −0.5)) and the ball prior
`pmp.TruncatedMvNormal` (R = 5, sampled without its transform) of the pay-once GLM route, and
each sampler's run first releases XᵀX and Xᵀy by `pmp.privatize` at ε₀ = 0.3 (δ = 1e-6, on
the same ledger), draws that noise-aware posterior for free, and starts chain k at its k-th
released draw with the proposal scale its sds, shrunk by the step's ``max_step_size=c/k``
(``--step=k``, default 1) until ‖s‖₂ = c/k: a record's ratio |x·(θ' − θ)| is then at most
(c/k)·|N(0, 1)| for |x_j| ≤ 1. c is the largest that fits ε ≤ 2 for the warm start and the
chain together. ``--tune`` also adapts the scale under that cap.

``--control-variate`` (issue 26, third round) runs after that warm start (``--warm=ε₀``) a
chain on the residuals of a public quadratic proxy (`control_variate`: the proxy's sum is a
function of the released XᵀX and Xᵀy, a public `pm.Potential`; each record keeps only
βu + κu²/2 − softplus(u), u = x·w): full-data Barker with the largest clip that fits, and the
subsampled Gaussian test at q = 1, 0.3, 0.1 with the clip the proxy's residuals need (their
99.9 % quantile, computed from public bounds and released draws) and the smallest σ that fits;
the proposal is the proxy posterior's sds × 2.38/√d, fixed (``--step=k`` divides it). It prints
ESS per unit ε as a ratio to the Barker chain's. ``fair`` runs it on the real data of the GLM
issue (an intercept and four covariates on [−1, 1], R = 6).

Measured (2 cores shared with other jobs, ``secure=False``; every run ε ≈ 1.99 at δ = 1e-6)
--------------------------------------------------------------------------------------------
n = 10⁵ (NUTS: mean (0.9825, −0.4922), sd (0.0121, 0.0117); Laplace within 0.03 sd of it).
From the public start 0 no sampler reaches the posterior in 1500 steps: the clip that ε ≤ 2
allows (c = 0.0041 Barker, 0.0076 at σ = 2, 0.0114 at σ = 3) caps the steps at c/3, a tenth
to a third of a posterior sd, and the mode is 80 sds away. Means − reference in sds, R-hat:
barker (−44, 21), 2.33; gaussian q = 1, σ = 1: (−47, 24), 1.89; σ = 2, q = 1 / 0.3 / 0.05:
(−17, 9) at each q, 1.86–1.88. (With the scale adapted while tuning, the clip binds and the
Barker and σ = 1 chains drift to b ≈ (9.4, −3.5), 690 sds off: the clipped posterior.)

n = 10⁵, ``--start-at-reference``: means within 0.85 sd of NUTS for every sampler, R-hat
1.21–1.63, bulk ESS 3–10 of 2000 draws. ESS per unit ε: barker 1.7; gaussian q = 1, σ = 2:
4.8 (2.8 × barker), σ = 3: 1.8; q = 0.3, σ = 3: 2.9; q = 0.05, σ = 3: 2.0 (ESS this
small is rough: one seed each). The acceptance rate
at σ = 3 rises from 0.12 (q = 1, 0.3) to 0.17 (q = 0.05): the subsample's variance, which the
penalty does not correct, makes the chain accept more than its target should.

n = 10⁶ (from 0): barker (−142, 68) sds, R-hat 2.14; gaussian σ = 3, q = 1: (−10, 5.7),
R-hat 1.29, ESS 6; q = 0.05: (−10.4, 5.8), R-hat 1.27, ESS 13 (in 422 s against 493 s at
q = 1: every record's ratio is still computed). ε ≤ 2 is reached by the accounting at
every n (it does not depend on n), but no chain within it converges from the public start at
n ≤ 10⁶: the smallest n where it would is not measured here.

``--warm-start``, n = 10⁵ (Laplace reference mean (0.307, 0.982, −0.495), sd (0.0067, 0.0120,
0.0117)); ε₀ = 0.3 leaves c = 0.00378 (Barker), 0.0075 (σ = 2), 0.0113 (σ = 3), against
0.0041, 0.0076, 0.0114 without it; the ledger's total is 1.99–2.00 for every run. The warm start
is 1.8–4.5 sd off in b₁ (the GLM route's Gaussian law of uniform covariates) with sds
(0.0075, 0.017, 0.016), 1.4 times the posterior's. Means − reference in sds, R-hat, bulk ESS,
ESS/ε, acceptance:

- ``--step=2``: barker (−0.22, 0.23, −0.72), 2.02, 3, 1.4, 0.50; gaussian q = 1, σ = 2:
  (−0.05, 0.02, 0.23), 1.46, 4, 2.0, 0.31; q = 1, σ = 3: (0.24, −0.09, 0.54), 1.39, 5, 2.3,
  0.13; q = 0.3, σ = 3: (0.14, −0.04, 0.77), 1.56, 4, 1.8, 0.13; q = 0.05, σ = 3:
  (0.60, 0.62, 0.72), 1.44, 4, 2.2, 0.17.
- ``--step=1``: barker (0.94, 2.85, −1.55), 1.43, 4, 2.2, 0.49; q = 1, σ = 2:
  (1.11, 2.90, −0.93), 1.14, 12, 6.2, 0.32; q = 1, σ = 3: (0.88, 3.24, −0.82), 1.12, 23,
  11.7, 0.15; q = 0.3, σ = 3: (1.29, 3.55, −0.77), 1.24, 8, 3.8, 0.17; q = 0.05, σ = 3:
  (1.60, 3.54, −1.04), 1.19, 9, 4.5, 0.23.

So the private start removes the climb (the means of ``--step=2`` are as close as those of the
non-private ``--start-at-reference``), and larger moves buy mixing with the clip's bias: at
``--step=1`` the clip binds and holds b₁ 3 sd high (towards larger weights, the clipped
records being the ill-fitted ones). No setting reaches R-hat < 1.05 at n = 10⁵ within ε ≤ 2:
unbiased moves are at most about half a posterior sd (‖s‖₂ = c/2 with c = 0.0113 at σ = 3), the
penalty decision accepts about 2Φ(−σ/2) = 0.13 of them, and 1500 steps a chain then give a
few dozen independent draws at best. ESS per unit ε against full-data Barker: 1.6× at
``--step=2`` (σ = 3, q = 1), 5.3× at ``--step=1`` (biased). One seed each.

``--warm-start --step=2 --only=q=0.05``, n = 10⁶ (reference sd (0.0021, 0.0038, 0.0037)): the
warm start is 8.2 sd off in b₁, c is the same 0.0113, and the same ‖s‖₂ = c/2 is now about one
posterior sd per coordinate: means (−0.06, 0.16, 0.15) sd from the reference, R-hat 1.097,
ESS 20 (10 per unit ε), acceptance 0.28, in 373 s (every record's ratio is computed). With
``--step=1.5`` the cap no longer binds (the warm start's sds, ‖s‖₂ = 0.0062 < c/1.5): means
(0.15, 0.31, 0.05) sd, R-hat 1.089, ESS 22, in 389 s. Without the proxy of
``--control-variate``, R-hat < 1.05 is not reached at n ≤ 10⁶ within ε ≤ 2 (one seed each;
the acceptance 0.28 above the 0.13 of q = 1 is the subsample's variance, which the penalty
does not correct).

``--control-variate --warm=1`` (ε₀ = 1, the chain the rest of ε ≤ 2; every run's total
1.993–1.999 at δ = 1e-6; one seed each; the table per n is in docs/costs.md,
"Poisson-subsampled steps"). Means − reference in sds, R-hat, ESS, ESS per unit ε as a ratio
to the full-data Barker chain's on the same proxy:

- n = 10⁴: Barker (0.08, 0.24, −0.05), 1.047, 67; q = 1, σ = 2.29: (−0.12, −0.50, 0.18),
  1.023, 76, 1.12×; q = 0.3: 1.033, 0.84×; q = 0.1: 1.056 (the one miss), 0.84×.
- n = 3·10⁴: R-hat 1.018–1.033, means within 0.76 sd, 1.70–1.97×.
- n = 10⁵ (c = 0.0016, σ = 0.75–0.78 for the Gaussian test, 0.0023 for Barker): R-hat
  1.016–1.038, means within 0.42 sd, ESS 72 (Barker), 190 (q = 1), 88 (q = 0.3), 79
  (q = 0.1): 2.65×, 1.22×, 1.10×.
- n = 3·10⁵: R-hat 1.017–1.046, means within 0.59 sd, 1.04–1.71×.
- n = 10⁶ (the warm start 7.7–7.9 sd off in b₁; c = 0.00054, σ = 0.26): R-hat 1.019–1.044,
  means within 0.24 sd, ESS 115 (Barker), 177, 185, 159 (q = 1, 0.3, 0.1): 1.54×, 1.61×,
  1.38×; 300–420 s a sampler (every record's ratio is computed).
- ``fair`` (n = 6366, NUTS reference): no sampler converges: the residual ratio needs
  c = 0.035–0.096, so σ = 11–30 and the penalty accepts nothing; Barker (c = 0.0033, binding)
  R-hat 1.13, means 1.2–3.9 sd off. With ``--step=3`` (Laplace reference) the Gaussian
  chains accept 0.001–0.004 of the moves (R-hat 3.1–5.6) and Barker's R-hat is 1.58.

Without the proxy the full-data Barker chain gave 1.7 effective draws per unit ε at n = 10⁵
(started at the reference); with it, 28–95 (Barker 32–57) at every n ≥ 10⁴.
"""

from __future__ import annotations

import sys
import time

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_private as pmp
from pymc_private.dp import session
from pymc_private.dp.subsampling import SubsampledGaussianTest, exact_sampling_rate

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
FAIR = ARGS[:1] == ["fair"]  # the real data set of the GLM issue (benchmarks/glm.py)
N_RECORDS = 100_000 if FAIR or not ARGS else int(float(ARGS[0]))
CONTROL = "--control-variate" in sys.argv
WARM = FAIR or CONTROL or "--warm-start" in sys.argv
RADIUS = 6.0 if FAIR else 5.0  # the ball prior's ‖w‖₂ ≤ R, glm.py's for fair
WARM_EPSILON = float(next((a.split("=")[1] for a in sys.argv if a.startswith("--warm=")), 0.3))
ONLY = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")), "")
STEP = float(next((a.split("=")[1] for a in sys.argv if a.startswith("--step=")), 1.0))
TRUE_WEIGHTS = np.array([0.3, 1.0, -0.5]) if WARM else np.array([1.0, -0.5])
TUNE, DRAWS, CHAINS = 500, 1000, 2
STEPS = CHAINS * (TUNE + DRAWS)
BUDGET = pmp.Budget(2.0, delta=1e-6)
SAMPLERS = ((1.0, 2.0), (1.0, 3.0), (0.3, 3.0), (0.05, 3.0))  # (q, σ)
CONTROL_RATES = (1.0, 0.3, 0.1)  # q of the control-variate chains, σ the smallest that fits


def simulated(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(n, 2))
    if WARM:
        x = np.column_stack([np.ones(n), x])
    y = (rng.random(n) < 1 / (1 + np.exp(-x @ TRUE_WEIGHTS))).astype(int)
    return x, y


def data() -> tuple[np.ndarray, np.ndarray]:
    """``fair`` preprocessed as in benchmarks/glm.py (an intercept and four covariates on
    [−1, 1]), or the simulated records."""
    if FAIR:
        from glm import fair

        x, y, _, _ = fair()
        return x, y
    return simulated(N_RECORDS)


def covariate_bounds(p: int) -> tuple:
    """The declared bounds: the intercept column (1, 1), every covariate [−1, 1]."""
    return ([1.0] + [-1.0] * (p - 1), [1.0] * p) if WARM else (-1, 1)


def model_for(x: np.ndarray, y: np.ndarray) -> pm.Model:
    p = x.shape[1]
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=covariate_bounds(p))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(0, 1))
        if WARM:
            # the pay-once GLM route needs the intercept column and a ball prior; sampled in
            # w itself (no ball transform), so that the proposal's scale is w's
            b = pmp.TruncatedMvNormal(
                "b", np.zeros(p), 4 * np.eye(p), radius=RADIUS, default_transform=None
            )
        else:
            b = pm.Normal("b", 0, 2, shape=p)
        pm.Bernoulli("y", logit_p=x_obs @ b, observed=y_obs)
    return model


def laplace_reference(x: np.ndarray, y: np.ndarray) -> dict:
    """Mode and sds of the Laplace approximation (Newton's method on the log posterior)."""
    b = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ b))
        gradient = x.T @ (y - p) - b / 4
        hessian = -(x.T * (p * (1 - p))) @ x - np.eye(x.shape[1]) / 4
        b = b - np.linalg.solve(hessian, gradient)
    return {"mean": b, "sd": np.sqrt(np.diag(np.linalg.inv(-hessian)))}


def nuts_reference(x: np.ndarray, y: np.ndarray) -> dict:
    with pm.Model():
        b = pm.Normal("b", 0, 2, shape=x.shape[1])
        pm.Bernoulli("y", logit_p=x @ b, observed=y)
        nuts = pm.sample(1000, tune=500, chains=2, random_seed=1, progressbar=False)
    return {
        "mean": nuts.posterior["b"].mean(("chain", "draw")).values,
        "sd": nuts.posterior["b"].std(("chain", "draw")).values,
    }


def warm_start(model: pm.Model) -> dict:
    """The private warm start: `pmp.privatize` at ε₀ = `WARM_EPSILON` (δ = 1e-6, recorded on
    the model's ledger), its noise-aware posterior drawn for free; returns that posterior's
    draws, mean and sd, one of its draws per chain as the chain's start, and the released
    Gram matrix XᵀX and Xᵀy: released values only."""
    private = pmp.privatize(model, epsilon=WARM_EPSILON, delta=1e-6)
    with private:
        draws = pmp.sample(500, tune=500, chains=2, random_seed=1, progressbar=False)
    b = draws.posterior["b"].values.reshape(-1, draws.posterior["b"].shape[-1])
    starts = [{"b": b[i * len(b) // CHAINS]} for i in range(CHAINS)]
    statistics = pmp.privatised_statistics(private)
    p = b.shape[1]
    gram = np.zeros((p, p))
    gram[np.triu_indices(p)] = statistics["gram(x_obs)"]
    gram = gram + np.triu(gram, 1).T
    return {
        "draws": b,
        "mean": b.mean(0),
        "sd": b.std(0),
        "starts": starts,
        "gram": gram,
        "cross": statistics["cross(x_obs, y_obs)"],
    }


def control_variate(start: dict) -> dict:
    """The public quadratic proxy of the log-likelihood and what it leaves to each record.

    softplus(u) ≈ const + βu + κu²/2 with (β, κ) the least-squares line through σ(u) =
    softplus′(u) at u = x̃·θ, x̃ drawn uniformly on the declared bounds (public) and θ from the
    warm start's released draws. Record i's log-likelihood y_i·u_i − softplus(u_i) is then

        [y_i·u_i − βu_i − κu_i²/2] + [βu_i + κu_i²/2 − softplus(u_i)],

    and the first brackets sum to θ·Xᵀy − βθ·Xᵀ1 − (κ/2)θᵀXᵀXθ, a function of the released
    statistics (Xᵀ1 is XᵀX's intercept column), which the chain reads as a public
    `pm.Potential`. Only the second brackets, the residual −g(u_i), stay per record; their
    ratio |g(u′) − g(u)| ≤ max|σ − β − κu|·|x·(θ′ − θ)|, a few hundredths of the raw
    ratio, so the clip c and with it σ = c·(σT/c) are that much smaller for the same moves
    (Bardenet, Doucet & Holmes 2017, "On Markov chain Monte Carlo methods for tall data",
    JMLR 18, section 6: Taylor proxies as control variates). The chain targets the posterior
    with the released statistics in place of the true ones in the proxy's sum (their noise,
    of variance fixed by ε₀, shifts it by O(1/(ε₀·n)), under a posterior sd of O(1/√n)).
    """
    rng = np.random.default_rng(12345)  # public: no data
    p = start["gram"].shape[0]
    design = np.column_stack([np.ones(20_000), rng.uniform(-1, 1, size=(20_000, p - 1))])
    theta = start["draws"][rng.integers(0, len(start["draws"]), size=20_000)]
    u = np.einsum("ij,ij->i", design, theta)
    kappa, beta = np.polyfit(u, 1 / (1 + np.exp(-u)), 1)
    precision = kappa * start["gram"] + np.eye(p) / 4  # the proxy's, with the N(0, 4I) prior
    scale = 2.38 / np.sqrt(p) * np.sqrt(np.diag(np.linalg.inv(precision))) / STEP

    def g(u):
        return np.logaddexp(0, u) - beta * u - kappa * u**2 / 2

    moved = theta + scale * rng.standard_normal(theta.shape)
    ratio = np.abs(g(np.einsum("ij,ij->i", design, moved)) - g(u))
    return {
        "beta": beta,
        "kappa": kappa,
        "scale": scale,
        "clip": float(np.quantile(ratio, 0.999)),
        "gram": start["gram"],
        "cross": start["cross"],
    }


def control_model(x: np.ndarray, y: np.ndarray, proxy: dict) -> pm.Model:
    """The warm model's posterior written as the proxy's released sum (public) plus the
    per-record residuals (private, the only terms the step reads per record)."""
    beta, kappa = proxy["beta"], proxy["kappa"]

    def residual(value, u):
        return beta * u + kappa * u**2 / 2 - pt.softplus(u)

    p = x.shape[1]
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=covariate_bounds(p))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(0, 1))
        b = pmp.TruncatedMvNormal(
            "b", np.zeros(p), 4 * np.eye(p), radius=RADIUS, default_transform=None
        )
        gram, cross = proxy["gram"], proxy["cross"]
        pm.Potential("proxy", b @ (cross - beta * gram[:, 0]) - kappa / 2 * b @ gram @ b)
        pm.CustomDist("y", x_obs @ b, logp=residual, observed=y_obs)
    return model


def _fitting(total, low: float, high: float, *, grows: bool) -> float:
    """The largest value in [low, high] (to 1 %) whose run (warm start included) composes to
    ε ≤ 2 at δ = 1e-6 when ``total`` grows with the value, the smallest when it falls."""
    while high / low > 1.01:
        middle = (low * high) ** 0.5
        fits = total(middle) <= 2.0
        low, high = (middle, high) if fits == grows else (low, middle)
    return low if grows else high


def largest_clip(total) -> float:
    """The largest clip c (to 1 %) that fits ε ≤ 2 (`_fitting`)."""
    return _fitting(total, 1e-6, 1.0, grows=True)


def smallest_noise(total) -> float:
    """The smallest σ (to 1 %) that fits ε ≤ 2 (`_fitting`)."""
    return _fitting(total, 1e-3, 100.0, grows=False)


def composed(chain: pmp.dp.Release, before: tuple) -> float:
    return pmp.PrivacyLedger([*before, chain]).composition(1e-6).epsilon


def barker_total(clip: float, before: tuple = ()) -> float:
    release = pmp.dp.Release(
        "clipped_barker_metropolis", pmp.dp.PureEvent(2 * clip + 2**-43), count=STEPS
    )
    return composed(release, before)


def gaussian_total(q: float, sigma: float, clip: float, before: tuple = ()) -> float:
    test = SubsampledGaussianTest(exact_sampling_rate(q), clip, 1.0, sigma, secure=False)
    return composed(test.release("subsampled_gaussian_metropolis", STEPS), before)


def timed_chains(step, initvals) -> tuple:
    """`CHAINS` chains of `TUNE` + `DRAWS` steps of ``step`` under `BUDGET`, and the seconds
    they took."""
    started = time.perf_counter()
    idata = pmp.sample(
        DRAWS,
        tune=TUNE,
        chains=CHAINS,
        step=step,
        random_seed=2,
        budget=BUDGET,
        progressbar=False,
        initvals=initvals,
    )
    return idata, time.perf_counter() - started


def summarise(name: str, idata, epsilon: float, reference: dict, seconds: float) -> float:
    mean = idata.posterior["b"].mean(("chain", "draw")).values
    shift = (mean - reference["mean"]) / reference["sd"]
    rhat = float(az.rhat(idata)["b"].max())
    ess = float(az.ess(idata)["b"].min())
    accept = float(idata.sample_stats["accepted"].mean())
    print(
        f"{name:>22}: ε = {epsilon:.3f}, mean − ref = {np.round(shift, 2)} sd, R-hat = "
        f"{rhat:.3f}, ESS = {ess:.0f}, ESS/ε = {ess / epsilon:.1f}, accept = {accept:.3f}, "
        f"{seconds:.0f} s",
        flush=True,
    )
    return ess / epsilon


def run_control_variates(x: np.ndarray, y: np.ndarray, model: pm.Model, reference: dict) -> None:
    """``--control-variate``: the warm start, then chains on the proxy's residuals (module
    docstring): full-data Barker with the largest clip that fits, and the subsampled Gaussian
    test at each q of `CONTROL_RATES` with the clip the proxy needs and the smallest σ that
    fits; ESS per unit ε as a ratio to the Barker chain's."""
    efficiency = {}
    for q in (None, *CONTROL_RATES):
        name = "barker cv" if q is None else f"gaussian cv q={q}"
        if ONLY not in name:
            continue
        session.reset()
        start = warm_start(model)
        before = pmp.ledger_for(model).releases
        proxy = control_variate(start)
        if q is None:
            clip = largest_clip(lambda c, before=before: barker_total(c, before))
            kwargs = {}
        else:
            clip = proxy["clip"]
            sigma = smallest_noise(
                lambda s, q=q, c=clip, before=before: gaussian_total(q, s, c, before)
            )
            kwargs = {"sampling_rate": q, "noise_scale": sigma}
        off = np.round((start["mean"] - reference["mean"]) / reference["sd"], 2)
        print(
            f"{name}: warm start {off} sd from the reference; proxy β = {proxy['beta']:.4f}, "
            f"κ = {proxy['kappa']:.4f}, residual ratio 99.9% quantile {proxy['clip']:.3g}, "
            f"clip c = {clip:.3g}, σ = {kwargs.get('noise_scale', 0):.3g}, proposal scale "
            f"{np.round(proxy['scale'], 4)}",
            flush=True,
        )
        with control_model(x, y, proxy):
            step = pmp.PrivateMetropolis(
                clip=clip, proposal_scale=proxy["scale"], tune=False, secure=False, **kwargs
            )
            idata, seconds = timed_chains(step, start["starts"])
        epsilon = pmp.privacy_report(idata).ledger.composition(1e-6).epsilon
        efficiency[name] = summarise(name, idata, epsilon, reference, seconds)
    if "barker cv" in efficiency:
        for name, value in efficiency.items():
            print(f"{name}: ESS/ε = {value / efficiency['barker cv']:.2f} × full-data Barker's")


THROUGHPUT_SIZES = (10_000, 100_000, 1_000_000)
THROUGHPUT_RATES = (None, 1.0, 0.1, 0.01)  # None: the full-data Barker step


def throughput() -> None:
    """Steps per CPU second of `PrivateMetropolis` against n and q (``--throughput``): the
    logistic model of the simulated records, the step compiled before the clock starts, then
    ``pmp.sample`` of one chain, timed by the process's CPU clock. The subsampled step reads
    only its subsample's rows (issue 38), so its cost follows q·n, plus the n words of the
    subsample's mask."""
    print("steps per CPU second (one chain, secure=False)")
    print(
        f"{'n':>9} "
        + " ".join(f"{'full' if q is None else f'q={q}':>10}" for q in THROUGHPUT_RATES)
    )
    for n in THROUGHPUT_SIZES:
        x, y = simulated(n)
        model = model_for(x, y)
        rates = []
        for q in THROUGHPUT_RATES:
            session.reset()
            kwargs = {} if q is None else {"sampling_rate": q, "noise_scale": 3.0}
            with model:
                step = pmp.PrivateMetropolis(clip=0.1, proposal_scale=0.01, secure=False, **kwargs)
            if step._compiled_subset_terms() is None:
                step._compiled_log_ratio_terms()
            steps = max(10, min(400, int(4e6 / (n * (1.0 if q is None else q)))))
            start = time.process_time()
            with model:
                pmp.sample(
                    steps,
                    tune=0,
                    chains=1,
                    cores=1,
                    step=step,
                    random_seed=1,
                    progressbar=False,
                    compute_convergence_checks=False,
                )
            rates.append(steps / (time.process_time() - start))
        row = " ".join(f"{rate:10.1f}" for rate in rates)
        print(f"{n:>9} {row}   q=0.01 / q=1: {rates[-1] / rates[1]:.1f}×")


def main() -> None:
    if "--throughput" in sys.argv:
        throughput()
        return
    x, y = data()
    model = model_for(x, y)
    reference = nuts_reference(x, y) if "--nuts" in sys.argv else laplace_reference(x, y)
    print(f"n = {len(y)}, reference mean {reference['mean']}, sd {reference['sd']}")
    if CONTROL:
        run_control_variates(x, y, model, reference)
        return
    samplers = {"barker": (barker_total, {})}
    for q, sigma in SAMPLERS:
        samplers[f"gaussian q={q} σ={sigma}"] = (
            lambda c, before=(), q=q, sigma=sigma: gaussian_total(q, sigma, c, before),
            {"sampling_rate": q, "noise_scale": sigma},
        )
    for name, (total, kwargs) in samplers.items():
        if ONLY not in name:
            continue
        session.reset()  # each sampler is a separate benchmark of the same (public) data
        initvals, before = None, ()
        if "--start-at-reference" in sys.argv:
            initvals = {"b": reference["mean"]}
        if WARM:
            start = warm_start(model)
            before = pmp.ledger_for(model).releases
            initvals = start["starts"]
            off = np.round((start["mean"] - reference["mean"]) / reference["sd"], 2)
            print(f"{name}: warm start {off} sd from the reference, sd {np.round(start['sd'], 4)}")
        clip = largest_clip(lambda c, total=total, before=before: total(c, before))
        scale, limit = clip / 3, None
        if WARM:
            # the warm start's sds, shrunk by the step until ‖s‖₂ = c/STEP: a record's ratio
            # is at most |x·(θ' − θ)| ≤ ‖s‖₂·|N(0, 1)| for |x_j| ≤ 1 (public given the
            # released posterior)
            scale, limit = start["sd"], clip / STEP
        with model:
            step = pmp.PrivateMetropolis(
                clip=clip,
                proposal_scale=scale,
                max_step_size=limit,
                tune="--tune" in sys.argv,
                secure=False,
                **kwargs,
            )
            idata, seconds = timed_chains(step, initvals)
        epsilon = pmp.privacy_report(idata).ledger.composition(1e-6).epsilon
        scale = step.proposal_dist.s * step.scaling
        print(f"{name}: clip c = {clip:.4g}, proposal scale {np.round(scale, 4)} at the start")
        summarise(name, idata, epsilon, reference, seconds)


if __name__ == "__main__":
    main()
