"""The ``privatelr`` command line."""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np


def _demo(args) -> int:
    """Fit R's manual example ``dplr(Species ~ ., iris)`` and print its summary."""
    from . import dplr
    from .datasets import load_iris

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = dplr("Species ~ .", load_iris(), random_state=args.seed)
    print('>>> dplr("Species ~ .", load_iris())   # R: dplr(Species ~ ., iris)\n')
    print(model)
    for w in caught:
        print(f"{w.category.__name__}: {w.message}", file=sys.stderr)
    return 0


class _InputError(ValueError):
    """Bad input detected by the command line itself (exit code 2)."""


def _format_line(coef, convergence: int) -> str:
    # repr() is the shortest string that reads back to the same double.
    return " ".join(repr(float(c)) for c in coef) + f" {int(convergence)}"


def _cms_simple(args, *, svm: bool) -> int:
    """``lrsimple`` / ``svmsimple``: the C programs' three lines from one C-format file.

    Line 1: the non-private minimiser of (1/n) sum l(y_i w'x_i) + (lambda/2)||w||^2; line 2:
    output perturbation; line 3: objective perturbation with the C variant
    (eps' = eps - 2 log(1 + c/(n lambda)), refused when eps' < 1e-4). All three through
    privatelr.erm.fit, no intercept added, data_norm = 1. One Generator built from --seed
    feeds the output-perturbation then the objective-perturbation noise.
    """
    from . import erm
    from .cformat import read_cformat
    from .mechanisms import check_random_state

    data = read_cformat(args.file, svm=svm)
    loss = "huber" if svm else "logistic"
    h = data.h if svm else 0.5
    common = dict(lambda_=data.lambda_, loss=loss, h=h, data_norm=1.0, solver=args.solver)
    rng = check_random_state(args.seed)
    # read_cformat already issued the PrivacyWarning for rows outside the unit ball.
    nonpriv = erm.fit(data.X, data.y, eps=0.0, **common)
    output = erm.fit(data.X, data.y, eps=data.eps, method="output", random_state=rng,
                     norm_check=False, **common)
    objective = erm.fit(data.X, data.y, eps=data.eps, method="objective", small_eps="error",
                        random_state=rng, norm_check=False, **common)
    lines = [_format_line(r.coef, r.convergence) for r in (nonpriv, output, objective)]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _lrsimple(args) -> int:
    return _cms_simple(args, svm=False)


def _svmsimple(args) -> int:
    return _cms_simple(args, svm=True)


def _add_cms_parser(sub, name: str, svm: bool) -> None:
    kind = "Huber SVM" if svm else "logistic regression"
    header = "n d lambda eps_p h" if svm else "n d lambda eps_p"
    p = sub.add_parser(
        name, help=f"the C program {name}: private L2-regularised {kind} on a C-format file",
        description=(
            f"Fit L2-regularised {kind} to a file in the format of Chaudhuri, Sarwate and "
            f"Monteleoni's {name}.c ({header}, then n rows of d features, then n labels -1/1; "
            "rows must have norm <= 1) and print three lines: the non-private classifier, "
            "output perturbation, objective perturbation; each d numbers and the solver's "
            "convergence code (0 = converged). Objective perturbation uses the C variant: "
            "eps' = eps_p - 2 log(1 + c/(n lambda)), an error if eps' < 1e-4. No intercept is "
            "added (include a constant feature yourself)."),
        epilog=f"example: privatelr {name} $(python -c \"import privatelr.datasets as d; "
               f"print(d.data_path('example_{'svm' if svm else 'lr'}.txt'))\") --seed 1")
    p.add_argument("file", help="input file in the C programs' ASCII format")
    p.add_argument("--seed", type=int, default=None,
                   help="random seed for the noise (default: OS entropy)")
    p.add_argument("--solver", choices=["auto", "newton", "lbfgs"], default="auto",
                   help="optimiser (default: auto; the C programs used L-BFGS)")
    p.set_defaults(func=_svmsimple if svm else _lrsimple)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(f"privatelr: {category.__name__}: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="privatelr",
                                     description="Differentially private logistic regression.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit the iris example and print its summary")
    demo.add_argument("--seed", type=int, default=None, help="random seed (default: OS entropy)")
    demo.set_defaults(func=_demo)
    _add_cms_parser(sub, "lrsimple", svm=False)
    _add_cms_parser(sub, "svmsimple", svm=True)
    return parser


def main(argv=None) -> int:
    """Run the command line; return the exit code (0 ok, 2 bad input, 1 internal error).

    Bad input (``ValueError``, ``TypeError``, ``OSError`` such as a missing file) prints one
    line ``privatelr <command>: error: <message>`` on stderr, no traceback. Warnings (e.g.
    :class:`~privatelr.PrivacyWarning`) are printed as one line each on stderr. Set the
    environment variable ``PRIVATELR_DEBUG=1`` to see tracebacks.
    """
    import os

    parser = build_parser()
    args = parser.parse_args(argv)
    debug = bool(os.environ.get("PRIVATELR_DEBUG"))
    prog = f"privatelr {args.command}"
    with warnings.catch_warnings():
        if not debug:
            warnings.showwarning = _show_warning
        try:
            return int(args.func(args) or 0)
        except BrokenPipeError:  # e.g. `privatelr predict ... | head`: not an error
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # no second error when flushing at exit
            return 0
        except (ValueError, TypeError, OSError) as exc:
            if debug:
                raise
            msg = " ".join(str(exc).split()) or type(exc).__name__
            if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
                msg = f"{exc.strerror}: {exc.filename}"
            sys.stderr.write(f"{prog}: error: {msg}\n")
            return 2
        except KeyboardInterrupt:
            sys.stderr.write(f"{prog}: interrupted\n")
            return 130
        except Exception as exc:  # a bug: say so, exit 1
            if debug:
                raise
            msg = " ".join(str(exc).split())
            sys.stderr.write(f"{prog}: internal error: {type(exc).__name__}: {msg} "
                             "(set PRIVATELR_DEBUG=1 for a traceback; please report it)\n")
            return 1


if __name__ == "__main__":
    sys.exit(main())
