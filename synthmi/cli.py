"""The ``synthmi`` command line.

Each verb lives in its own module under :mod:`synthmi.commands` and exposes
``register(subparsers)``; the module's parser sets ``func(args) -> int``.
Errors print as one line (``synthmi: error: ...``) unless ``--debug`` is given
(before or after the verb).
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands

EPILOG = """examples:
  synthmi demo --out synthmi-demo
  synthmi synthesize --data adult --qi age,sex,race,education --method dami --m 20 --out syn/
  synthmi utility --original adult --synthetic syn/
  synthmi analyse --original adult --synthetic syn/ --formula "income ~ age + sex + race + education"
  synthmi disclosure --original adult --synthetic syn/ --qi age,sex,race,education --tol age=1 --out risk.json
  synthmi subgroups --data adult --qi age,sex,race,education --k0 5 --tol age=1 --out subgroups.json
  synthmi report --original adult --synthetic syn/ --qi age,sex,race,education \\
      --analysis "income ~ age + sex + race + education" --family probit --out report.html
  synthmi dp sigma --eps 1 --delta 1e-5 --marginals 91
run 'synthmi VERB --help' for a verb's options and examples;
add --debug to see a full traceback when something fails."""


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (its default prints the usage block first)."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _verb_modules():
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            yield info.name


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="synthmi",
        description="Bayesian multiple-imputation synthetic data: synthesis, utility, disclosure risk, DP.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", title="verbs")
    for name in _verb_modules():
        module = importlib.import_module(f"{commands.__name__}.{name}")
        module.register(sub)
    # `synthmi VERB ... --debug` works too; SUPPRESS keeps `synthmi --debug VERB` intact.
    for verb_parser in sub.choices.values():
        if not any("--debug" in a.option_strings for a in verb_parser._actions):
            verb_parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                     help="show full tracebacks on errors")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("synthmi: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line for people; --debug for developers
        if getattr(args, "debug", False):
            raise
        msg = " ".join(str(exc).split()) or type(exc).__name__
        if not isinstance(exc, (ValueError, TypeError, FileNotFoundError, KeyError)):
            msg = f"{type(exc).__name__}: {msg}"
        print(f"synthmi: error: {msg} (run with --debug for a traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
