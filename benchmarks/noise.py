"""Cost per element of secure (OpenDP) versus numpy noise.

Run: ``python benchmarks/noise.py``. Prints microseconds per noised element for `laplace` and
`discrete_laplace` on 10, 1 000 and 100 000 elements, secure and ``secure=False``, measured in
this one run (best of a few repeats; the first secure call, which builds and caches the OpenDP
measurement, is excluded).
"""

from __future__ import annotations

import time

import numpy as np

from pymc_private.dp.mechanisms import discrete_laplace, laplace

SIZES = (10, 1_000, 100_000)


def microseconds_per_element(mechanism, values, *, secure: bool, repeats: int) -> float:
    rng = np.random.default_rng(0)
    mechanism(values[:1], 1, 1.0, rng=rng, secure=secure)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        mechanism(values, 1, 1.0, rng=rng, secure=secure)
        best = min(best, time.perf_counter() - start)
    return best / values.size * 1e6


def main() -> None:
    print(f"{'mechanism':<18}{'elements':>10}{'secure µs/el':>15}{'numpy µs/el':>14}{'ratio':>9}")
    for mechanism, dtype in ((laplace, np.float64), (discrete_laplace, np.int64)):
        for size in SIZES:
            values = np.arange(size).astype(dtype)
            repeats = 3 if size == SIZES[-1] else 20
            secure = microseconds_per_element(mechanism, values, secure=True, repeats=repeats)
            insecure = microseconds_per_element(mechanism, values, secure=False, repeats=repeats)
            print(
                f"{mechanism.__name__:<18}{size:>10}{secure:>15.3f}{insecure:>14.4f}"
                f"{secure / insecure:>9.0f}"
            )


if __name__ == "__main__":
    main()
