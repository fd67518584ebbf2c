"""The ``synthmi`` command line.

Each verb lives in its own module under :mod:`synthmi.commands` and exposes
``register(subparsers)``; the module's parser sets ``func(args) -> int``.
Errors print as one line (``synthmi: error: ...``) unless ``--debug`` is given.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands

EPILOG = """examples:
  synthmi synthesize --data adult --qi age,sex,race,education --method dami --m 20 --out syn/
  synthmi utility --original adult --synthetic syn/
  synthmi analyse --original adult --synthetic syn/ --formula "income ~ age + sex + race + education"
  synthmi disclosure --original adult --synthetic syn/ --qi age,sex,race,education --out risk.json
  synthmi report --original adult --synthetic syn/ --qi age,sex,race,education --out report.html
run 'synthmi VERB --help' for a verb's options and examples."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="synthmi",
        description="Bayesian multiple-imputation synthetic data: synthesis, utility, disclosure risk, DP.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileNotFoundError, KeyError) as exc:
        if args.debug:
            raise
        print(f"synthmi: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
