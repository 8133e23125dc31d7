"""privatize at scale: against a hand-written numpy pass, its memory, and from parquet via Dask.

Run: ``python benchmarks/scale.py`` (needs the ``[dask]`` extra; about 10 minutes and
~3 GB of disk for the Dask part on a 2-core machine; ``--skip-dask`` for the numpy part).

For naive Bayes with d = 10 binary features and n = 10⁵, 10⁶, 10⁷ records it prints, from
one run:

- the time to declare the data (`pmp.PrivateData`: checks and the data set's digest) and
  to build the model;
- the time of ``pmp.privatize(model, 1.0)`` (the one pass over the records for every
  statistic, the noise and the privatised model), against a hand-written numpy pass for the
  same counts (the faster of ``np.bincount`` per feature and ``np.count_nonzero`` per
  class), and their ratio (target ≤ 1.5 at 10⁷);
- peak memory during ``privatize`` as a multiple of the data the model holds: (data +
  the most Python allocated beyond it, measured by `tracemalloc`, which sees numpy's
  buffers, in a second release of the same model) / data (target ≤ 1.5).

Then the default posterior, ``pmp.sample`` on the privatised model, for naive Bayes (released
counts: exact data augmentation of the latent counts) and a Poisson rate (a released sum) at
each n: CPU seconds, peak memory (`tracemalloc`, a second run) and the smallest bulk ESS per
CPU second.

Then it writes n = 10⁸ records to ten parquet files (int8 columns), reads them with
``dask.dataframe.read_parquet`` and times the declaration (a pass that checks and hashes
every chunk), ``privatize`` (a pass that checks every chunk again and reduces it to the
statistics) and the default posterior, on Dask's threaded scheduler, with the process's peak
resident memory.

Measured (2 cores shared with other jobs, one run, ``--skip-dask``, 2026-11-29), the default
posterior against n:

==============  ==========  =====  ========  ===========
model           n           CPU s  peak MiB  ESS / CPU s
==============  ==========  =====  ========  ===========
naive Bayes     100,000     8.6    6         78
naive Bayes     1,000,000   9.9    4         75
naive Bayes     10,000,000  7.8    4         100
Poisson rate    100,000     0.0    0         92936
Poisson rate    1,000,000   0.0    0         91806
Poisson rate    10,000,000  0.0    0         106989
==============  ==========  =====  ========  ===========

The Dask run at n = 10⁸ (ten parquet files): declared in 29.0 s, privatised in 14.2 s, the
default posterior (data augmentation of counts) in 13.7 CPU s, peak resident memory 2.92 GiB.

Before (issue 38): naive Bayes 19.7 s and 252 MiB at 10⁵, 55 s and 2.8 GB at 10⁶, killed at
11.6 GB at 10⁷; then 15, 38 and 112 MiB once each variant had its own window. The latent
counts' windows are now evaluated a few rows at a time when they are wide (a proposal whose
binomial bulk lies off the release spreads as √n) and log(x!) is tabled up to 2¹⁷ only, so
memory no longer grows with n; a far proposal's window still costs time in √n, which the
sampler's CPU time does not show.
"""

from __future__ import annotations

import argparse
import logging
import resource
import shutil
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

import pymc_private as pmp
from pymc_private.examples.demo import naive_bayes_model

FEATURES = 10
SIZES = (100_000, 1_000_000, 10_000_000)
DASK_SIZE = 100_000_000
FILES = 10


def records(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n, dtype=np.int8)
    rates = np.where(labels[:, None] == 1, 0.7, 0.3)
    features = (rng.random((n, FEATURES), dtype=np.float32) < rates).astype(np.int8)
    return labels, features


def numpy_pass(labels: np.ndarray, features: np.ndarray) -> float:
    """The same counts by hand, the faster of two ways: one ``np.bincount`` per feature of
    (label, value), or ``np.count_nonzero`` of each class's rows."""
    start = time.perf_counter()
    np.bincount(labels, minlength=2)
    index = labels.astype(np.int64) * 2
    for j in range(FEATURES):
        np.bincount(index + features[:, j], minlength=4)
    by_feature = time.perf_counter() - start
    start = time.perf_counter()
    ones = labels == 1
    np.count_nonzero(ones)
    np.count_nonzero(features[ones], axis=0)
    np.count_nonzero(features[~ones], axis=0)
    by_class = time.perf_counter() - start
    return min(by_feature, by_class)


def in_memory(n: int) -> None:
    labels, features = records(n, seed=n % 1000)
    start = time.perf_counter()
    model = naive_bayes_model(labels, features, a=0.05)
    build = time.perf_counter() - start
    held = sum(v.get_value(borrow=True).nbytes for v in model.data_vars)
    start = time.perf_counter()
    pmp.privatize(model, 1.0)
    seconds = time.perf_counter() - start
    tracemalloc.start()  # slows Python down: a second release, for its memory only
    pmp.privatize(model, 1.0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    reference = numpy_pass(labels, features)
    print(
        f"{n:>12,}{build:>10.2f}{seconds:>12.2f}{reference:>10.2f}{seconds / reference:>8.2f}"
        f"{held / 2**20:>11.0f}{(held + peak) / held:>9.2f}"
    )


def poisson_rate_model(n: int, seed: int) -> pm.Model:
    """A Poisson rate (TruncatedGamma prior) of n counts on [0, 8]: a released sum."""
    counts = np.minimum(np.random.default_rng(seed).poisson(2.5, n), 8).astype(np.int8)
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", counts, bounds=(0, 8))
        lam = pmp.TruncatedGamma("lam", 2.0, 1.0, lower=0.5, upper=6.0)
        pm.Poisson("y", lam, observed=y_obs)
    return model


def posterior_cost(name: str, private: pm.Model) -> str:
    """CPU seconds, peak memory (`tracemalloc`, a second run) and the smallest bulk ESS per
    CPU second of the default ``pmp.sample`` on a privatised model, as a table row."""
    start = time.process_time()
    idata = pmp.sample(model=private, random_seed=2, progressbar=False)
    seconds = time.process_time() - start
    tracemalloc.start()
    pmp.sample(model=private, random_seed=2, progressbar=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ess = az.ess(idata.posterior.to_dataset())
    worst = min(float(ess[v].min()) for v in ess.data_vars)
    return f"{name:>14}{seconds:>10.1f}{peak / 2**20:>10.0f}{worst / seconds:>14.0f}"


def posteriors() -> None:
    """The default posterior of naive Bayes (released counts: data augmentation of the
    latent counts) and of a Poisson rate (a released sum) against n, privatised at ε = 1."""
    print("\npmp.sample on the privatised model (defaults), against n")
    print(f"{'model':>14}{'n':>12}{'CPU s':>10}{'peak MiB':>10}{'ESS / CPU s':>14}")
    for n in SIZES:
        labels, features = records(n, seed=n % 1000)
        bayes = pmp.privatize(naive_bayes_model(labels, features, a=0.05), 1.0, random_seed=1)
        del labels, features
        row = posterior_cost("naive Bayes", bayes)
        print(row[:14] + f"{n:>12,}" + row[14:])
        rate = pmp.privatize(poisson_rate_model(n, seed=n % 1000), 1.0, random_seed=1)
        row = posterior_cost("Poisson rate", rate)
        print(row[:14] + f"{n:>12,}" + row[14:])


def from_parquet(folder: Path) -> None:
    import dask
    import dask.dataframe as dd
    import pandas as pd

    start = time.perf_counter()
    per_file = DASK_SIZE // FILES
    for i in range(FILES):
        labels, features = records(per_file, seed=1000 + i)
        frame = pd.DataFrame({"y": labels, **{f"x{j}": features[:, j] for j in range(FEATURES)}})
        frame.to_parquet(folder / f"part-{i:02d}.parquet")
    written = time.perf_counter() - start
    size = sum(p.stat().st_size for p in folder.iterdir()) / 2**20
    print(f"\nDask: n = {DASK_SIZE:,} records in {FILES} parquet files ({size:.0f} MiB on disk)")
    print(f"  write the files: {written:.1f} s")
    with dask.config.set(scheduler="threads"):
        table = dd.read_parquet(str(folder / "*.parquet"))
        start = time.perf_counter()
        model = naive_bayes_model(table["y"], table[[f"x{j}" for j in range(FEATURES)]], a=0.05)
        declared = time.perf_counter() - start
        start = time.perf_counter()
        private = pmp.privatize(model, 1.0)
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB → GiB
    start = time.process_time()
    idata = pmp.sample(model=private, random_seed=2, progressbar=False)
    posterior = time.process_time() - start
    counts = pmp.privatised_statistics(private)["counts(y_obs)"]
    print(f"  declare (check and hash every chunk): {declared:.1f} s")
    print(f"  privatize (check again, statistics, noise): {seconds:.1f} s")
    print(f"  pmp.sample (the default posterior, {idata.attrs['sampler']}): {posterior:.1f} CPU s")
    print(f"  peak resident memory of the process: {peak:.2f} GiB (the machine has 24 GiB)")
    print(f"  privatised count of class 1: {int(counts[0]):,} (≈ {DASK_SIZE // 2:,})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-dask", action="store_true")
    arguments = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    print(f"privatize on naive Bayes (d = {FEATURES}) against a numpy pass of the same counts")
    print(
        f"{'n':>12}{'build s':>10}{'privatize s':>12}{'numpy s':>10}{'ratio':>8}"
        f"{'data MiB':>11}{'peak ×':>9}"
    )
    pmp.privatize(naive_bayes_model(*records(100, seed=0), a=0.05), 1.0)  # first-call costs
    for n in SIZES:
        in_memory(n)
    posteriors()
    if not arguments.skip_dask:
        folder = Path(tempfile.mkdtemp(prefix="pmp-scale-"))
        try:
            from_parquet(folder)
        finally:
            shutil.rmtree(folder)


if __name__ == "__main__":
    main()
