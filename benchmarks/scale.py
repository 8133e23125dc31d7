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

Then it writes n = 10⁸ records to ten parquet files (int8 columns), reads them with
``dask.dataframe.read_parquet`` and times the declaration (a pass that checks and hashes
every chunk) and ``privatize`` (a pass that checks every chunk again and reduces it to the
statistics), on Dask's threaded scheduler, with the process's peak resident memory.
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

import numpy as np

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
    counts = pmp.privatised_statistics(private)["counts(y_obs)"]
    print(f"  declare (check and hash every chunk): {declared:.1f} s")
    print(f"  privatize (check again, statistics, noise): {seconds:.1f} s")
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
    if not arguments.skip_dask:
        folder = Path(tempfile.mkdtemp(prefix="pmp-scale-"))
        try:
            from_parquet(folder)
        finally:
            shutil.rmtree(folder)


if __name__ == "__main__":
    main()
