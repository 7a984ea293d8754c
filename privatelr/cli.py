"""The ``privatelr`` command line."""

from __future__ import annotations

import argparse
import sys

import numpy as np


def _demo(args) -> int:
    from . import erm
    from .datasets import load_iris

    iris = load_iris()
    X = iris.iloc[:, :4].to_numpy()
    # Public bound: scale covariates into the unit ball, then add the intercept column.
    X = X / np.sqrt((X * X).sum(axis=1)).max()
    X = np.c_[np.ones(len(X)), X]
    y = (iris["Species"] != "setosa").to_numpy()
    res = erm.fit(X, y, lambda_=0.0325069441551098, eps=1.0, data_norm=np.sqrt(2.0),
                  random_state=args.seed)
    print("Engine fit on iris (Species != setosa), eps = 1, objective perturbation")
    for name, c in zip(["(Intercept)", *iris.columns[:4]], res.coef):
        print(f"  {name:<14} {c: .6f}")
    print(f"status: {res.status}; eps_eff: {res.eps_eff:.4g}; lambda: {res.lambda_:.4g}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="privatelr",
                                     description="Differentially private logistic regression.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit the iris example and print its summary")
    demo.add_argument("--seed", type=int, default=None, help="random seed (default: OS entropy)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
