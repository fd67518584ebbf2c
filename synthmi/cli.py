"""The ``synthmi`` command line.

Each verb lives in its own module under :mod:`synthmi.commands` and exposes
``register(subparsers)``; the module's parser sets ``func(args) -> int``.
Errors print as one line (``synthmi VERB: error: ...``, the form of argparse's usage
errors, whether the options were refused by the parser or the values by the verb)
unless ``--debug`` is given (before or after the verb).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import sys
import warnings

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


#: Python parameter names whose command-line option is spelt differently
#: (a name not listed maps to ``--name-with-dashes`` when the verb has that option)
OPTION_OF_PARAMETER = {
    "tolerance": "--tol",
    "target_tolerance": "--target-tol",
    "quasi_identifiers": "--qi",
    "transforms": "--transform",
    "masks": "--mask",
    "rules": "--rule",
    "random_state": "--seed",
    "epsilon": "--eps",
}
#: names of the data frame argument of the Python functions; on the command line it is the
#: file the verb read
DATA_ARGUMENTS = ("df", "original")


def _verb_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser | None:
    """The parser of the (sub-)verb that ran, e.g. ``dp audit``'s."""
    found = None
    while True:
        # (a stand-in parser without argparse internals: no rewriting)
        sub = next((a for a in getattr(parser, "_actions", ()) if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None:
            return found
        parser = sub.choices.get(getattr(args, sub.dest, None) or "")
        if parser is None:
            return found
        found = parser


def option_of(parameter: str | None, verb_parser: argparse.ArgumentParser | None,
              given_as_param: set[str] = frozenset()) -> str | None:
    """The command-line option of a library parameter (``quasi_identifiers`` -> ``--qi``,
    from :data:`OPTION_OF_PARAMETER`, else ``--name-with-dashes``), or ``None`` when the verb
    has no such option or the user gave the parameter with ``--param NAME=VALUE`` (then its
    name is what the user typed)."""
    if verb_parser is None or not parameter or parameter in given_as_param:
        return None
    flag = OPTION_OF_PARAMETER.get(parameter, "--" + parameter.replace("_", "-"))
    options = {o for a in getattr(verb_parser, "_actions", ()) for o in a.option_strings}
    return flag if flag in options else None


def cli_message(exc: BaseException, verb_parser: argparse.ArgumentParser | None,
                given_as_param: set[str] = frozenset()) -> str:
    """An error in command-line terms, from its structured fields
    (:class:`synthmi.errors.SynthmiError`): "The 'tolerance' parameter of risk_subgroups
    must be >= 0" -> "The '--tol' option must be >= 0"; "not in 'df'" -> "not in the data".

    Only a parameter the verb has an option for is restated (see :func:`option_of`); an
    error without fields (a library outside synthmi) keeps its text. A synthesizer class
    named in the text becomes the ``--method`` a user typed.
    """
    from .errors import SynthmiError

    if isinstance(exc, SynthmiError):
        flag = option_of(exc.parameter, verb_parser, given_as_param)
        data = "the data" if verb_parser is not None and exc.data in DATA_ARGUMENTS else None
        text = exc.restated(f"'{flag}' option" if flag else None, data)
    else:
        text = str(exc)
    text = " ".join(text.split()) or type(exc).__name__
    if verb_parser is None:
        return text
    # a synthesizer class is the --method a user typed
    from .commands.synthesize import method_terms

    return method_terms(text)


def _prog(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The program name of the verb that ran (``synthmi synthesize``, ``synthmi dp audit``): the prefix
    argparse gives that verb's usage errors, so its runtime errors carry the same one."""
    verb_parser = _verb_parser(parser, args)
    if verb_parser is not None:
        return verb_parser.prog
    verb = getattr(args, "verb", None)  # a stand-in parser without argparse internals
    return f"synthmi {verb}" if verb else "synthmi"


def _warning_line(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """``warnings.showwarning`` for the command line: one line per warning, ``synthmi VERB:
    warning: ...`` in command-line terms, never the Python file and source line (those
    are for ``--debug``, which keeps Python's own form)."""
    verb = getattr(args, "verb", None) or "synthmi"

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = " ".join(str(message).split()) or category.__name__
        if _verb_parser(parser, args) is not None:
            # warnings are text: only the synthesizer class becomes the --method typed
            from .commands.synthesize import method_terms

            text = method_terms(text)
        print(f"synthmi {verb}: warning: {text}", file=sys.stderr, flush=True)

    return show


#: thread-count variables of the BLAS / OpenMP libraries under numpy, statsmodels and PyTensor
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def _one_blas_thread():
    """One BLAS/OpenMP thread per process while a verb runs, unless the user set one of
    ``_THREAD_VARIABLES``.

    The models' linear algebra is many small matrices; threaded BLAS only oversubscribes the
    cores, worse beside the sampler's processes (issue 30: ``analyse`` of two logit models over
    5 copies, three processes on 2 cores, took 46 s with default threads, 2-8 s with one).
    The variables are read when a library loads and are inherited by the sampler's worker
    processes; threadpoolctl limits a library already loaded (a caller that imported numpy).
    Both are restored afterwards.
    """
    if any(os.environ.get(v) for v in _THREAD_VARIABLES):
        yield
        return
    saved = {v: os.environ.get(v) for v in _THREAD_VARIABLES}
    os.environ.update({v: "1" for v in _THREAD_VARIABLES})
    try:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            yield
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old


def main(argv: list[str] | None = None) -> int:
    """Run the command line (``argv`` without the program name); returns the exit code."""
    with _one_blas_thread():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with warnings.catch_warnings():
            if not getattr(args, "debug", False):
                warnings.showwarning = _warning_line(parser, args)
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{_prog(parser, args)}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line for people; --debug for developers
        if getattr(args, "debug", False):
            raise
        given = {item.split("=", 1)[0].strip() for item in (getattr(args, "param", None) or [])}
        msg = cli_message(exc, _verb_parser(parser, args), given)
        if not isinstance(exc, (ValueError, TypeError, FileNotFoundError, KeyError)) and not getattr(
                type(exc), "user_message", False):
            msg = f"{type(exc).__name__}: {msg}"
        print(f"{_prog(parser, args)}: error: {msg} (run with --debug for a traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
