"""The package's exceptions: one root, structured fields, today's builtin bases.

Every error synthmi raises on purpose derives from :class:`SynthmiError`, so a
caller can catch the package's refusals in one clause; each subclass also keeps
the builtin base the code raised before (``ValueError``, ``TypeError``,
``RuntimeError``, ``FileExistsError``, ``FileNotFoundError``), so ``except ValueError`` and ``pytest.raises(ValueError)``
keep working.

An error about a parameter carries what a front end needs to restate it in its
own terms, without parsing the text: the parameter's library name, who owns
it, what was expected and a *description* of what was got. The command line
(:mod:`synthmi.cli`) maps ``parameter`` to its option from a table.

Messages and fields never hold values *from the data* (they may be
confidential): they name parameters, columns and counts, and echo only values
the caller passed.

Layer 0 (base): imports nothing from the package.
"""
from __future__ import annotations

from typing import Any


class SynthmiError(Exception):
    """Root of every error synthmi raises on purpose.

    An error about a parameter or a data argument may be built from a
    ``template`` with the placeholders ``{parameter}`` (rendered "'name'
    parameter of Owner") and ``{data}`` (rendered "'df'"), so a front end can
    restate it in its own terms (:meth:`restated`) from the fields, without
    parsing the text.
    """

    #: True when the text is written for people and the command line should print it
    #: without the class name (a ValueError/TypeError always is); a RuntimeError-like
    #: error keeps its class name on the command line unless its class sets this
    user_message = False

    def __init__(self, message: str = "", *, parameter: str | None = None, owner: str | None = None,
                 data: str | None = None, template: str | None = None):
        # (a subclass may have set a field before calling this: keep it)
        for field, value in (("parameter", parameter), ("owner", owner), ("data", data), ("template", template)):
            if value is not None or not hasattr(self, field):
                setattr(self, field, value)
        if template is not None:
            message = self._render(None, None)
        super().__init__(message)

    def _parameter_phrase(self) -> str:
        if self.owner:
            return f"'{self.parameter}' parameter of {self.owner}"
        return f"'{self.parameter}' parameter"

    def _render(self, parameter: str | None, data: str | None) -> str:
        assert self.template is not None
        return self.template.format(
            parameter=parameter if parameter is not None else self._parameter_phrase(),
            data=data if data is not None else f"'{self.data}'",
        )

    def restated(self, parameter: str | None = None, data: str | None = None) -> str:
        """The message with the parameter called ``parameter`` (e.g. "'--qi' option")
        and the data argument called ``data`` (e.g. "the data"); ``None`` keeps the
        library's wording.

        An error built from a ``template`` is rendered again; one built from text whose
        fields say which parameter phrase ("The 'name' parameter of Owner") and data
        name ("in 'df'") it uses has exactly those phrases replaced.
        """
        if self.template is not None:
            return self._render(parameter, data)
        text = str(self)
        if parameter is not None and self.parameter:
            for lead in ("The ", "the "):
                text = _replace_phrase(text, f"{lead}'{self.parameter}' parameter", f"{lead}{parameter}")
        if data is not None and self.data:
            for lead in ("in ", "of "):
                text = text.replace(f"{lead}'{self.data}'", f"{lead}{data}")
                text = _replace_word(text, f"{lead}{self.data}", f"{lead}{data}")
        return text


def _replace_phrase(text: str, phrase: str, new: str) -> str:
    """``text`` with each ``phrase`` ("The 'rules' parameter"), and the " of Owner" that may
    follow it, replaced by ``new``; a phrase followed by " (--param" (already in
    command-line terms) is kept."""
    out, i = [], 0
    while (j := text.find(phrase, i)) != -1:
        k = j + len(phrase)
        if text.startswith(" (--param", k):
            out.append(text[i:k])
            i = k
            continue
        if text.startswith(" of ", k):
            m = k + 4
            while m < len(text) and (text[m].isalnum() or text[m] in "_."):
                m += 1
            while m > k + 4 and text[m - 1] == ".":  # a sentence's full stop is not the owner's
                m -= 1
            if m > k + 4:
                k = m
        out.append(text[i:j] + new)
        i = k
    out.append(text[i:])
    return "".join(out)


def _replace_word(text: str, old: str, new: str) -> str:
    """``text`` with ``old`` replaced where it ends a word ("of df." but not "of dfs")."""
    out, i = [], 0
    while (j := text.find(old, i)) != -1:
        k = j + len(old)
        whole = (k == len(text) or not (text[k].isalnum() or text[k] == "_")) and (
            j == 0 or not (text[j - 1].isalnum() or text[j - 1] == "_"))
        out.append(text[i:j] + (new if whole else old))
        i = k
    out.append(text[i:])
    return "".join(out)


class _ExpectedGot(SynthmiError):
    """The ``expected`` / ``got`` fields shared by :class:`ParameterError` and
    :class:`InputTypeError` (what the argument must be, and a description of what was passed)."""

    def __init__(self, message: str = "", *, parameter: str | None = None, owner: str | None = None,
                 expected: str | None = None, got: str | None = None, data: str | None = None,
                 template: str | None = None):
        self.expected = expected
        self.got = got
        super().__init__(message, parameter=parameter, owner=owner, data=data, template=template)


class InputError(SynthmiError, ValueError):
    """An input is invalid (the generic ``ValueError`` of the package); the more
    specific :class:`ParameterError` and :class:`ColumnError` derive from it."""


class ParameterError(_ExpectedGot, InputError):
    """A parameter breaks its constraint.

    Attributes
    ----------
    parameter : str or None
        The parameter's name in the Python API (``"quasi_identifiers"``), which a
        front end maps to its own spelling (``--qi``).
    owner : str or None
        The function or class the parameter belongs to.
    expected : str or None
        What the parameter must be (``"> 0"``, ``"one of 'a', 'b'"``).
    got : str or None
        A description of what was passed (the repr of a value the caller passed,
        ``"3 copies"``), never a value read from the data.
    """

    @classmethod
    def build(cls, parameter: str, owner: str, expected: str, got: Any) -> "ParameterError":
        """The scikit-learn sentence: "The 'epsilon' parameter of LaplaceMechanism must
        be > 0. Got -1 instead." with the fields filled."""
        got_text = describe(got)
        return cls(
            parameter=parameter, owner=owner, expected=expected, got=got_text,
            template="The {parameter} must be " + _literal(expected) + ". Got " + _literal(got_text) + " instead.",
        )


def _is_data_like(value: Any) -> bool:
    """True for a frame, series, index, array or lazy (Dask) collection: objects whose
    repr prints their contents."""
    return (hasattr(value, "__dask_graph__") or hasattr(value, "__array__")
            or (hasattr(value, "shape") and hasattr(value, "dtype" if not hasattr(value, "columns") else "columns")))


def describe(value: Any) -> str:
    """What was passed, for an error's ``got``: the repr of a scalar, string or small
    container the caller wrote, but only the *type* (and size) of a frame, series,
    array or Dask collection, or of a container holding one, whose repr would print
    record values ("a Series of length 5", "a list of 3 items holding arrays")."""
    if isinstance(value, (str, bytes, bool, int, float, complex)) or value is None:
        return repr(value)
    if _is_data_like(value):
        name = type(value).__name__
        if getattr(value, "ndim", 0) == 0 and not hasattr(value, "__dask_graph__") and hasattr(value, "item"):
            return repr(value)  # a numpy scalar: a value the caller passed, like a float
        article = "an" if name[:1].lower() in "aeiou" else "a"
        shape = getattr(value, "shape", None)
        if hasattr(value, "__dask_graph__"):
            return f"a Dask {name}"
        if isinstance(shape, tuple) and len(shape) == 1:
            return f"{article} {name} of length {shape[0]}"
        if isinstance(shape, tuple):
            return f"{article} {name} of shape {shape}"
        return f"{article} {name}"
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        items = list(value.values()) if isinstance(value, dict) else list(value)
        if any(_is_data_like(v) and getattr(v, "ndim", 1) != 0 for v in items):
            return f"a {type(value).__name__} of {len(items)} items holding arrays or frames"
    return repr(value)


def _literal(text: str) -> str:
    """``text`` safe inside a ``str.format`` template."""
    return text.replace("{", "{{").replace("}", "}}")


class ColumnError(InputError):
    """A column is missing, duplicated, degenerate or of the wrong kind.

    Attributes
    ----------
    column : str, list or None
        The column(s) concerned (names only).
    problem : str or None
        What is wrong, in a few words (``"entirely missing"``).
    """

    def __init__(self, message: str = "", *, column: Any = None, problem: str | None = None,
                 parameter: str | None = None, owner: str | None = None, data: str | None = None,
                 template: str | None = None):
        self.column = column
        self.problem = problem
        super().__init__(message, parameter=parameter, owner=owner, data=data, template=template)


class InputTypeError(_ExpectedGot, TypeError):
    """An argument of the wrong type (a list where a DataFrame was needed)."""


class ReleaseRefused(SynthmiError, ValueError):
    """A release was refused, failing closed (nothing was written or returned)."""


class _PathError(SynthmiError):
    """An error about a file or directory the user named; the path is the user's own
    (never a value from the data), so message and field may show it.

    Attributes
    ----------
    path : str or None
        The file or directory concerned.
    parameter : str or None
        The Python parameter that named it (``"path"``, ``"directory"``), when known.
    option : str or None
        The command-line option that named it (``"--synthetic"``), when raised by a verb.
    """

    user_message = True

    def __init__(self, message: str = "", *, path: Any = None, parameter: str | None = None,
                 owner: str | None = None, option: str | None = None):
        self.path = None if path is None else str(path)
        self.option = option
        super().__init__(message, parameter=parameter, owner=owner)


class OutputExists(_PathError, FileExistsError):
    """An output file or directory already exists: synthmi never overwrites a path
    unless told to (``overwrite=True``)."""


class InputNotFound(_PathError, FileNotFoundError):
    """A file, directory or program the call needs does not exist."""


class DiagnosticsError(SynthmiError, RuntimeError):
    """A sampler's diagnostics or budget stopped the fit before anything was released."""


class ComputationError(SynthmiError, RuntimeError):
    """A computation failed (a worker process died, a solver gave up) or was asked for in
    a state where it cannot run."""


class NotFittedError(SynthmiError, ValueError, AttributeError):
    """Raised when ``sample`` (or similar) is called before ``fit``."""


__all__ = [
    "describe", "SynthmiError", "InputError", "ParameterError", "ColumnError", "InputTypeError", "ReleaseRefused",
    "DiagnosticsError", "ComputationError", "NotFittedError", "OutputExists", "InputNotFound",
]
