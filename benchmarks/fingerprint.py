"""A deterministic fingerprint of what pymc-private releases and displays, model by model.

Run: ``python benchmarks/fingerprint.py [--out FILE] [--models NAME,NAME...]`` (prints the JSON
to stdout without ``--out``). On two shared cores with PyMC 5.28 it takes about 40 s with
PyTensor's compile cache warm, up to 2.5 minutes cold (most of it compiling the per-draw steps).

Why: a port (PyMC 6, PyTensor 3, ArviZ 1) or a move of modules must change what is computed
on, never what is released. Fingerprint before and after, then diff the two runs::

    python benchmarks/fingerprint.py --out before.json   # on the old code or stack
    python benchmarks/fingerprint.py --out after.json    # on the new one
    python benchmarks/fingerprint.py --diff before.json after.json

``--diff`` prints every key whose value differs, appeared or disappeared (one line each, as a
path such as ``models.naive_bayes.privatize.statistics.counts(x_obs | y_obs).values[3]``),
grouped by model, then the environment (package versions, expected to differ across stacks,
never counted as a difference); it exits with status 1 when anything but the environment
differs. The file is also sorted, indented JSON with one number per line, so plain
``diff before.json after.json`` works too.

What is fingerprinted, for each of the models below (every likelihood family and route of
README.md, ``notebooks/01_quickstart.ipynb``, ``02_models.ipynb`` and ``04_hmm...ipynb``):

- the displays ``pmp.analyze(model)`` and ``pmp.plan(model, epsilon=...)``, as printed
  (``str``) and as Jupyter shows them (``_repr_html_``), exact text line by line (or the
  refusal's exception type and message, also exact);
- the seeded release ``pmp.privatize(model, ..., secure=False, random_seed=...)``: every
  released statistic exactly (dtype, shape and values; floats as their shortest round-trip
  repr), and the model's ledger after it;
- the numpy sampler of the privatised model (``pmp.sample`` with a seed): the sampler's name,
  the groups and attributes of the InferenceData, the posterior shapes, and the posterior
  means and sds rounded to 6 significant digits;
- for per-draw routes (``pmp.PrivateGibbs`` / ``pmp.PrivateMetropolis`` with ``secure=False``,
  ``pmp.sample_posterior``, ``pmp.private_map``), a short seeded run: the per-draw
  ``privacy_epsilon`` exactly, the ledger the InferenceData carries, and the draws rounded to
  10 significant digits (draws may differ in the last bits across PyTensor versions);
- the secure routes (OpenDP's noise, which no seed replays) on one model: the released
  statistics' dtypes and shapes, ``privacy_epsilon`` and the ledger, not the values;
- the ledgers: every release as ``Release.to_dict()`` (exact), the composed ε at δ = 0 and at
  δ = 1e-6 (exact reprs), and ``str(pmp.privacy_report(...))``, exact text (its HTML too for
  the ledger at the end of each model);
- the package's own warnings (classes defined in ``pymc_private``) each section raised,
  category and message; warnings of other libraries are left out (they change with the
  stack and are not the package's display).

Each model, and each section inside it, runs in its own ``try``: an exception is recorded as
``{"error": "Type: message"}`` where its result would be, so a model that starts failing is a
diff, not a crash; a section that depends on a failed one records ``"skipped: ..."``.

What is normalised, and why (nothing else is; no privacy figure ever is):

- data-set ids (32 hex digits, a keyed hash whose key is drawn per process) become
  ``<dataset-id>`` and 64-hex digests become ``<digest>`` in any text;
- the InferenceData's ``created_at`` (a timestamp), attributes ending in ``_version``
  (package versions) and the ``privacy_release`` seal (a SHA-256 over the groups and those
  attributes, so it moves with the timestamp) are replaced by placeholders; the attribute
  *names* are kept;
- temporary paths (``/tmp/...``) become ``<tmp-path>``;
- attributes whose name holds ``time`` (``sampling_time``: a wall time, which the package
  drops; should one come back, its key shows in the diff) become ``<wall time>``; the
  runtime goes to stderr only;
- the R-hat and effective sample size a ``ConvergenceWarning`` quotes are rounded to 2
  significant digits: ArviZ computes them from the draws, and near-constant short chains turn
  last-bit differences of the draws into visible digits (the draws themselves are kept to 10).

Which values depend on what. The released statistics, the numpy sampler and
``sample_posterior``/``private_map`` draw from numpy generators seeded by the script (on grids
the package computes), so they should be identical across stacks. Per-draw step draws, NUTS
draws (``nuts`` sections: trajectories amplify last-bit differences, so only means and sds to
3 digits are kept) and posterior-predictive or synthetic values come through ``pm.sample``'s
or PyTensor's seeding, which a PyMC release may legitimately change: a diff there is worth a
look, not proof of a changed release. Their ε, ledgers and shapes may not change.

Models: ``--list`` prints them (`MODELS`: name, then the family and routes it covers).

The script uses only ``pmp.*``, ``pm.Model``, ``pm.Data``, PyMC distributions and numpy (no
``az.*``, no ``pymc_private`` internals), and reads an InferenceData either as ArviZ 0.x's
``InferenceData`` or as ArviZ 1's ``xarray.DataTree``, so that it runs unchanged on both
stacks and after modules move.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
import warnings
import zlib
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np
import pymc as pm

import pymc_private as pmp

FORMAT = 1
EPSILON = 1.0
DELTA = 1e-6
N = 80  # records per model unless stated

# ---------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------


def _number(x):
    """A JSON-exact scalar: ints as ints, floats as floats (json writes their round-trip
    repr), non-finite floats as strings (JSON has no NaN)."""
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    x = float(x)
    return x if np.isfinite(x) else repr(x)


def _rounded(x, digits: int):
    """``x`` rounded to ``digits`` significant digits (non-finite as strings)."""
    x = float(x)
    return float(f"{x:.{digits - 1}e}") if np.isfinite(x) else repr(x)


def exact(value) -> dict:
    """An array exactly: dtype, shape and its values, flattened in C order."""
    array = np.asarray(value)
    return {
        "dtype": array.dtype.str.lstrip("<>=|"),
        "shape": list(array.shape),
        "values": [_number(x) for x in array.ravel().tolist()],
    }


def rounded(value, digits: int) -> dict:
    """An array rounded to ``digits`` significant digits: shape and flattened values."""
    array = np.asarray(value, dtype=float)
    return {"shape": list(array.shape), "values": [_rounded(x, digits) for x in array.ravel()]}


_HEX32 = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")
_HEX64 = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
_TMP = re.compile(r"/tmp/[^\s'\"),]*")


def normalised(text: str) -> str:
    """Text without what varies from run to run (module docstring)."""
    text = _HEX64.sub("<digest>", text)
    text = _HEX32.sub("<dataset-id>", text)
    return _TMP.sub("<tmp-path>", text)


# The diagnostics a ConvergenceWarning quotes: computed from the draws by ArviZ, so that the
# last bits of the draws (kept to 10 digits elsewhere) could move their printed digits.
_DIAGNOSTIC = re.compile(r"(R-hat up to |effective sample size down to )(\d+(?:\.\d+)?)")


def _two_digits(match: re.Match) -> str:
    value = float(match.group(2))
    return f"{match.group(1)}{float(f'{value:.1e}'):g} (2 digits)"


def warning_text(warning: warnings.WarningMessage) -> str:
    message = normalised(str(warning.message))
    if warning.category.__name__ == "ConvergenceWarning":
        message = _DIAGNOSTIC.sub(_two_digits, message)
    return f"{warning.category.__name__}: {message}"


def error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {normalised(str(error))}"


# ---------------------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------------------


class Skipped(Exception):
    """A section that needs the result of one that failed."""


@contextmanager
def package_warnings(found: list[str]):
    """Record the warnings of pymc_private's own classes raised inside the block."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for item in caught:
        if getattr(item.category, "__module__", "").startswith("pymc_private"):
            line = warning_text(item)
            if line not in found:
                found.append(line)


def section(fp: dict, key: str, run: Callable, describe: Callable = lambda value: value):
    """Run ``run()``, store ``describe(result)`` under ``fp[key]`` (or the error), and the
    package's warnings under ``fp[key + " warnings"]``; return the result, or None."""
    found: list[str] = []
    result = None
    try:
        with package_warnings(found):
            result = run()
            fp[key] = describe(result)
    except Skipped as why:
        fp[key] = f"skipped: {why}"
        result = None
    except Exception as error:
        fp[key] = {"error": error_text(error)}
        result = None
    if found:
        fp[f"{key} warnings"] = found
    return result


def needs(value, what: str):
    if value is None:
        raise Skipped(f"{what} failed")
    return value


# ---------------------------------------------------------------------------------------
# What is released
# ---------------------------------------------------------------------------------------


def lines(display) -> list[str]:
    """A display's text, line by line."""
    return normalised(str(display)).splitlines()


def shown(display) -> dict:
    """What a display prints (``str``) and what Jupyter shows (``_repr_html_``, one tag a line
    so that a diff points at the cell)."""
    html = getattr(display, "_repr_html_", None)
    tags = lines(html().replace("><", ">\n<")) if html else "<no _repr_html_>"
    return {"text": lines(display), "html": tags}


def ledger_fingerprint(ledger, *, html: bool = False) -> dict:
    """Every release of a ledger exactly, its totals at δ = 0 and δ = 1e-6, and its report
    (its HTML too with ``html``)."""
    releases = []
    for release in ledger.releases:
        entry = {}
        for name, value in release.to_dict().items():
            entry[name] = normalised(value) if isinstance(value, str) else _jsonable(value)
        releases.append(entry)
    report = pmp.privacy_report(ledger, delta=DELTA)
    return {
        "releases": releases,
        "epsilon at delta=0": _number(ledger.epsilon(0.0)),
        "epsilon at delta=1e-6": _number(ledger.epsilon(DELTA)),
        "report": shown(report) if html else lines(report),
    }


def _jsonable(value):
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    return _number(value)


def groups_of(idata) -> dict:
    """The groups of an InferenceData (ArviZ 0.x) or of a DataTree (ArviZ 1), as Datasets."""
    if hasattr(idata, "children") and hasattr(idata, "to_dataset"):
        return {name: node.to_dataset() for name, node in idata.children.items()}
    return {name: idata[name] for name in idata.groups()}


def attributes(attrs) -> dict:
    """Attributes with the run-dependent ones replaced (module docstring)."""
    out = {}
    for key in sorted(attrs, key=str):
        value = attrs[key]
        if key == "created_at":
            out[key] = "<timestamp>"
        elif str(key).endswith("_version"):
            out[key] = "<version>"
        elif "time" in str(key):
            out[key] = "<wall time>"
        elif key == "privacy_release":
            out[key] = "<seal digest>"
        elif key == "privacy_ledger":
            out[key] = "<ledger: see 'ledger'>"
        elif isinstance(value, str):
            out[key] = normalised(value)
        else:
            out[key] = _jsonable(np.asarray(value).tolist())
    return out


def idata_fingerprint(idata, *, draws: int | None, moments: int | None) -> dict:
    """What an InferenceData of a private route holds: its groups and attributes, the ledger it
    carries, ``privacy_epsilon`` exactly, the draws rounded to ``draws`` significant digits
    and/or their means and sds rounded to ``moments``."""
    groups = groups_of(idata)
    fp: dict = {
        "attrs": attributes(idata.attrs),
        "groups": {
            name: {
                "variables": {
                    str(v): {"dims": list(map(str, g[v].dims)), "shape": list(g[v].shape)}
                    for v in sorted(g.data_vars, key=str)
                },
                "attrs": attributes(g.attrs),
            }
            for name, g in sorted(groups.items())
        },
    }
    stats = groups.get("sample_stats")
    if stats is not None and "privacy_epsilon" in stats:
        fp["privacy_epsilon"] = exact(stats["privacy_epsilon"].values)
    if "privacy_ledger" in idata.attrs:
        fp["ledger"] = ledger_fingerprint(pmp.ledger_of(idata))
    for name in ("posterior", "latent_posterior", "posterior_predictive", "predictions"):
        group = groups.get(name)
        if group is None:
            continue
        for var in sorted(group.data_vars, key=str):
            values = np.asarray(group[var].values, dtype=float)
            if draws is not None:
                fp[f"{name}.{var} ({draws} digits)"] = rounded(values, draws)
            if moments is not None:
                flat = values.reshape(-1, *values.shape[2:])
                fp[f"{name}.{var} mean ({moments} digits)"] = rounded(flat.mean(0), moments)
                fp[f"{name}.{var} sd ({moments} digits)"] = rounded(flat.std(0), moments)
    return fp


def displays(fp: dict, model, epsilon: float = EPSILON, **plan_kwargs) -> None:
    section(fp, "analyze", lambda: pmp.analyze(model), shown)
    section(fp, "plan", lambda: pmp.plan(model, epsilon=epsilon, **plan_kwargs), shown)


def privatized(fp: dict, model, *, key: str = "privatize", seed: int, **kwargs):
    """The seeded release: its statistics exactly, and the model's ledger after it."""

    def describe(private):
        statistics = pmp.privatised_statistics(private)
        return {
            "arguments": {k: _jsonable(v) for k, v in sorted(kwargs.items())},
            "statistics": {name: exact(statistics[name]) for name in sorted(statistics)},
            "ledger after": ledger_fingerprint(pmp.ledger_for(model)),
        }

    return section(
        fp,
        key,
        lambda: pmp.privatize(model, secure=False, random_seed=seed, **kwargs),
        describe,
    )


def numpy_sampler(fp: dict, private, *, key: str = "numpy sampler", seed: int, **kwargs):
    """``pmp.sample`` on a privatised model: means and sds to 6 digits."""

    def run():
        return pmp.sample(
            model=needs(private, "privatize"), random_seed=seed, progressbar=False, **kwargs
        )

    return section(fp, key, run, lambda i: idata_fingerprint(i, draws=None, moments=6))


def per_draw(fp: dict, model, *, key: str, step: Callable, seed: int, **kwargs):
    """A short seeded run of private steps on raw data: ε per draw exactly, draws to 10
    digits. ``step`` builds the step(s) inside the model's context."""

    def run():
        with model:
            return pmp.sample(step=step(), random_seed=seed, cores=1, progressbar=False, **kwargs)

    return section(fp, key, run, lambda i: idata_fingerprint(i, draws=10, moments=None))


def nuts(fp: dict, private, *, seed: int) -> None:
    """``pmp.sample`` running NUTS on a privatised model: 1 chain of 20 + 20, means and sds to
    3 digits (module docstring)."""

    def run():
        return pmp.sample(
            20,
            tune=20,
            chains=1,
            cores=1,
            random_seed=seed,
            progressbar=False,
            model=needs(private, "privatize"),
        )

    section(fp, "nuts", run, lambda i: idata_fingerprint(i, draws=None, moments=3))


def ledger(fp: dict, model, key: str = "ledger at end") -> None:
    section(fp, key, lambda: ledger_fingerprint(pmp.ledger_for(model), html=True))


def text(fp: dict, key: str, run: Callable) -> None:
    """A display or a refusal: its text exactly."""
    section(fp, key, run, lines)


# ---------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------

MODELS: list[tuple[str, str, Callable]] = []


def model(description: str):
    def register(build: Callable) -> Callable:
        MODELS.append((build.__name__, description, build))
        return build

    return register


def data_rng(name: str) -> np.random.Generator:
    """Each model's own simulated data (distinct values, hence its own ledger)."""
    return np.random.default_rng([2026, zlib.crc32(name.encode())])


@model(
    "Bernoulli/TruncatedBeta with coords: privatize (discrete Laplace, noise-aware), numpy "
    "sampler, replicated release (sample_posterior_predictive), check_release"
)
def beta_bernoulli(fp):
    x = data_rng("beta_bernoulli").binomial(1, 0.3, N)
    with pm.Model(coords={"record": np.arange(N)}) as m:
        x_obs = pmp.PrivateData("x_obs", x, bounds=(0, 1), dims="record")
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=0.05, upper=0.95)
        pm.Bernoulli("x", theta, observed=x_obs, dims="record")
    displays(fp, m)
    private = privatized(fp, m, seed=11, epsilon=EPSILON)
    idata = numpy_sampler(fp, private, seed=12, draws=100, tune=50, chains=2)
    section(fp, "check_release", lambda: pmp.check_release(needs(idata, "numpy sampler")), shown)
    section(
        fp,
        "replicated release",
        lambda: pmp.sample_posterior_predictive(
            needs(idata, "numpy sampler"), private, random_seed=13
        ),
        lambda ppc: idata_fingerprint(ppc, draws=None, moments=6),
    )
    ledger(fp, m)


@model(
    "Bernoulli/TruncatedBeta: plug-in privatize (noise_aware=False, independent exact "
    "draws), PrivateGibbs per draw (2 chains), sample_posterior (BAPS), private_map, "
    "a budget refusal"
)
def beta_bernoulli_routes(fp):
    x = data_rng("beta_bernoulli_routes").binomial(1, 0.6, N)
    with pm.Model() as m:
        x_obs = pmp.PrivateData("x_obs", x, bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 2, 2, lower=0.05, upper=0.95)
        pm.Bernoulli("x", theta, observed=x_obs)
    private = privatized(fp, m, key="privatize plug-in", seed=21, epsilon=2.0, noise_aware=False)
    numpy_sampler(fp, private, key="plug-in sampler", seed=22, draws=100, chains=2)
    per_draw(
        fp,
        m,
        key="PrivateGibbs",
        step=lambda: pmp.PrivateGibbs(temperature=50.0, secure=False),
        seed=23,
        draws=8,
        chains=2,
    )
    section(
        fp,
        "sample_posterior",
        lambda: pmp.sample_posterior(m, n=3, temperature=20.0, secure=False, random_seed=24),
        lambda i: idata_fingerprint(i, draws=10, moments=None),
    )
    section(
        fp,
        "private_map",
        lambda: pmp.private_map(m, 1.0, secure=False, random_seed=25),
        lambda est: {k: exact(v) for k, v in sorted(est.items())},
    )
    spent = pmp.ledger_for(m).epsilon()

    def over_budget():
        with m:
            pmp.sample(
                10,
                step=pmp.PrivateGibbs(temperature=50.0, secure=False),
                chains=1,
                budget=pmp.Budget(spent + 0.5),
                random_seed=26,
                progressbar=False,
            )

    text(fp, "budget refusal", over_budget)
    ledger(fp, m)


@model("Categorical/TruncatedDirichlet: privatize (noise-aware, exact latent counts), numpy")
def categorical_dirichlet(fp):
    c = data_rng("categorical_dirichlet").choice(4, N, p=[0.4, 0.3, 0.2, 0.1])
    with pm.Model() as m:
        c_obs = pmp.PrivateData("c_obs", c, bounds=(0, 3))
        p = pmp.TruncatedDirichlet("p", np.ones(4), min_prob=0.02)
        pm.Categorical("c", p, observed=c_obs)
    displays(fp, m)
    private = privatized(fp, m, seed=31, epsilon=EPSILON)
    numpy_sampler(fp, private, seed=32, draws=100, tune=50, chains=2)
    ledger(fp, m)


@model("Binomial, n a constant: privatize (noise-aware), numpy sampler")
def binomial(fp):
    k = data_rng("binomial").binomial(10, 0.3, N)
    with pm.Model() as m:
        k_obs = pmp.PrivateData("k_obs", k, bounds=(0, 10))
        p = pmp.TruncatedBeta("p", 1, 1, lower=0.05, upper=0.95)
        pm.Binomial("k", n=10, p=p, observed=k_obs)
    displays(fp, m)
    private = privatized(fp, m, seed=41, epsilon=EPSILON)
    numpy_sampler(fp, private, seed=42, draws=100, tune=50, chains=2)
    ledger(fp, m)


@model(
    "Binomial with per-record trials: analyze refusal, clipped PrivateMetropolis per draw (Barker)"
)
def binomial_trials(fp):
    rng = data_rng("binomial_trials")
    trials = rng.integers(5, 21, N)
    hits = rng.binomial(trials, 0.3)
    with pm.Model() as m:
        hits_obs = pmp.PrivateData("hits", hits, bounds=(0, 20))
        p = pmp.TruncatedBeta("p", 1, 1, lower=0.05, upper=0.95)
        pm.Binomial("k", n=trials, p=p, observed=hits_obs)
    displays(fp, m)
    per_draw(
        fp,
        m,
        key="PrivateMetropolis clip",
        step=lambda: pmp.PrivateMetropolis(clip=1.0, temperature=10.0, secure=False),
        seed=51,
        draws=10,
        tune=5,
        chains=1,
    )
    ledger(fp, m)


@model("Poisson/TruncatedGamma rate: privatize (noise-aware), numpy, private_map")
def poisson_rate(fp):
    y = np.minimum(data_rng("poisson_rate").poisson(2.5, N), 8)
    with pm.Model() as m:
        y_obs = pmp.PrivateData("y_obs", y, bounds=(0, 8))
        lam = pmp.TruncatedGamma("lam", 2.0, 1.0, lower=0.5, upper=6.0)
        pm.Poisson("y", lam, observed=y_obs)
    displays(fp, m)
    private = privatized(fp, m, seed=61, epsilon=EPSILON)
    numpy_sampler(fp, private, seed=62, draws=100, tune=50, chains=2)
    section(
        fp,
        "private_map",
        lambda: pmp.private_map(m, 1.0, secure=False, random_seed=63),
        lambda est: {k: exact(v) for k, v in sorted(est.items())},
    )
    ledger(fp, m)


@model("Exponential/TruncatedGamma rate: privatize (noise-aware sum), numpy sampler")
def exponential_rate(fp):
    y = np.minimum(data_rng("exponential_rate").exponential(0.8, N), 4.0)
    with pm.Model() as m:
        y_obs = pmp.PrivateData("y_obs", y, bounds=(0.0, 4.0))
        lam = pmp.TruncatedGamma("lam", 2.0, 2.0, lower=0.2, upper=5.0)
        pm.Exponential("y", lam, observed=y_obs)
    displays(fp, m)
    private = privatized(fp, m, seed=71, epsilon=EPSILON)
    numpy_sampler(fp, private, seed=72, draws=100, tune=50, chains=2)
    ledger(fp, m)


@model(
    "Normal mean, sigma known: privatize (noise-aware), numpy, plug-in exact draws, "
    "sample_posterior (BAPS), private_map"
)
def normal_known_sigma(fp):
    z = np.clip(data_rng("normal_known_sigma").normal(0.4, 1.0, N), -3, 3)
    with pm.Model() as m:
        z_obs = pmp.PrivateData("z_obs", z, bounds=(-3.0, 3.0))
        mu = pmp.TruncatedNormal("mu", 0.0, 1.0, lower=-2.0, upper=2.0)
        pm.Normal("z", mu, 1.0, observed=z_obs)
    displays(fp, m)
    private = privatized(fp, m, seed=81, epsilon=EPSILON)
    numpy_sampler(fp, private, seed=82, draws=100, tune=50, chains=2)
    plug_in = privatized(fp, m, key="privatize plug-in", seed=83, epsilon=0.5, noise_aware=False)
    numpy_sampler(fp, plug_in, key="plug-in sampler", seed=84, draws=100, chains=2)
    section(
        fp,
        "sample_posterior",
        lambda: pmp.sample_posterior(m, n=3, temperature=20.0, secure=False, random_seed=85),
        lambda i: idata_fingerprint(i, draws=10, moments=None),
    )
    section(
        fp,
        "private_map",
        lambda: pmp.private_map(m, 1.0, secure=False, random_seed=86),
        lambda est: {k: exact(v) for k, v in sorted(est.items())},
    )
    ledger(fp, m)


@model(
    "Normal, mu and tau free: HalfNormal refusal, privatize (Laplace; and Gaussian zCDP "
    "cells at delta), numpy sampler, PrivateGibbs per draw (2 chains)"
)
def normal_free_sigma(fp):
    z = np.clip(data_rng("normal_free_sigma").normal(0.4, 0.8, N), -3, 3)

    def halfnormal():
        with pm.Model() as refused:
            z_obs = pmp.PrivateData("z_obs", z, bounds=(-3.0, 3.0))
            mu = pmp.TruncatedNormal("mu", 0.0, 1.0, lower=-2.0, upper=2.0)
            pm.Normal("z", mu, pm.HalfNormal("sigma", 1.0), observed=z_obs)
        return pmp.analyze(refused)

    text(fp, "HalfNormal refusal", halfnormal)
    with pm.Model() as m:
        z_obs = pmp.PrivateData("z_obs", z, bounds=(-3.0, 3.0))
        mu = pmp.TruncatedNormal("mu", 0.0, 1.0, lower=-2.0, upper=2.0)
        tau = pmp.TruncatedGamma("tau", 2.0, 2.0, lower=0.25, upper=4.0)
        pm.Normal("z", mu, tau=tau, observed=z_obs)
    displays(fp, m)
    private = privatized(fp, m, seed=91, epsilon=EPSILON)
    numpy_sampler(fp, private, seed=92, draws=100, tune=50, chains=2)
    gaussian = privatized(
        fp,
        m,
        key="privatize gaussian",
        seed=93,
        epsilon=EPSILON,
        delta=DELTA,
        mechanism="gaussian",
    )
    numpy_sampler(fp, gaussian, key="gaussian numpy sampler", seed=94, draws=100, tune=50, chains=2)
    per_draw(
        fp,
        m,
        key="PrivateGibbs",
        step=lambda: pmp.PrivateGibbs(temperature=50.0, secure=False),
        seed=95,
        draws=6,
        chains=2,
    )
    ledger(fp, m)


def _naive_bayes_data(name: str, d: int = 4, n: int = N):
    rng = data_rng(name)
    y = rng.integers(0, 2, n)
    x = rng.binomial(1, np.where(y[:, None] == 1, 0.7, 0.3), (n, d))
    return y, x


def _naive_bayes(y, x):
    with pm.Model(coords={"cls": [0, 1], "feature": list(range(x.shape[1]))}) as m:
        y_obs = pmp.PrivateData("y_obs", y, bounds=(0, 1))
        x_obs = pmp.PrivateData("x_obs", x, bounds=(0, 1))
        pi = pmp.TruncatedBeta("pi", 1, 1, lower=0.05, upper=0.95)
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=0.05, upper=0.95, dims=("cls", "feature"))
        pm.Bernoulli("y", pi, observed=y_obs)
        pm.Bernoulli("x", theta[y_obs], observed=x_obs)
    return m


@model(
    "Bernoulli naive Bayes (4 features): privatize (Laplace, noise-aware, latent group "
    "sizes), numpy sampler, synthesize"
)
def naive_bayes(fp):
    m = _naive_bayes(*_naive_bayes_data("naive_bayes"))
    displays(fp, m)
    private = privatized(fp, m, seed=101, epsilon=EPSILON)
    idata = numpy_sampler(fp, private, seed=102, draws=100, tune=50, chains=2)

    def synthetic():
        frames = pmp.synthesize(needs(idata, "numpy sampler"), m, m=2, n=10, random_seed=103)
        return [
            {"columns": list(map(str, f.columns)), "values": exact(f.to_numpy())} for f in frames
        ]

    section(fp, "synthesize", synthetic)
    ledger(fp, m)


@model(
    "Bernoulli naive Bayes: unit-shift Gaussian release (mechanism='gaussian', delta), "
    "noise-aware numpy sampler"
)
def naive_bayes_unit_shift(fp):
    m = _naive_bayes(*_naive_bayes_data("naive_bayes_unit_shift", d=6))
    displays(fp, m, delta=DELTA, mechanism="gaussian")
    private = privatized(fp, m, seed=111, epsilon=EPSILON, delta=DELTA, mechanism="gaussian")
    numpy_sampler(fp, private, seed=112, draws=100, tune=50, chains=2)
    ledger(fp, m)


@model(
    "Bernoulli naive Bayes: Fourier release (release='fourier', plug-in), numpy exact "
    "draws, sample_posterior on the privatised model (free)"
)
def naive_bayes_fourier(fp):
    m = _naive_bayes(*_naive_bayes_data("naive_bayes_fourier", d=5))
    private = privatized(fp, m, seed=121, epsilon=EPSILON, release="fourier", noise_aware=False)
    numpy_sampler(fp, private, seed=122, draws=100, chains=2)
    section(
        fp,
        "sample_posterior (privatised)",
        lambda: pmp.sample_posterior(needs(private, "privatize"), 5, secure=False, random_seed=123),
        lambda i: idata_fingerprint(i, draws=10, moments=None),
    )
    ledger(fp, m)


@model(
    "Bernoulli naive Bayes, secure (OpenDP) routes: privatize Laplace and Gaussian, "
    "PrivateGibbs; ledgers, eps and shapes only (the noise cannot be replayed)"
)
def naive_bayes_secure(fp):
    m = _naive_bayes(*_naive_bayes_data("naive_bayes_secure", d=3))

    def shapes(private):
        statistics = pmp.privatised_statistics(private)
        return {
            "statistics": {
                name: {"dtype": value.dtype.str.lstrip("<>=|"), "shape": list(value.shape)}
                for name, value in sorted(statistics.items())
            },
            "ledger after": ledger_fingerprint(pmp.ledger_for(m)),
        }

    section(fp, "privatize secure", lambda: pmp.privatize(m, EPSILON), shapes)
    section(
        fp,
        "privatize secure gaussian",
        lambda: pmp.privatize(m, EPSILON, delta=DELTA, mechanism="gaussian"),
        shapes,
    )

    def gibbs():
        with m:
            step = pmp.PrivateGibbs(temperature=50.0)
            return pmp.sample(
                3,
                step=step,
                chains=1,
                cores=1,
                random_seed=311,
                progressbar=False,
                compute_convergence_checks=False,  # on unreplayable draws
            )

    def epsilons(idata):
        described = idata_fingerprint(idata, draws=None, moments=None)
        return {k: v for k, v in described.items() if k in ("groups", "privacy_epsilon", "ledger")}

    section(fp, "PrivateGibbs secure", gibbs, epsilons)
    ledger(fp, m)


@model("Bernoulli naive Bayes on Dask arrays: privatize plug-in, numpy exact draws")
def naive_bayes_dask(fp):
    import dask.array as da

    y, x = _naive_bayes_data("naive_bayes_dask", d=3, n=120)
    m = _naive_bayes(da.from_array(y, chunks=50), da.from_array(x, chunks=(50, 3)))
    displays(fp, m)
    private = privatized(fp, m, seed=131, epsilon=EPSILON, noise_aware=False)
    numpy_sampler(fp, private, seed=132, draws=100, chains=2)
    ledger(fp, m)


@model(
    "Bayes net A -> B -> C (Categorical CPTs, TruncatedDirichlet): privatize (noise-aware), "
    "numpy sampler, PrivateGibbs per draw"
)
def bayes_net(fp):
    rng = data_rng("bayes_net")
    table = np.array([[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.1, 0.2, 0.7]])
    a = rng.integers(0, 3, N)
    b = np.array([rng.choice(3, p=table[i]) for i in a])
    c = np.array([rng.choice(3, p=table[i]) for i in b])
    with pm.Model() as m:
        a_obs = pmp.PrivateData("A", a, bounds=(0, 2))
        b_obs = pmp.PrivateData("B", b, bounds=(0, 2))
        c_obs = pmp.PrivateData("C", c, bounds=(0, 2))
        pa = pmp.TruncatedDirichlet("pA", np.ones(3), min_prob=0.02)
        pb = pmp.TruncatedDirichlet("pB", np.ones((3, 3)), min_prob=0.02)
        pc = pmp.TruncatedDirichlet("pC", np.ones((3, 3)), min_prob=0.02)
        pm.Categorical("a", pa, observed=a_obs)
        pm.Categorical("b", pb[a_obs], observed=b_obs)
        pm.Categorical("c", pc[b_obs], observed=c_obs)
    displays(fp, m)
    private = privatized(fp, m, seed=141, epsilon=EPSILON)
    numpy_sampler(fp, private, seed=142, draws=60, tune=40, chains=2)
    per_draw(
        fp,
        m,
        key="PrivateGibbs",
        step=lambda: pmp.PrivateGibbs(temperature=20.0, secure=False),
        seed=143,
        draws=4,
        chains=1,
    )
    ledger(fp, m)


def _regression_data(name: str):
    rng = data_rng(name)
    x = rng.uniform(-1.0, 1.0, (N, 2))
    ones = np.column_stack([np.ones(N), x])
    return rng, x, ones


ONES_BOUNDS = ([1.0, -1.0, -1.0], [1.0, 1.0, 1.0])


@model(
    "Linear regression, private covariates with intercept column: alpha refusal, "
    "privatize at delta (auto mechanism), numpy sampler"
)
def linear_regression(fp):
    rng, x, ones = _regression_data("linear_regression")
    y = np.clip(ones @ [0.3, 0.5, -0.3] + rng.normal(0.0, 0.3, N), -2.0, 2.0)

    def with_alpha():
        with pm.Model() as refused:
            x_obs = pmp.PrivateData("X", x, bounds=(-1.0, 1.0))
            y_obs = pmp.PrivateData("y", y, bounds=(-2.0, 2.0))
            alpha = pmp.TruncatedNormal("alpha", 0.0, 1.0, lower=-1.0, upper=1.0)
            w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=2.0)
            pm.Normal("obs", alpha + x_obs @ w, 0.5, observed=y_obs)
        return pmp.analyze(refused)

    text(fp, "alpha refusal", with_alpha)
    with pm.Model() as m:
        x_obs = pmp.PrivateData("X", ones, bounds=ONES_BOUNDS)
        y_obs = pmp.PrivateData("y", y, bounds=(-2.0, 2.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=2.0)
        pm.Normal("obs", x_obs @ w, 0.5, observed=y_obs)
    displays(fp, m, delta=DELTA)
    private = privatized(fp, m, seed=151, epsilon=EPSILON, delta=DELTA)
    numpy_sampler(fp, private, seed=152, draws=100, tune=50, chains=2)
    ledger(fp, m)


@model("Linear regression, sigma free (tau): privatize (Laplace, yTy released), numpy sampler")
def linear_regression_free_sigma(fp):
    rng, _, ones = _regression_data("linear_regression_free_sigma")
    y = np.clip(ones @ [0.3, 0.5, -0.3] + rng.normal(0.0, 0.4, N), -2.0, 2.0)
    with pm.Model() as m:
        x_obs = pmp.PrivateData("X", ones, bounds=ONES_BOUNDS)
        y_obs = pmp.PrivateData("y", y, bounds=(-2.0, 2.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=2.0)
        tau = pmp.TruncatedGamma("tau", 2.0, 0.5, lower=0.5, upper=20.0)
        pm.Normal("obs", x_obs @ w, tau=tau, observed=y_obs)
    displays(fp, m)
    private = privatized(fp, m, seed=161, epsilon=EPSILON)
    numpy_sampler(fp, private, seed=162, draws=100, tune=50, chains=2)
    ledger(fp, m)


@model(
    "Linear regression, public covariates (pm.Data with dims): privatize (only Xty), "
    "numpy sampler, predictions at new public inputs"
)
def linear_public_prediction(fp):
    rng, x, _ = _regression_data("linear_public_prediction")
    y = np.clip(x @ [0.5, -0.3] + rng.normal(0.0, 0.3, N), -2.0, 2.0)
    with pm.Model(coords={"record": np.arange(N), "feature": ["a", "b"]}) as m:
        x_data = pm.Data("X", x, dims=("record", "feature"))
        y_obs = pmp.PrivateData("y", y, bounds=(-2.0, 2.0), dims="record")
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=2.0, dims="feature")
        pm.Normal("obs", x_data @ w, 0.5, observed=y_obs, dims="record")
    displays(fp, m)
    private = privatized(fp, m, seed=171, epsilon=EPSILON)
    idata = numpy_sampler(fp, private, seed=172, draws=100, tune=50, chains=2)
    new = np.array([[-0.5, 0.5], [0.0, 0.0], [0.5, -0.5]])
    section(
        fp,
        "predictions",
        lambda: pmp.sample_posterior_predictive(
            needs(idata, "numpy sampler"), m, inputs={"X": new}, random_seed=173
        ),
        lambda p: idata_fingerprint(p, draws=None, moments=6),
    )
    ledger(fp, m)


@model(
    "Logistic regression, private covariates with intercept: no-intercept refusal, "
    "privatize at delta (PASS-GLM moments), noise-aware numpy sampler"
)
def logistic_private(fp):
    rng, x, ones = _regression_data("logistic_private")
    y = rng.binomial(1, 1 / (1 + np.exp(-(ones @ [0.3, 1.0, -0.5]))))

    def no_intercept():
        with pm.Model() as refused:
            x_obs = pmp.PrivateData("X", x, bounds=(-1.0, 1.0))
            y_obs = pmp.PrivateData("y", y, bounds=(0, 1))
            w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
            pm.Bernoulli("obs", logit_p=x_obs @ w, observed=y_obs)
        return pmp.privatize(refused, EPSILON, delta=DELTA, secure=False, random_seed=0)

    text(fp, "no-intercept refusal", no_intercept)
    with pm.Model() as m:
        x_obs = pmp.PrivateData("X", ones, bounds=ONES_BOUNDS)
        y_obs = pmp.PrivateData("y", y, bounds=(0, 1))
        w = pmp.TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=3.0)
        pm.Bernoulli("obs", logit_p=x_obs @ w, observed=y_obs)
    displays(fp, m, delta=DELTA)
    private = privatized(fp, m, seed=181, epsilon=EPSILON, delta=DELTA)
    numpy_sampler(fp, private, seed=182, draws=60, tune=60, chains=2)
    ledger(fp, m)


@model("Logistic regression, public covariates (pm.Data): privatize (Xty), numpy sampler")
def logistic_public(fp):
    rng, _, ones = _regression_data("logistic_public")
    y = rng.binomial(1, 1 / (1 + np.exp(-(ones @ [0.3, 1.0, -0.5]))))
    with pm.Model() as m:
        x_data = pm.Data("X", ones)
        y_obs = pmp.PrivateData("y", y, bounds=(0, 1))
        w = pmp.TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=3.0)
        pm.Bernoulli("obs", logit_p=x_data @ w, observed=y_obs)
    displays(fp, m)
    private = privatized(fp, m, seed=191, epsilon=EPSILON)
    numpy_sampler(fp, private, seed=192, draws=60, tune=60, chains=2)
    ledger(fp, m)


@model("Logistic regression without intercept: PrivateMetropolis (Barker) per draw, 2 chains")
def logistic_metropolis(fp):
    rng, x, _ = _regression_data("logistic_metropolis")
    y = rng.binomial(1, 1 / (1 + np.exp(-(x @ [1.0, -0.5]))))
    with pm.Model() as m:
        x_obs = pmp.PrivateData("X", x, bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y", y, bounds=(0, 1))
        w = pmp.TruncatedNormal("w", 0.0, 1.0, lower=-2.0, upper=2.0, shape=2)
        pm.Bernoulli("obs", logit_p=x_obs @ w, observed=y_obs)
    displays(fp, m)
    per_draw(
        fp,
        m,
        key="PrivateMetropolis",
        step=lambda: pmp.PrivateMetropolis(temperature=10.0, secure=False),
        seed=201,
        draws=8,
        tune=4,
        chains=2,
    )
    ledger(fp, m)


@model(
    "Logistic regression, Poisson-subsampled PrivateMetropolis (clip, sampling_rate, "
    "noise_scale; Renyi accounting at delta), chain_epsilon"
)
def logistic_subsampled(fp):
    rng, _, ones = _regression_data("logistic_subsampled")
    y = rng.binomial(1, 1 / (1 + np.exp(-(ones @ [0.3, 1.0, -0.5]))))
    with pm.Model() as m:
        x_obs = pmp.PrivateData("X", ones, bounds=ONES_BOUNDS)
        y_obs = pmp.PrivateData("y", y, bounds=(0, 1))
        w = pmp.TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=3.0)
        pm.Bernoulli("obs", logit_p=x_obs @ w, observed=y_obs)
    settings = {"clip": 0.5, "sampling_rate": 0.2, "noise_scale": 2.0, "temperature": 5.0}
    section(
        fp,
        "chain_epsilon",
        lambda: pmp.PrivateMetropolis.chain_epsilon(20, **settings),
        _jsonable,
    )
    per_draw(
        fp,
        m,
        key="PrivateMetropolis subsampled",
        step=lambda: pmp.PrivateMetropolis(secure=False, **settings),
        seed=211,
        draws=6,
        tune=4,
        chains=2,
    )
    ledger(fp, m)


@model("Poisson regression, private covariates with intercept: privatize at delta, numpy")
def poisson_regression_private(fp):
    rng, _, ones = _regression_data("poisson_regression_private")
    y = np.minimum(rng.poisson(np.exp(ones @ [0.5, 0.4, -0.3])), 10)
    with pm.Model() as m:
        x_obs = pmp.PrivateData("X", ones, bounds=ONES_BOUNDS)
        y_obs = pmp.PrivateData("y", y, bounds=(0, 10))
        w = pmp.TruncatedMvNormal("w", np.zeros(3), 0.25 * np.eye(3), radius=1.5)
        pm.Poisson("obs", pm.math.exp(x_obs @ w), observed=y_obs)
    displays(fp, m, delta=DELTA)
    private = privatized(fp, m, seed=221, epsilon=EPSILON, delta=DELTA)
    numpy_sampler(fp, private, seed=222, draws=60, tune=60, chains=2)
    ledger(fp, m)


@model("Poisson regression, public covariates (pm.Data): privatize (Laplace), numpy")
def poisson_regression_public(fp):
    rng, _, ones = _regression_data("poisson_regression_public")
    y = np.minimum(rng.poisson(np.exp(ones @ [0.5, 0.4, -0.3])), 10)
    with pm.Model() as m:
        x_data = pm.Data("X", ones)
        y_obs = pmp.PrivateData("y", y, bounds=(0, 10))
        w = pmp.TruncatedMvNormal("w", np.zeros(3), 0.25 * np.eye(3), radius=1.5)
        pm.Poisson("obs", pm.math.exp(x_data @ w), observed=y_obs)
    displays(fp, m)
    private = privatized(fp, m, seed=231, epsilon=EPSILON)
    numpy_sampler(fp, private, seed=232, draws=60, tune=60, chains=2)
    ledger(fp, m)


def _groups_data(name: str):
    rng = data_rng(name)
    g = rng.integers(0, 4, N)
    v = np.clip(rng.normal(np.linspace(-1, 1, 4)[g], 1.0), -3, 3)
    return g, v


@model(
    "Normal with group means mu[g], public index (pm.Data) and private index "
    "(PrivateData): privatize each, numpy sampler"
)
def hierarchical_index(fp):
    for kind in ("pm.Data", "private"):
        # Distinct records per kind (a data set is its records, in any order): own ledgers.
        g, v = _groups_data(f"hierarchical_index {kind}")
        sub = fp.setdefault(f"index {kind}", {})
        with pm.Model() as m:
            v_obs = pmp.PrivateData("v_obs", v, bounds=(-3.0, 3.0))
            if kind == "pm.Data":
                index = pm.Data("g", g)
            else:
                index = pmp.PrivateData("g_obs", g, bounds=(0, 3))
            mu = pmp.TruncatedNormal("mu", 0.0, 1.0, lower=-2.0, upper=2.0, shape=4)
            pm.Normal("v", mu[index], 1.0, observed=v_obs)
        displays(sub, m)
        private = privatized(sub, m, seed=241, epsilon=EPSILON)
        numpy_sampler(sub, private, seed=242, draws=100, tune=50, chains=2)
        ledger(sub, m)


@model(
    "Normal group means with hyperpriors, numpy index: compound step PrivateGibbs + "
    "PrivateMetropolis (eps 0 for the hyperparameters), PrivateGibbs() refusal"
)
def hyperpriors(fp):
    g, v = _groups_data("hyperpriors")
    with pm.Model() as m:
        v_obs = pmp.PrivateData("v_obs", v, bounds=(-3.0, 3.0))
        m0 = pmp.TruncatedNormal("m0", 0.0, 1.0, lower=-2.0, upper=2.0)
        s0 = pmp.TruncatedGamma("s0", 2.0, 2.0, lower=0.2, upper=3.0)
        mu = pmp.TruncatedNormal("mu", m0, s0, lower=-2.0, upper=2.0, shape=4)
        pm.Normal("v", mu[g], 1.0, observed=v_obs)
    displays(fp, m)

    def gibbs_alone():
        with m:
            return pmp.PrivateGibbs(secure=False)

    text(fp, "PrivateGibbs() refusal", gibbs_alone)
    per_draw(
        fp,
        m,
        key="PrivateGibbs + PrivateMetropolis",
        step=lambda: [
            pmp.PrivateGibbs([mu], temperature=20.0, secure=False),
            pmp.PrivateMetropolis([m0, s0], secure=False),
        ],
        seed=251,
        draws=5,
        chains=1,
    )
    ledger(fp, m)


@model(
    "Varying intercepts alpha[g] + X @ w (public index): privatize at delta, plan refusal, "
    "NUTS on the privatised model (means to 3 digits)"
)
def varying_intercepts(fp):
    rng, x, _ = _regression_data("varying_intercepts")
    g = rng.integers(0, 3, N)
    y = np.clip(np.linspace(-1, 1, 3)[g] + x @ [0.5, -0.3] + rng.normal(0, 0.3, N), -3, 3)
    with pm.Model() as m:
        index = pm.Data("g", g)
        x_obs = pmp.PrivateData("X", x, bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y", y, bounds=(-3.0, 3.0))
        alpha = pmp.TruncatedNormal("alpha", 0.0, 1.0, lower=-2.0, upper=2.0, shape=3)
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=2.0)
        pm.Normal("obs", alpha[index] + x_obs @ w, 0.3, observed=y_obs)
    displays(fp, m, delta=DELTA)
    private = privatized(fp, m, seed=261, epsilon=3.0, delta=DELTA)

    nuts(fp, private, seed=262)
    ledger(fp, m)


@model(
    "Normal mean with a pm.Potential on mu: privatize (noise-aware), pmp.sample falls back "
    "to NUTS (NUTSFallbackWarning; means to 3 digits)"
)
def potential_fallback(fp):
    z = np.clip(data_rng("potential_fallback").normal(-0.3, 1.0, N), -3, 3)
    with pm.Model() as m:
        z_obs = pmp.PrivateData("z_obs", z, bounds=(-3.0, 3.0))
        mu = pmp.TruncatedNormal("mu", 0.0, 1.0, lower=-2.0, upper=2.0)
        pm.Normal("z", mu, 1.0, observed=z_obs)
        pm.Potential("pull", -(mu**2))
    displays(fp, m)
    private = privatized(fp, m, seed=301, epsilon=EPSILON)
    nuts(fp, private, seed=302)
    ledger(fp, m)


@model(
    "Grouped (HMM-like) release: Categorical per (region, month) group by a public index, "
    "privatize plug-in (6 groups cost what 1 group does), one posterior sample (OPS)"
)
def grouped_release(fp):
    rng = data_rng("grouped_release")
    groups, features, k = 6, 2, 3
    group = np.repeat(np.arange(groups), rng.poisson(12, groups) + 1)
    records = rng.integers(0, k, (group.size, features))

    def saturated(index, n_groups, values):
        with pm.Model() as m:
            g = pm.Data("g", index)
            for f in range(features):
                x = pmp.PrivateData(f"x{f}", values[:, f], bounds=(0, k - 1))
                p = pmp.TruncatedDirichlet(f"p{f}", np.ones(k), min_prob=0.02, shape=(n_groups, k))
                pm.Categorical(f"event{f}", p[g], observed=x)
        return m

    other = rng.integers(0, k, records.shape)  # other records (own ledger) for one group
    for n_groups, index, values in ((groups, group, records), (1, np.zeros_like(group), other)):
        sub = fp.setdefault(f"{n_groups} group(s)", {})
        m = saturated(index, n_groups, values)
        displays(sub, m)
        privatized(sub, m, seed=271 + n_groups, epsilon=EPSILON, noise_aware=False)
        if n_groups == groups:
            section(
                sub,
                "sample_posterior (OPS)",
                lambda m=m: pmp.sample_posterior(
                    m, 1, temperature=30.0, secure=False, random_seed=279
                ),
                lambda i: idata_fingerprint(i, draws=10, moments=None),
            )
        ledger(sub, m)


@model("AR(1) as a regression on the lagged value: slicing refusal, privatize at delta, numpy")
def ar1(fp):
    rng = data_rng("ar1")
    series = np.zeros(N + 1)
    for t in range(1, N + 1):
        series[t] = 0.6 * series[t - 1] + rng.normal(0.0, 0.5)
    series = np.clip(series, -3.0, 3.0)

    def on_slices():
        with pm.Model() as refused:
            s_obs = pmp.PrivateData("s", series, bounds=(-3.0, 3.0))
            rho = pmp.TruncatedNormal("rho", 0.0, 0.5, lower=-0.99, upper=0.99)
            pm.Normal("s_next", rho * s_obs[:-1], 0.5, observed=s_obs[1:])
        return pmp.analyze(refused)

    text(fp, "slicing refusal", on_slices)
    with pm.Model() as m:
        s_prev = pmp.PrivateData("s_prev", series[:-1, None], bounds=(-3.0, 3.0))
        s_next = pmp.PrivateData("s_next", series[1:], bounds=(-3.0, 3.0))
        rho = pmp.TruncatedMvNormal("rho", np.zeros(1), np.eye(1), radius=0.99)
        pm.Normal("s", s_prev @ rho, 0.5, observed=s_next)
    displays(fp, m, delta=DELTA)
    private = privatized(fp, m, seed=281, epsilon=EPSILON, delta=DELTA)
    numpy_sampler(fp, private, seed=282, draws=100, tune=50, chains=2)
    ledger(fp, m)


@model(
    "Refusals of models without sufficient statistics (mixture, Student-t, ordinal logit "
    "with compute_p, zero-inflated Poisson, masked covariate): "
    "analyze/privatize messages; NormalMixture on clipped PrivateMetropolis"
)
def refusals(fp):
    rng = data_rng("refusals")
    x = rng.uniform(-1.0, 1.0, (N, 2))
    v = np.clip(rng.normal(0.0, 1.5, N), -3, 3)

    def mixture():
        with pm.Model() as m:
            m_obs = pmp.PrivateData("m_obs", v, bounds=(-3.0, 3.0))
            weights = pmp.TruncatedDirichlet("weights", np.ones(2), min_prob=0.05)
            means = pmp.TruncatedNormal("means", 0.0, 1.0, lower=-2.0, upper=2.0, shape=2)
            pm.NormalMixture("m", w=weights, mu=means, sigma=1.0, observed=m_obs)
        return m

    def student():
        yt = np.clip(x @ [0.5, -0.3] + 0.3 * rng.standard_t(4, N), -2.0, 2.0)
        with pm.Model() as m:
            x_obs = pmp.PrivateData("X", x, bounds=(-1.0, 1.0))
            y_obs = pmp.PrivateData("y", yt, bounds=(-2.0, 2.0))
            w = pmp.TruncatedNormal("w", 0.0, 1.0, lower=-2.0, upper=2.0, shape=2)
            pm.StudentT("obs", nu=4, mu=x_obs @ w, sigma=0.3, observed=y_obs)
        return pmp.analyze(m)

    def ordinal():
        grades = np.digitize(x @ [1.0, -1.0] + rng.logistic(size=N), [-0.7, 0.7])
        with pm.Model() as m:
            x_obs = pmp.PrivateData("X", x + 0.0, bounds=(-1.0, 1.0))
            grade_obs = pmp.PrivateData("grade", grades, bounds=(0, 2))
            w = pmp.TruncatedNormal("w", 0.0, 1.0, lower=-2.0, upper=2.0, shape=2)
            ordered = pm.distributions.transforms.ordered
            cutpoints = pm.Normal("cutpoints", [-1.0, 1.0], 1.0, transform=ordered)
            pm.OrderedLogistic("g", eta=x_obs @ w, cutpoints=cutpoints, observed=grade_obs)
        return pmp.analyze(m)

    def zero_inflated():
        visits = np.minimum(rng.poisson(2.0, N) * rng.binomial(1, 0.7, N), 10)
        with pm.Model() as m:
            visits_obs = pmp.PrivateData("visits", visits, bounds=(0, 10))
            psi = pmp.TruncatedBeta("psi", 1, 1, lower=0.05, upper=0.95)
            mu = pmp.TruncatedGamma("mu", 2.0, 1.0, lower=0.5, upper=5.0)
            pm.ZeroInflatedPoisson("v", psi=psi, mu=mu, observed=visits_obs)
        return pmp.analyze(m)

    def masked():
        with pm.Model():
            pmp.PrivateData(
                "X", np.ma.masked_array(x, mask=rng.random(x.shape) < 0.05), bounds=(-1, 1)
            )

    text(fp, "mixture analyze", lambda: pmp.analyze(mixture()))
    text(fp, "student-t analyze", student)
    text(fp, "ordinal analyze", ordinal)
    text(fp, "zero-inflated analyze", zero_inflated)
    text(fp, "masked covariate", masked)
    mix = section(fp, "mixture model", mixture, lambda _: "built")
    if mix is not None:
        per_draw(
            fp,
            mix,
            key="mixture PrivateMetropolis clip",
            step=lambda: pmp.PrivateMetropolis(clip=2.0, temperature=10.0, secure=False),
            seed=291,
            draws=6,
            chains=1,
        )
        ledger(fp, mix)


# ---------------------------------------------------------------------------------------
# Running and diffing
# ---------------------------------------------------------------------------------------


def environment() -> dict:
    import importlib

    versions = {"python": sys.version.split()[0]}
    for name in ("pymc_private", "pymc", "pytensor", "arviz", "numpy", "scipy", "xarray"):
        try:
            versions[name] = importlib.import_module(name).__version__
        except Exception as error:
            versions[name] = error_text(error)
    return versions


def fingerprint(names: list[str] | None) -> dict:
    logging.getLogger("pymc").setLevel(logging.ERROR)
    logging.getLogger("pytensor").setLevel(logging.ERROR)
    models = {}
    start = time.perf_counter()
    for name, description, build in MODELS:
        if names and name not in names:
            continue
        began = time.perf_counter()
        fp: dict = {"description": description}
        found: list[str] = []
        try:
            with package_warnings(found):
                build(fp)
        except Exception as error:
            fp["error"] = error_text(error)
        if found:
            fp["warnings outside sections"] = found
        models[name] = fp
        print(f"{name}: {time.perf_counter() - began:.1f} s", file=sys.stderr)
    print(f"total: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return {"format": FORMAT, "environment": environment(), "models": models}


def flatten(value, path: str = "") -> dict:
    """Every leaf of a JSON value by its path (``a.b[3]``)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(flatten(item, f"{path}.{key}" if path else str(key)))
        return out or {path: {}}
    if isinstance(value, list):
        out = {}
        for i, item in enumerate(value):
            out.update(flatten(item, f"{path}[{i}]"))
        return out or {path: []}
    return {path: value}


def diff(first: str, second: str, limit: int = 400) -> int:
    """Print the paths whose values differ between two fingerprint files; 1 if any (the
    environment aside), else 0."""
    with open(first, encoding="utf-8") as f:
        a = flatten(json.load(f))
    with open(second, encoding="utf-8") as f:
        b = flatten(json.load(f))
    keys = list(a) + [k for k in b if k not in a]  # file order: lists in index order
    changed = [k for k in keys if a.get(k, "<absent>") != b.get(k, "<absent>")]
    environment_keys = [k for k in changed if k.startswith("environment.")]
    changed = [k for k in changed if not k.startswith("environment.")]
    by_model: dict[str, list[str]] = {}
    for key in changed:
        model_name = key.split(".")[1] if key.startswith("models.") else "(top level)"
        by_model.setdefault(model_name, []).append(key)
    shown = 0
    for model_name, keys in by_model.items():
        print(f"== {model_name}: {len(keys)} differing key(s)")
        for key in keys:
            if shown < limit:
                print(f"  {key}\n    {first}: {a.get(key, '<absent>')!r}")
                print(f"    {second}: {b.get(key, '<absent>')!r}")
            shown += 1
    if shown > limit:
        print(f"... {shown - limit} more differing key(s) not shown")
    if environment_keys:
        print("== environment (expected to differ across stacks; not counted)")
        for key in environment_keys:
            print(f"  {key}: {a.get(key, '<absent>')!r} -> {b.get(key, '<absent>')!r}")
    print(f"{len(changed)} differing key(s) in {len(by_model)} model(s)")
    return 1 if changed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the fingerprint to this file (default: stdout)")
    parser.add_argument("--models", help="comma-separated model names (default: all)")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    parser.add_argument("--diff", nargs=2, metavar=("A", "B"), help="diff two fingerprints")
    args = parser.parse_args(argv)
    if args.diff:
        return diff(*args.diff)
    if args.list:
        for name, description, _ in MODELS:
            print(f"{name}: {description}")
        return 0
    names = args.models.split(",") if args.models else None
    result = json.dumps(fingerprint(names), indent=1, sort_keys=True, ensure_ascii=False)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(result + "\n")
    else:
        print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
