"""The synthesizer contract battery: :func:`check_synthesizer` (as scikit-learn ships
``sklearn.utils.estimator_checks.check_estimator``).

Every synthesizer promises the same things whatever its model: its parameters are
stored unchanged and declared once; an unfitted synthesizer says "call fit"; ``fit(df)``
then ``sample(m, random_state)`` gives a :class:`~synthmi.synthetic.SyntheticData` of
``m`` copies with the released columns in the input's order and dtypes; the same seed
gives identical copies and another seed other copies; the input frame is never
modified; bad input gets one error naming the parameter or column; the copies are never
the original (the release guard); a pickle holds no confidential record unless asked;
``save``/``load`` give the same copies; and a differentially private fit looks the same
on a neighbouring data set apart from its noised content. Each promise is one named
check below (``check_...``); a new method runs them all with one call::

    from synthmi.testing import check_synthesizer
    check_synthesizer(MySynthesizer(n_iter=50))

Each check is small and seeded (one fit shared by the checks that only read it), so the
battery on a fast synthesizer (CART) takes a few seconds. ``checks=`` runs a subset
and ``skip={name: reason}`` leaves checks out with the reason recorded in the report:
nothing is left out silently.

Layer: orchestration (it fits and samples models and reads the privacy flags); only
the tests import it.
"""
from __future__ import annotations

import copy as _copy
import pickle
import re
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from .._validate import NotFittedError, param_error
from ..models.base import UNMODIFIED_MAX, Synthesizer, UnmodifiedRelease, unmodified_share
from ..synthetic import SyntheticData
from .neighbour import Case, assert_alike, remove_record, run_python

__all__ = ["CHECKS", "CheckReport", "CheckResult", "SynthesizerCheckFailed", "check_synthesizer",
           "contract_data", "contract_fit_params"]

#: the contract data's public declaration (what a DP fit reads instead of the data)
_BOUNDS = {"x": [-50.0, 50.0], "z": [-10.0, 10.0]}
_LEVELS = {"c": ["a", "b", "d"], "k": ["no", "yes"]}


def contract_data(n: int = 120, seed: int = 0) -> pd.DataFrame:
    """The battery's small mixed data set.

    A continuous quasi-identifier ``x`` whose values are distinctive (unique, non-round
    reals: a pickle holding them is found byte for byte), a categorical QI ``c``
    related to ``x``, and kept columns ``z`` (continuous, correlated with ``x``) and
    ``k`` (binary Categorical). Every value lies inside the declared public bounds of
    :func:`contract_fit_params` (``|x| < 50`` has probability > 1 - 1e-20 here).
    """
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    x = 3.0 * z + rng.normal(size=n) * 5.0 + rng.uniform(0, 1e-6, n)  # unique, non-round reals
    c = np.where(x + rng.normal(size=n) * 3 > 0, "a", np.where(rng.random(n) < 0.5, "b", "d"))
    k = rng.random(n) < 0.4
    return pd.DataFrame({
        "x": x,
        "c": pd.Categorical(c, categories=_LEVELS["c"]),
        "z": np.clip(z, *_BOUNDS["z"]),
        "k": pd.Categorical(np.where(k, "yes", "no"), categories=_LEVELS["k"]),
    })


def contract_fit_params(synth: Synthesizer) -> dict[str, Any]:
    """``fit`` keyword arguments for :func:`contract_data`: the quasi-identifiers ``x, c``
    (the rest kept) or, for a differentially private synthesizer, a release spec whose
    levels and bounds are all declared public (a DP fit reads none from the data)."""
    if not getattr(synth, "differentially_private", False):
        return {"quasi_identifiers": ["x", "c"]}
    columns = {
        "x": {"role": "quasi_identifier", "kind": "continuous", "declared": True, "bounds": _BOUNDS["x"]},
        "c": {"role": "quasi_identifier", "kind": "nominal", "declared": True, "levels": _LEVELS["c"]},
        "z": {"role": "keep", "kind": "continuous", "declared": True, "bounds": _BOUNDS["z"]},
        "k": {"role": "keep", "kind": "binary", "declared": True, "levels": _LEVELS["k"]},
    }
    return {"spec": {"synthmi_spec": 1, "source": "synthmi.testing contract data", "columns": columns}}


# ---------------------------------------------------------------------------- results
@dataclass
class CheckResult:
    """One check's outcome: ``status`` is "passed", "failed", "skipped" (asked for, with the
    caller's reason) or "not applicable" (the promise does not apply to this synthesizer,
    with the reason)."""

    name: str
    status: str
    message: str = ""


@dataclass
class CheckReport:
    """Every check's outcome for one synthesizer."""

    synthesizer: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def passed(self) -> bool:
        return not self.failed

    def status(self, name: str) -> str:
        """The status of the check called ``name``."""
        return next(r.status for r in self.results if r.name == name)

    def __str__(self) -> str:
        lines = [f"Contract checks of {self.synthesizer}:"]
        for r in self.results:
            lines.append(f"  {r.status:>14}  {r.name}" + (f": {r.message}" if r.message else ""))
        return "\n".join(lines)


class SynthesizerCheckFailed(AssertionError):
    """Raised by :func:`check_synthesizer` when a check fails; ``report`` holds every outcome."""

    def __init__(self, report: CheckReport):
        self.report = report
        names = ", ".join(r.name for r in report.failed)
        super().__init__(f"{report.synthesizer} fails {len(report.failed)} contract check(s): {names}\n{report}")


class _NotApplicable(Exception):
    """Raised by a check whose promise does not apply to the synthesizer (the reason is kept)."""


# ---------------------------------------------------------------------------- the battery's state
class _Battery:
    """What the checks share: the unfitted template, the data, one lazily fitted copy."""

    def __init__(self, synth: Synthesizer, data: pd.DataFrame, fit_params: Mapping[str, Any], m: int,
                 random_state: int, workdir: Path):
        self.template = synth
        self._data = data
        self.fit_params = dict(fit_params)
        self.m = m
        self.seed = random_state
        self.workdir = workdir
        self._fitted: Synthesizer | None = None
        self._fit_error: BaseException | None = None

    @property
    def name(self) -> str:
        return type(self.template).__name__

    @property
    def dp(self) -> bool:
        return bool(getattr(self.template, "differentially_private", False))

    def data(self) -> pd.DataFrame:
        """A fresh deep copy of the data (a check may not see another check's changes)."""
        return self._data.copy(deep=True)

    def make(self) -> Synthesizer:
        """A new unfitted synthesizer with the template's parameters (scikit-learn's clone)."""
        from sklearn.base import clone

        return clone(self.template)

    def fit(self, df: pd.DataFrame | None = None) -> Synthesizer:
        return self.make().fit(self.data() if df is None else df, **self.fit_params)

    def fitted(self) -> Synthesizer:
        """The one shared fit (checks that fit or change a synthesizer fit their own)."""
        if self._fit_error is not None:
            raise AssertionError(f"fit failed on the contract data: {self._fit_error!r}")
        if self._fitted is None:
            try:
                self._fitted = self.fit()
            except Exception as exc:
                self._fit_error = exc
                raise AssertionError(f"fit failed on the contract data: {exc!r}") from exc
        return self._fitted

    def released(self, synth: Synthesizer) -> list[str]:
        return list(synth.spec_.released)

    def synthesized(self, synth: Synthesizer) -> list[str]:
        """The columns the copies synthesize (all released ones for a fully synthetic method)."""
        return list(synth.spec_.released if synth.fully_synthetic else synth.spec_.quasi_identifiers)


def _same_copies(a: SyntheticData, b: SyntheticData, what: str) -> None:
    assert a.m == b.m, f"{what}: {a.m} copies vs {b.m}"
    for i, (x, y) in enumerate(zip(a.copies, b.copies)):
        try:
            pd.testing.assert_frame_equal(x, y)
        except AssertionError as exc:
            raise AssertionError(f"{what}: copy {i + 1} differs ({str(exc).splitlines()[0]})") from None


def _raises(call: Callable[[], Any], kind: type[BaseException] | tuple, pattern: str, what: str) -> str:
    """Assert ``call()`` raises ``kind`` with a message matching ``pattern``; return the message."""
    try:
        call()
    except kind as exc:
        text = str(exc)
        assert re.search(pattern, text), f"{what}: the error does not say {pattern!r}: {text[:300]!r}"
        return text
    except Exception as exc:  # the wrong kind of error is a failure of its own
        raise AssertionError(f"{what}: expected {getattr(kind, '__name__', kind)}, got "
                             f"{type(exc).__name__}: {str(exc)[:300]}") from None
    raise AssertionError(f"{what}: no error was raised")


# ---------------------------------------------------------------------------- the checks
def check_params_stored(b: _Battery) -> None:
    """``__init__`` stores each parameter unchanged (a given value: the very object, as
    scikit-learn's ``clone`` requires; a default: as the signature writes it) and declares it
    once as data (``_parameter_constraints``); clone and ``set_params`` round-trip; an unknown
    name is refused."""
    import inspect

    from sklearn.base import clone

    cls = type(b.template)
    given = b.template.get_params(deep=False)
    declared = sorted(getattr(cls, "_parameter_constraints", {}))
    assert sorted(given) == declared, (
        f"get_params() names {sorted(given)} but _parameter_constraints declares {declared}")
    # the given values, passed again, come back as the very objects passed
    rebuilt = cls(**given).get_params(deep=False)
    changed = [k for k, v in given.items() if rebuilt[k] is not v]
    assert not changed, f"__init__ does not store {changed} as given (it converts or validates them)"
    # the defaults, stored as the signature writes them (1 stays the int 1)
    sig = inspect.signature(cls.__init__).parameters
    required = {k: given[k] for k, p in sig.items() if k in given and p.default is inspect.Parameter.empty}
    fresh = cls(**required).get_params(deep=False)
    for k, p in sig.items():
        if k in given and p.default is not inspect.Parameter.empty:
            got = fresh[k]
            assert got is p.default or (type(got) is type(p.default) and _hash(got) == _hash(p.default)), (
                f"parameter {k!r} is stored as {got!r}, its default is {p.default!r}")
    est = b.make()
    twin = clone(est)
    assert type(twin) is type(est) and twin is not est, "clone() does not give a new synthesizer of the same class"
    assert _hash(twin.get_params(deep=False)) == _hash(given), "clone() changes a parameter"
    if given:
        first = sorted(given)[0]
        assert twin.set_params(**{first: given[first]}) is twin, "set_params does not return the synthesizer"
    _raises(lambda: twin.set_params(nope=1), ValueError, "Invalid parameter 'nope'", "set_params(nope=1)")


def check_unfitted(b: _Battery) -> None:
    """An unfitted synthesizer (and the clone of a fitted one) refuses ``sample`` saying to call fit."""
    from sklearn.base import clone

    for what, est in (("unfitted", b.make()), ("clone of a fitted one", clone(b.fitted()))):
        _raises(lambda: est.sample(1), NotFittedError, r"(?i)call 'fit'", f"sample() on an {what} synthesizer"
                if what == "unfitted" else f"sample() on the {what}")


def check_sample_output(b: _Battery) -> None:
    """``fit(df)`` then ``sample(m, random_state)`` returns SyntheticData of ``m`` copies holding the
    released columns in the input's order, with the input's dtypes (a DP fit: the declared ones,
    the same in every copy), and for partial synthesis the input's rows and kept values."""
    df = b.data()
    synth = b.fitted()
    out = synth.sample(b.m, random_state=b.seed)
    assert isinstance(out, SyntheticData), f"sample() returned {type(out).__name__}, not SyntheticData"
    assert out.m == b.m and len(out.copies) == b.m, f"sample({b.m}) gave {out.m} copies"
    released = [c for c in df.columns if c in b.released(synth)]
    for i, cp in enumerate(out.copies):
        assert isinstance(cp, pd.DataFrame), f"copy {i + 1} is a {type(cp).__name__}"
        assert list(cp.columns) == released, f"copy {i + 1} has columns {list(cp.columns)}, released {released}"
        if b.dp:
            assert cp.dtypes.equals(out.copies[0].dtypes), f"copy {i + 1} has other dtypes than copy 1"
        else:
            bad = {c: (str(cp[c].dtype), str(df[c].dtype)) for c in released if cp[c].dtype != df[c].dtype}
            assert not bad, f"copy {i + 1}: dtypes differ from the input's (copy, input): {bad}"
        if not synth.fully_synthetic:
            assert len(cp) == len(df), f"copy {i + 1} has {len(cp)} rows, the input {len(df)}"
            for c in (c for c in released if c not in b.synthesized(synth)):
                # (counts only: a failure message never shows the data's values)
                kept, orig = cp[c].reset_index(drop=True), df[c].reset_index(drop=True)
                if not kept.equals(orig):
                    differ = int((kept.astype(object) != orig.astype(object)).sum())
                    raise AssertionError(f"kept column {c!r} of copy {i + 1} is not the input's ({differ} records differ)")
    _raises(lambda: synth.sample(0), ValueError, r"The 'm' parameter", "sample(0)")


def check_same_seed(b: _Battery) -> None:
    """The same ``random_state`` gives identical copies: twice from one fit, and from a second fit."""
    a = b.fitted().sample(b.m, random_state=b.seed)
    _same_copies(a, b.fitted().sample(b.m, random_state=b.seed), "the same fit sampled twice with one seed")
    _same_copies(a, b.fit().sample(b.m, random_state=b.seed), "a second fit sampled with the same seed")


def check_different_seeds(b: _Battery) -> None:
    """Another ``random_state`` gives other copies (the seed is used), and the copies of one call differ."""
    a = b.fitted().sample(b.m, random_state=b.seed)
    c = b.fitted().sample(b.m, random_state=b.seed + 1)
    assert not all(x.equals(y) for x, y in zip(a.copies, c.copies)), (
        f"random_state={b.seed} and {b.seed + 1} give identical copies: the seed is ignored")
    if b.m > 1:
        assert not a.copies[0].equals(a.copies[1]), "the copies of one sample() call are identical"


def check_input_not_mutated(b: _Battery) -> None:
    """``fit`` and ``sample`` leave the input frame and the parameters unchanged."""
    est = b.make()
    hashes = {k: _hash(v) for k, v in est.get_params(deep=False).items()}
    df = b.data()
    snapshot = df.copy(deep=True)
    est.fit(df, **b.fit_params).sample(b.m, random_state=b.seed)
    try:
        pd.testing.assert_frame_equal(df, snapshot)
    except AssertionError as exc:
        raise AssertionError(f"fit/sample modified the input frame: {str(exc).splitlines()[0]}") from None
    changed = [k for k, v in est.get_params(deep=False).items() if _hash(v) != hashes.get(k)]
    assert not changed, f"fit changed the parameter(s) {changed} (fitted state belongs in attributes ending in '_')"


def _hash(v: Any) -> str:
    import joblib

    return joblib.hash(v)


def check_bad_input(b: _Battery) -> None:
    """Bad input gets one error naming what is wrong: a non-frame ('df'), a missing quasi-identifier
    column (its name), a parameter no constraint allows (the parameter and the class).

    The parameter part needs a declared constraint to break: a synthesizer whose
    ``_parameter_constraints`` is empty (or allows any object for every parameter) cannot
    fail it, so after the two data checks the check reports "not applicable" with the
    reason instead of a pass that proves nothing."""
    df = b.data()
    kw = b.fit_params
    _raises(lambda: b.make().fit(df.to_numpy(), **kw), TypeError, r"'df' parameter must be a pandas DataFrame",
            "fit(an array)")
    missing = b.synthesized(b.fitted())[0]
    _raises(lambda: b.make().fit(df.drop(columns=missing), **kw), ValueError, rf"not in 'df'.*{re.escape(missing)}",
            f"fit(data without column {missing!r})")
    tried = 0
    for p, allowed in getattr(type(b.template), "_parameter_constraints", {}).items():
        if "object" in allowed:
            continue
        bad = b.make().set_params(**{p: object()})
        _raises(lambda: bad.fit(b.data(), **kw), ValueError,
                rf"The '{re.escape(p)}' parameter of {b.name} must be", f"{b.name}({p}=object())")
        tried += 1
    if not tried:
        raise _NotApplicable(
            f"the data checks passed, but no bad parameter value could be tried: {b.name} declares no "
            "parameter constraints (_parameter_constraints is empty or allows any object), so nothing "
            "validates its parameters; declare each parameter's allowed forms there")


def check_bad_data(b: _Battery) -> None:
    """Data a model cannot learn from is refused naming the column: an all-missing column, a
    constant column, fewer rows than the model needs. (A DP fit refuses nothing on the data's
    content: that would publish it; :func:`check_dp_neighbour` checks it instead.)"""
    if b.dp:
        raise _NotApplicable("a differentially private fit may not refuse on the data's content "
                             "(check_dp_neighbour covers it)")
    kw = b.fit_params
    df = b.data()
    col = b.synthesized(b.fitted())[0]
    _raises(lambda: b.make().fit(df.assign(**{col: np.nan}), **kw), ValueError,
            rf"'{re.escape(col)}'.*entirely missing", f"fit with column {col!r} all missing")
    _raises(lambda: b.make().fit(df.assign(**{col: df[col].iloc[0]}), **kw), ValueError,
            rf"'{re.escape(col)}'.*constant", f"fit with column {col!r} constant")
    few = max(1, int(getattr(b.template, "min_rows", 10)) // 2)
    _raises(lambda: b.make().fit(df.iloc[:few], **kw), ValueError, r"at least \d+ rows", f"fit on {few} rows")


def check_not_the_original(b: _Battery) -> None:
    """The copies are never the original: the quasi-identifier keys of each copy agree with the
    original's beyond chance (Cohen's kappa) by at most ``UNMODIFIED_MAX`` and the release guard
    does not have to refuse them."""
    df = b.data()
    synth = b.fitted()
    try:
        out = synth.sample(b.m, random_state=b.seed)
    except UnmodifiedRelease as exc:
        raise AssertionError(f"the release guard refused the copies as the original: {str(exc)[:300]}") from None
    cols = [c for c in b.synthesized(synth) if c in df.columns]
    for i, cp in enumerate(out.copies):
        share, kappa = unmodified_share(df[cols], cp[cols], cols)
        assert kappa <= UNMODIFIED_MAX, (
            f"copy {i + 1} is the original: {share:.0%} of records keep their own {cols} key "
            f"(kappa {kappa:.2f} > {UNMODIFIED_MAX})")


def _row_windows(values: np.ndarray, width: int = 3) -> list[bytes]:
    """Byte patterns of ``width`` consecutive values in record order, as float64 (how an array or
    frame column holds them) and as text."""
    x = np.asarray(values, dtype=np.float64)
    out = [np.ascontiguousarray(x[i:i + width]).tobytes() for i in range(0, len(x) - width, 7)]
    return out + [repr(float(v)).encode() for v in x[:20]]


def check_pickle_round_trip(b: _Battery) -> None:
    """A pickle holds no confidential record unless asked (``retain_records()``); with them it gives
    the same copies for the same seed, without them the same copies or a clear refusal."""
    df = b.data()
    fitted = b.fitted()
    expected = fitted.sample(b.m, random_state=b.seed)
    back = pickle.loads(pickle.dumps(_copy.copy(fitted).retain_records()))
    _same_copies(back.sample(b.m, random_state=b.seed), expected, "unpickled with its records")
    blob = pickle.dumps(fitted)
    plain = pickle.loads(blob)
    if fitted._needs_records_to_sample():
        _raises(lambda: plain.sample(b.m, random_state=b.seed), ValueError, "without the original records",
                "sample() of a pickle without the records")
    else:
        _same_copies(plain.sample(b.m, random_state=b.seed), expected, "unpickled without its records")
    # the original's distinctive values: a numeric synthesized column with unique values
    cols = [c for c in b.synthesized(fitted) if pd.api.types.is_float_dtype(df[c]) and df[c].is_unique]
    if cols:
        windows = _row_windows(df[cols[0]].to_numpy())
        hits = [w for w in windows if w in blob]
        assert not hits, (
            f"the default pickle holds {len(hits)} run(s) of original values of {cols[0]!r}: name every fitted "
            "attribute holding original records in the class's _confidential_attributes (pickles and save() "
            "leave those out), and return True from _needs_records_to_sample() if sample() reads them")
        if "released_" in fitted.__dict__:
            # control: the search finds the values where the user asked for the records
            asked = pickle.dumps(_copy.copy(fitted).retain_records())
            assert any(w in asked for w in windows), (
                f"the byte search cannot see {cols[0]!r} even in a pickle with the records")


def check_save_load(b: _Battery) -> None:
    """``save`` then ``load`` gives the same copies for the same seed; ``save`` never overwrites
    unasked; a saved file changed afterwards is refused."""
    from ..models.persist import load

    fitted = b.fitted()
    expected = fitted.sample(b.m, random_state=b.seed)
    needs = fitted._needs_records_to_sample()
    target = b.workdir / "saved"
    if needs:
        _raises(lambda: fitted.save(target), ValueError, "include_records=True",
                "save() of a sampler that needs its records")
    path = fitted.save(target, include_records=needs)
    _raises(lambda: fitted.save(target, include_records=needs), FileExistsError, "overwrite=True",
            "save() over an existing model")
    loaded = load(path)
    assert type(loaded) is type(fitted), f"load() gave a {type(loaded).__name__}"
    _same_copies(loaded.sample(b.m, random_state=b.seed), expected, "the loaded synthesizer")
    assert type(fitted).load(path)._published_params() == fitted._published_params(), \
        "the loaded synthesizer publishes other parameters"
    spec = Path(path) / "spec.json"
    if spec.exists():
        spec.write_text("{}")
        _raises(lambda: load(path), ValueError, "changed since it was saved", "load() of a changed file")


#: metadata keys of a DP release that are noise (functions of the noisy measurements only)
DP_NOISED_JSON = {"*metadata.json": ["diagnostics"], "model/manifest.json": ["sha256"]}


def check_dp_neighbour(b: _Battery, noised_json: Mapping[str, list[str]] | None = None) -> None:
    """A DP release on D and on D minus one record (the one holding a numeric column's maximum)
    looks the same apart from its noised content: error text, warnings, repr, file names,
    metadata.json beyond its noised keys, the saved spec, the copies' column order and dtypes,
    the published parameters and the fitted attributes' names (see :mod:`.neighbour`)."""
    if not b.dp:
        raise _NotApplicable("not differentially private")
    df = b.data()
    numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and df[c].notna().any()]
    at = int(np.nanargmax(df[numeric[0]].to_numpy(dtype=float))) if numeric else 0

    def release(data: pd.DataFrame, out: Path) -> str:
        import json

        model = b.make().fit(data, **b.fit_params)
        syn = model.sample(b.m, random_state=b.seed)
        syn.to_dir(out / "syn")
        model.save(out / "model")
        view = {
            "attributes": sorted(model.__dict__),
            "params": {k: repr(v) for k, v in model._published_params().items()},
            "spec": model.spec_.public_view() if hasattr(model.spec_, "public_view") else repr(model.spec_),
            "dtypes": [[c, str(t)] for c, t in syn.copies[0].dtypes.items()],
            "categories": {c: [str(x) for x in t.categories] for c, t in syn.copies[0].dtypes.items()
                           if isinstance(t, pd.CategoricalDtype)},
            "seed": syn.seed, "quasi_identifiers": syn.quasi_identifiers, "rule": syn.rule,
        }
        (out / "public_view.json").write_text(json.dumps(view, default=str, sort_keys=True))
        return repr(model)

    case = Case(f"{b.name} (python)", None, release, remove_record(at),
                noised_json=dict(noised_json or getattr(b, "dp_noised_json", None) or DP_NOISED_JSON),
                data_files="*copy_*.csv", noised_files=("model/synthesizer.pkl",))
    a = run_python(case, df, b.workdir / "D")
    c = run_python(case, case.neighbour(df), b.workdir / "D_prime")
    assert a.returncode == 0, f"the release on D failed: {a.stderr[:300]}"
    assert_alike(a, c, case)


#: the checks, in the order they run: name -> function(battery)
CHECKS: dict[str, Callable[[_Battery], None]] = {f.__name__: f for f in (
    check_params_stored, check_unfitted, check_sample_output, check_same_seed, check_different_seeds,
    check_input_not_mutated, check_bad_input, check_bad_data, check_not_the_original,
    check_pickle_round_trip, check_save_load, check_dp_neighbour,
)}


def check_synthesizer(
    synth: Synthesizer | type[Synthesizer],
    data: pd.DataFrame | None = None,
    fit_params: Mapping[str, Any] | None = None,
    *,
    checks: Iterable[str] | None = None,
    skip: Mapping[str, str] | None = None,
    m: int = 2,
    random_state: int = 0,
    dp_noised_json: Mapping[str, list[str]] | None = None,
    raise_on_failure: bool = True,
) -> CheckReport:
    """Run the synthesizer contract battery (the checks in :data:`CHECKS`) on ``synth``.

    Parameters
    ----------
    synth : Synthesizer instance or class
        The synthesizer with the settings to check (a class is built with its defaults).
        Small settings keep the battery fast; the checks fit it several times.
    data : DataFrame, optional
        Data to fit; default :func:`contract_data` (120 rows, QIs ``x, c``, kept ``z, k``).
    fit_params : dict, optional
        ``fit`` keyword arguments; default :func:`contract_fit_params` (needs the default data).
    checks : list of str, optional
        Run only these checks (names in :data:`CHECKS`).
    skip : dict, optional
        Check name -> the reason it is left out (recorded in the report as "skipped").
    m, random_state : int
        Copies per ``sample`` call and the seed the checks use.
    dp_noised_json : dict, optional
        For ``check_dp_neighbour``: file name pattern -> dotted keys of the release's JSON
        files whose values are noise (default :data:`DP_NOISED_JSON`: all of
        metadata.json's ``diagnostics``; a method that names its noised diagnostics one by
        one gets the stricter comparison).
    raise_on_failure : bool
        Raise :class:`SynthesizerCheckFailed` (an ``AssertionError`` naming each failed check
        and why) if any check fails; otherwise only return the report.

    Returns
    -------
    CheckReport
        One :class:`CheckResult` per check: passed, failed (with the message), skipped
        (with the caller's reason) or not applicable (with the reason).
    """
    owner = "check_synthesizer"
    if isinstance(synth, type):
        synth = synth()
    if not isinstance(synth, Synthesizer):
        raise param_error("synth", owner, "a Synthesizer instance or class", synth)
    names = list(CHECKS) if checks is None else list(checks)
    skip = dict(skip or {})
    unknown = sorted(set(names) - set(CHECKS))
    if unknown:
        raise param_error("checks", owner, f"names from {sorted(CHECKS)}", unknown)
    unknown = sorted(set(skip) - set(CHECKS))
    if unknown:
        raise param_error("skip", owner, f"names from {sorted(CHECKS)}", unknown)
    silent = sorted(k for k, why in skip.items() if not isinstance(why, str) or not why.strip())
    if silent:
        raise param_error("skip", owner, "a mapping of check name -> the reason it is skipped (no silent skips)",
                          skip)
    if data is None:
        data = contract_data()
        if fit_params is None:
            fit_params = contract_fit_params(synth)
    if fit_params is None:
        fit_params = {}
    m = int(m)
    if m < 2:
        raise param_error("m", owner, ">= 2 (the checks compare copies of one call)", m)
    report = CheckReport(type(synth).__name__)
    with tempfile.TemporaryDirectory(prefix="synthmi-check-") as tmp:
        battery = _Battery(synth, data, fit_params, m, random_state, Path(tmp))
        battery.dp_noised_json = dp_noised_json
        for name in names:
            if name in skip:
                report.results.append(CheckResult(name, "skipped", skip[name]))
                continue
            workdir = battery.workdir / name
            workdir.mkdir()
            battery.workdir, root = workdir, battery.workdir
            try:
                CHECKS[name](battery)
            except _NotApplicable as exc:
                report.results.append(CheckResult(name, "not applicable", str(exc)))
            except AssertionError as exc:
                report.results.append(CheckResult(name, "failed", str(exc)))
            except Exception as exc:  # an unexpected error fails the check it happened in
                where = traceback.extract_tb(exc.__traceback__)[-1]
                report.results.append(CheckResult(
                    name, "failed", f"{type(exc).__name__}: {str(exc)[:400]} (at {Path(where.filename).name}:"
                                    f"{where.lineno})"))
            else:
                report.results.append(CheckResult(name, "passed"))
            finally:
                battery.workdir = root
    if raise_on_failure and not report.passed:
        raise SynthesizerCheckFailed(report)
    return report
