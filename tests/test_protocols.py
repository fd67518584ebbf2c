"""Issue 27's protocols: one exception root with structured fields, one JSON converter,
one results protocol (``summary()`` table with text and HTML forms, ``to_frame()``,
JSON-safe ``to_dict()`` without record-level values)."""
from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import synthmi
from synthmi import _json
from synthmi._validate import check_columns_exist, check_copies, check_dataframe, check_scalar, param_error
from synthmi.errors import (
    ColumnError,
    ComputationError,
    DiagnosticsError,
    InputError,
    InputTypeError,
    NotFittedError,
    ParameterError,
    ReleaseRefused,
    SynthmiError,
)
from synthmi.results import Result, SummaryTable

PACKAGE = Path(synthmi.__file__).resolve().parent


# --------------------------------------------------------------------------- errors
def test_error_classes_keep_their_builtin_bases():
    assert issubclass(ParameterError, ValueError) and issubclass(ParameterError, SynthmiError)
    assert issubclass(ColumnError, ValueError) and issubclass(InputError, ValueError)
    assert issubclass(ReleaseRefused, ValueError)
    assert issubclass(InputTypeError, TypeError)
    assert issubclass(DiagnosticsError, RuntimeError) and issubclass(ComputationError, RuntimeError)
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    from synthmi._validate import NotFittedError as old_home
    from synthmi.diagnostics import DiagnosticsFailed, SamplerBudgetExceeded

    assert old_home is NotFittedError
    assert issubclass(DiagnosticsFailed, DiagnosticsError) and issubclass(SamplerBudgetExceeded, DiagnosticsError)


def test_param_error_fills_the_fields_and_keeps_the_sentence():
    with pytest.raises(ParameterError) as e:
        check_scalar(-1, "epsilon", "LaplaceMechanism", lower=0.0, lower_inclusive=False)
    err = e.value
    assert str(err) == "The 'epsilon' parameter of LaplaceMechanism must be > 0.0. Got -1 instead."
    assert (err.parameter, err.owner, err.expected, err.got) == ("epsilon", "LaplaceMechanism", "> 0.0", "-1")
    assert err.restated("'--eps' option") == "The '--eps' option must be > 0.0. Got -1 instead."
    # braces in what was passed are text, not template fields
    e2 = param_error("masks", "DAMISynthesizer", "a dict", "{age}")
    assert str(e2).endswith("Got '{age}' instead.") and e2.restated("'--mask' option").startswith("The '--mask' option")


def test_column_and_type_errors_name_the_column_not_the_values():
    df = pd.DataFrame({"age": [31.0, 47.0], "sex": ["F", "M"]})
    with pytest.raises(ColumnError) as e:
        check_columns_exist(df, ["age", "agee"], "quasi_identifiers", "df")
    err = e.value
    assert err.column == ["agee"] and err.parameter == "quasi_identifiers" and err.data == "df"
    assert str(err).startswith("The 'quasi_identifiers' parameter names columns not in 'df': ['agee'].")
    assert err.restated("'--qi' option", "the data").startswith("The '--qi' option names columns not in the data")
    assert "31" not in str(err) and "47" not in str(err)  # cell values never in the text
    with pytest.raises(InputTypeError) as t:
        check_dataframe([1, 2], "original")
    assert t.value.parameter == "original" and t.value.got == "list"
    with pytest.raises(ParameterError, match="at least 2 DataFrame"):
        check_copies([df], min_copies=2)


_BUILTIN = {"ValueError", "TypeError", "RuntimeError", "FileExistsError", "FileNotFoundError", "OSError",
            "IOError", "PermissionError", "IsADirectoryError", "NotADirectoryError", "KeyError"}

#: builtin raises the protocols themselves ask for, by (file, function, exception) -> why
PROTOCOL_RAISES = {
    ("synthmi/results.py", "_values", "KeyError"):
        "a result summary reads like a Mapping: its __getitem__ (through _values) raises KeyError, "
        "which dict-style callers (`in`, .get, pandas) expect",
}


def _builtin_raises(path: Path, allowed=PROTOCOL_RAISES) -> list[str]:
    tree = ast.parse(path.read_text())
    rel = path.relative_to(PACKAGE.parent).as_posix() if path.is_relative_to(PACKAGE.parent) else path.name
    out = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                if isinstance(exc, ast.Name) and exc.id in _BUILTIN and (rel, function, exc.id) not in allowed:
                    out.append(f"{rel}:{child.lineno} raise {exc.id} (in {function})")
            visit(child, function)

    visit(tree, "<module>")
    return out


def test_every_raise_is_a_synthmi_error():
    """Every error the package raises on purpose derives from SynthmiError (issue 27): no
    builtin ``raise ValueError(`` / ``TypeError(`` / ``RuntimeError(`` / ``FileExistsError(`` /
    ``FileNotFoundError(`` / ``OSError(`` / ``KeyError(`` in the source, except a protocol's
    own (``PROTOCOL_RAISES``, each with its reason). (Convert a file with the mechanical
    script named in the issue-27 notes; messages stay the same.)"""
    found = [hit for p in sorted(PACKAGE.rglob("*.py")) for hit in _builtin_raises(p)]
    assert not found, f"{len(found)} builtin raise sites, e.g.:\n" + "\n".join(found[:40])
    # the allow-list names raises that exist (a stale entry would hide nothing but mislead)
    for (file, function, exc) in PROTOCOL_RAISES:
        assert _builtin_raises(PACKAGE.parent / file, allowed={}) != [], (file, function, exc)


def test_the_raise_walker_catches_file_errors_and_honours_only_named_protocols(tmp_path):
    src = tmp_path / "mod.py"
    src.write_text("def save(p):\n    raise FileExistsError(p)\n"
                   "def load(p):\n    raise FileNotFoundError(p)\n"
                   "class M:\n    def __getitem__(self, k):\n        raise KeyError(k)\n"
                   "def other():\n    raise KeyError('x')\n")
    hits = _builtin_raises(src, allowed={("mod.py", "__getitem__", "KeyError"): "Mapping protocol"})
    assert hits == ["mod.py:2 raise FileExistsError (in save)", "mod.py:4 raise FileNotFoundError (in load)",
                    "mod.py:9 raise KeyError (in other)"]


def test_file_errors_are_synthmi_errors_and_keep_their_builtin_base(tmp_path):
    from synthmi.errors import InputNotFound, OutputExists
    from synthmi.spec import ReleaseSpec

    spec = ReleaseSpec.draft(pd.DataFrame({"a": [1.0, 2.0, 3.0]}))
    target = tmp_path / "spec.json"
    target.write_text("{}")
    with pytest.raises(OutputExists) as e:
        spec.save(target)
    assert isinstance(e.value, FileExistsError) and e.value.path == str(target) and e.value.parameter == "path"
    assert target.read_text() == "{}"  # nothing overwritten
    with pytest.raises(InputNotFound) as e:
        ReleaseSpec.load(tmp_path / "missing.json")
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, SynthmiError)
    assert str(e.value) == f"The spec file '{tmp_path / 'missing.json'}' does not exist."


# --------------------------------------------------------------------------- JSON
def test_jsonable_converts_every_kind_and_never_writes_nan():
    ts = pd.Timestamp("2024-05-01 12:00")
    value = {
        "nan": float("nan"), "inf": np.inf, "ninf": -np.float32(np.inf), "na": pd.NA, "nat": pd.NaT,
        "i": np.int64(3), "f": np.float32(0.5), "b": np.bool_(True), "arr": np.array([1.0, np.nan]),
        "set": {"b", "a"}, "path": Path("out") / "x.json", "ts": ts, 7: (1, 2),
        "series": pd.Series([1, np.nan], index=["a", "b"]),
        "frame": pd.DataFrame({"x": [1.0, np.nan]}),
    }
    out = _json.jsonable(value)
    assert out == {
        "nan": None, "inf": None, "ninf": None, "na": None, "nat": None, "i": 3, "f": 0.5, "b": True,
        "arr": [1.0, None], "set": ["a", "b"], "path": str(Path("out") / "x.json"), "ts": "2024-05-01T12:00:00",
        "7": [1, 2], "series": {"a": 1.0, "b": None}, "frame": [{"x": 1.0}, {"x": None}],
    }
    text = _json.dumps(value)
    assert _json.loads_strict(text) == out
    with pytest.raises(ValueError, match="NaN is not JSON"):
        _json.loads_strict('{"a": NaN}')


def _no_constant(token):
    raise AssertionError(f"non-JSON token {token}")


def test_metadata_json_writes_null_not_nan(tmp_path):
    """The converter metadata.json used kept float NaN, which json.dumps writes as the
    non-JSON token NaN (fails on the original code: json.loads(parse_constant=...) raises)."""
    from synthmi.synthetic import SyntheticData

    syn = SyntheticData([pd.DataFrame({"a": [1.0, 2.0]})], method="cart", params={"cp": float("nan")},
                        structure={"bound": np.float64("inf")})
    syn.to_dir(tmp_path / "syn")
    meta = json.loads((tmp_path / "syn" / "metadata.json").read_text(), parse_constant=_no_constant)
    assert meta["params"]["cp"] is None and meta["structure"]["bound"] is None


def test_every_json_file_a_cli_run_writes_is_strict_json(tmp_path, capsys):
    """synthesize, disclosure, subgroups, spec and dp write their JSON through synthmi._json:
    no NaN/Infinity token in any of them."""
    from synthmi.cli import main

    rng = np.random.default_rng(4)
    n = 120
    df = pd.DataFrame({"age": rng.integers(20, 70, n).astype(float), "sex": rng.choice(["F", "M"], n),
                       "y": rng.integers(0, 2, n)})
    src = tmp_path / "orig.csv"
    df.to_csv(src, index=False)
    o, syn = str(src), str(tmp_path / "syn")
    runs = [
        ["synthesize", "--data", o, "--qi", "age,sex", "--method", "cart", "--m", "2", "--seed", "1", "--out", syn],
        # one copy and exact matching on a continuous QI: no unique match, an undefined (NaN) false-match rate
        ["disclosure", "--original", o, "--synthetic", syn, "--qi", "age,sex", "--target", "y",
         "--out", str(tmp_path / "d.json")],
        ["subgroups", "--data", o, "--qi", "age,sex", "--k0", "3", "--out", str(tmp_path / "s.json")],
        ["spec", "--data", o, "--qi", "age,sex", "--out", str(tmp_path / "spec.json")],
        ["dp", "bayes", "--n", "50", "--k", "20", "--eps", "1", "--out", str(tmp_path / "dp.json")],
    ]
    for argv in runs:
        assert main([*argv, "--quiet"]) == 0, (argv, capsys.readouterr().err)
    files = sorted(tmp_path.rglob("*.json"))
    assert {f.name for f in files} >= {"metadata.json", "d.json", "s.json", "spec.json", "dp.json"}
    for f in files:
        json.loads(f.read_text(), parse_constant=_no_constant)


# --------------------------------------------------------------------------- results
def _frames(n: int = 150, seed: int = 0):
    rng = np.random.default_rng(seed)
    orig = pd.DataFrame({
        "age": rng.integers(20, 70, n).astype(float),
        "sex": pd.Categorical(rng.choice(["F", "M"], n)),
        "income": np.round(rng.gamma(2.0, 1000.0, n), 2) + 0.123,  # values easy to spot in output
        "y": rng.integers(0, 2, n),
    })
    copies = []
    for j in range(2):
        c = orig.sample(frac=1.0, random_state=j, replace=True).reset_index(drop=True)
        c["income"] = np.round(c["income"] * rng.uniform(0.8, 1.2, n), 2) + 0.456
        copies.append(c)
    return orig, copies


def _build(kind: str):
    orig, copies = _frames()
    if kind == "pmse":
        from synthmi.evaluation.pmse import pmse

        return pmse(orig, copies, random_state=0)
    if kind == "utility_tables":
        from synthmi.evaluation.pmse import utility_tables

        return utility_tables(orig, copies)
    if kind == "marginals":
        from synthmi.evaluation.marginals import marginal_tvd

        return marginal_tvd(orig, copies, columns=["age", "sex", "y"])
    if kind == "risk":
        from synthmi.evaluation.risk import reidentification_risk

        return reidentification_risk(orig, copies, ["age", "sex"], tolerance={"age": 1.0})
    if kind == "subgroups":
        from synthmi.evaluation.subgroups import risk_subgroups

        return risk_subgroups(orig, ["age", "sex"], k0=3, tolerance={"age": 1.0})
    if kind == "attribute":
        from synthmi.evaluation.attribute_disclosure import attribute_disclosure

        return attribute_disclosure(orig, copies, ["age", "sex"], "y", tolerance={"age": 1.0})
    if kind == "dcr":
        from synthmi.evaluation.dcr import distance_to_closest_record

        return distance_to_closest_record(orig, copies, sample=100, random_state=0)
    if kind == "combine":
        from synthmi.evaluation.combining import combine

        return combine(np.array([[1.0, 2.0], [1.2, 2.1]]), np.array([[0.1, 0.2], [0.1, 0.3]]), names=["a", "b"])
    if kind == "analysis":
        from synthmi.evaluation.analysis import analyse

        return analyse("income ~ age + sex", family="gaussian", original=orig, synthetic=copies)
    if kind == "coherence":
        from synthmi.evaluation.coherence import demographic_coherence

        big = pd.concat([orig] * 4, ignore_index=True)
        big["age"] = big["age"] + np.random.default_rng(1).normal(0, 1, len(big))

        return demographic_coherence(big, lens=["age"], target="y", subgroups=["sex"], release="raw",
                                     n_trials=2, gamma=20, random_state=0)
    if kind == "audit":
        from synthmi.privacy.audit import audit_privacy_loss

        return audit_privacy_loss("laplace", n=20, eps=1.0)
    if kind == "posterior":
        from synthmi.privacy.dp_bayes import PrivateBetaPosterior

        return PrivateBetaPosterior(epsilon=1.0, mechanism="laplace").fit(orig["y"].to_numpy()).sample(random_state=0)
    if kind == "membership":
        from synthmi.evaluation.membership import membership_inference

        return membership_inference(orig.iloc[:100], orig.iloc[100:], copies, attack="domias", random_state=0)
    if kind in ("singling_out", "linkability", "inference"):
        from synthmi.evaluation import inference_risk, linkability_risk, singling_out_risk

        control = _frames(seed=1)[0]
        if kind == "singling_out":
            return singling_out_risk(orig, copies, control, mode="multivariate", n_attacks=20, random_state=0)
        if kind == "linkability":
            return linkability_risk(orig, copies, control, aux_columns=(["age"], ["income", "sex"]), n_attacks=50,
                                    random_state=0)
        return inference_risk(orig, copies, control, secret="y", n_attacks=50, random_state=0)
    raise AssertionError(kind)


RESULT_KINDS = ["pmse", "utility_tables", "marginals", "risk", "subgroups", "attribute", "dcr", "combine", "analysis", "coherence", "audit",
                "posterior", "singling_out", "linkability", "inference", "membership"]


@pytest.mark.parametrize("kind", RESULT_KINDS)
def test_every_result_follows_the_protocol(kind):
    res = _build(kind)
    assert isinstance(res, Result)
    table = res.summary()
    assert isinstance(table, SummaryTable)
    text = str(table)
    assert text.strip() and (table.title in text)
    html_text = table.to_html()
    assert html_text.startswith("<div") and "<table" in html_text and res._repr_html_() == html_text
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) > 0
    d = res.to_dict()
    text_json = json.dumps(d, allow_nan=False)  # JSON-safe: no NaN, numpy or pandas object left
    assert json.loads(text_json) == d
    # no record-level values: no income (a continuous value of the original or a copy) appears
    orig, copies = _frames()
    cells = {f"{v:.2f}" for v in orig["income"]} | {f"{v:.2f}" for c in copies for v in c["income"]}
    leaked = [c for c in cells if c in text_json]
    assert not leaked, leaked[:5]
    # one shape: every result's dict has the summary at the same key, settings (where the
    # result has them) at "settings"
    assert isinstance(d.get("summary"), dict), sorted(d)
    if hasattr(res, "settings"):
        assert "settings" in d


@pytest.mark.parametrize("kind", ["risk", "attribute", "subgroups"])
def test_settings_reach_to_dict_as_strict_json(kind):
    """Settings holding numpy scalars, NaN or a tuple come out as strict JSON (the original
    risk / attribute to_dict passed them through: json.dumps raised on np.int64)."""
    res = _build(kind)
    res.settings = {**res.settings, "k": np.int64(3), "w": np.float64("nan"), "t": (np.float32(0.5), "a")}
    d = res.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text)["settings"]["k"] == 3 and d["settings"]["w"] is None and d["settings"]["t"] == [0.5, "a"]


@pytest.mark.parametrize("kind", ["risk", "attribute"])
def test_to_dict_leaves_out_groups_of_fewer_than_five_records(kind):
    """A level of ``by`` held by one record would publish that record's risk under its label:
    to_dict() omits by-group rows of < 5 original records and counts them (the object keeps them)."""
    from synthmi.evaluation.risk import MIN_GROUP_RECORDS

    orig, copies = _frames()
    group = pd.Series(np.where(np.arange(len(orig)) < 4, "grpRARE", np.where(np.arange(len(orig)) % 2, "a", "b")),
                      index=orig.index, name="g")
    group.iloc[4] = "grpSINGLE"
    if kind == "risk":
        from synthmi.evaluation.risk import reidentification_risk

        res = reidentification_risk(orig, copies, ["age", "sex"], tolerance={"age": 1.0}, by=group)
    else:
        from synthmi.evaluation.attribute_disclosure import attribute_disclosure

        res = attribute_disclosure(orig, copies, ["age", "sex"], "y", tolerance={"age": 1.0}, by=group)
    assert set(res.by_group.index) == {"a", "b", "grpRARE", "grpSINGLE"}  # the object keeps every group
    d = res.to_dict()
    assert MIN_GROUP_RECORDS == 5 and set(d["by_group"]) == {"a", "b"}
    assert all(row["n_records"] >= 5 for row in d["by_group"].values())
    assert d["by_group_omitted"]["n_groups"] == 2 and d["by_group_omitted"]["min_records"] == 5
    assert "grpRARE" not in json.dumps(d) and "grpSINGLE" not in json.dumps(d)


def test_utility_tables_result_holds_the_table():
    orig, copies = _frames()
    from synthmi.evaluation.pmse import utility_tables

    res = utility_tables(orig, copies, ways=[1])
    frame = res.to_frame()
    assert list(frame.columns) == ["variables", "way", "df", "pmse", "s_pmse", "s_pmse_copy_1", "s_pmse_copy_2"]
    assert frame.equals(res.table) and frame is not res.table  # a copy
    assert res.n_copies == 2 and res.ways == [1] and "S_pMSE of 4 tables over 2 copies" in str(res.summary())
    d = res.to_dict()
    assert [r["variables"] for r in d["tables"]] == list(frame["variables"])
    assert d["summary"]["rows"][0]["s_pmse"] == pytest.approx(frame["s_pmse"].iloc[0])


def test_a_one_column_summary_reads_like_its_figures():
    res = _build("dcr")
    table = res.summary()
    assert table["share_exact_synthetic"] == res.figures["share_exact_synthetic"]
    assert "median_dcr_baseline" in table and table.get("nope", 1) == 1
    assert list(table.to_frame().columns) == ["value"]
    # a multi-column table says how to read it
    with pytest.raises(KeyError, match="to_frame"):
        _build("combine").summary()["a"]


@pytest.mark.parametrize("key", [slice(None, 300), 0, -1])
def test_slicing_a_summary_says_where_text_and_rows_live(key):
    """``r.summary()[:300]`` used to raise KeyError('This summary has several columns...'),
    which reads as a bug: a slice or a position is a TypeError naming str() and to_frame()."""
    for kind in ("combine", "dcr"):  # several columns and one value column
        table = _build(kind).summary()
        with pytest.raises(TypeError, match=r"str\(table\)\[\.\.\.\].*to_frame\(\)"):
            table[key]
    assert str(table)[:300] == str(table)[:300]  # the text itself slices as a string


def test_summary_table_escapes_html():
    t = SummaryTable(pd.DataFrame({"value": [1.5]}, index=["<b>x</b>"]), title="a & b", notes=["<script>"])
    h = t.to_html()
    assert "<b>x</b>" not in h and "&lt;b&gt;x&lt;/b&gt;" in h and "a &amp; b" in h and "&lt;script&gt;" in h
    assert str(t).splitlines()[0] == "a & b" and math.isclose(t["<b>x</b>"], 1.5)
