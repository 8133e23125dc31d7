"""Command line: ``python -m pymc_private demo``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

FULL = {"draws": 500, "tune": 200, "chains": 2, "seeds": 6, "n_features": 5}
QUICK = {"draws": 100, "tune": 20, "chains": 1, "seeds": 2, "n_features": 5}


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m pymc_private`` argument parser (one subcommand: ``demo``)."""
    parser = argparse.ArgumentParser(
        prog="python -m pymc_private",
        description="pymc-private: differentially private posterior sampling for PyMC models.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="private naive Bayes on the breast cancer data: utility against ε",
        description=(
            "Bernoulli naive Bayes on scikit-learn's breast cancer data: the privacy analysis, "
            "privatised fits at ε = 0.1, 1, 10 against the non-private fit, the privacy "
            "report, a posterior summary and a PNG of test accuracy against ε."
        ),
    )
    demo.add_argument("--draws", type=int, help="draws per chain (default 500, quick 100)")
    demo.add_argument("--tune", type=int, help="tuning iterations (default 200, quick 20)")
    demo.add_argument("--chains", type=int, help="chains per fit (default 2, quick 1)")
    demo.add_argument("--seeds", type=int, help="noise seeds per ε (default 6, quick 2)")
    demo.add_argument(
        "--features",
        type=int,
        dest="n_features",
        help="features kept, chosen on the public split (default 5, at most 30)",
    )
    demo.add_argument(
        "--out",
        default="demo_accuracy.png",
        help="where to save the accuracy plot (default ./demo_accuracy.png)",
    )
    demo.add_argument(
        "--quick",
        action="store_true",
        help="the quick defaults (for tests); options given explicitly still apply",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "demo":
        parser.print_help()
        return 0
    settings = dict(QUICK if args.quick else FULL)
    settings.update({k: getattr(args, k) for k in settings if getattr(args, k) is not None})
    for name, value in settings.items():
        least = 0 if name == "tune" else 1
        if value < least:
            option = "features" if name == "n_features" else name
            parser.error(f"--{option} must be an integer >= {least}, got {value}.")
    if settings["n_features"] > 30:
        parser.error(f"--features must be at most 30, got {settings['n_features']}.")

    from pymc_private.examples.demo import run

    run(out=args.out, **settings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
