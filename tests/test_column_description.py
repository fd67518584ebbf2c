"""One column description (issue 27): one kind vocabulary, Schema and PublicDomain as views
of a ReleaseSpec (round trips), and one resolution of the quasi-identifiers that every layer
and every command uses."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import synthmi
from synthmi import domain as domain_mod
from synthmi import kinds
from synthmi import schema as schema_mod
from synthmi import spec as spec_mod
from synthmi.cli import main
from synthmi.domain import PublicDomain
from synthmi.schema import Schema, Variable
from synthmi.spec import ColumnSpec, ReleaseSpec, resolve_quasi_identifiers

PACKAGE = Path(synthmi.__file__).parent
ALL_SPELLINGS = set(kinds.KINDS) | set(kinds.DOMAIN_KINDS)


def _frame(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(20, 70, n),                                    # integer
        "income": rng.gamma(2.0, 1000.0, n),                               # continuous
        "female": rng.integers(0, 2, n),                                   # 0/1 -> binary
        "region": rng.choice(["N", "S", "E"], n),                          # text -> nominal
        "edu": pd.Categorical(rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi"], ordered=True),
        "smoker": rng.choice([True, False], n),                            # bool -> binary
    })


# ---------------------------------------------------------------- one kind vocabulary
def test_every_module_vocabulary_is_the_one_in_kinds():
    assert spec_mod.KINDS is kinds.KINDS and spec_mod.CATEGORICAL_KINDS is kinds.CATEGORICAL_KINDS
    assert schema_mod.KINDS == kinds.MODEL_KINDS and set(schema_mod.KINDS) < set(kinds.KINDS)
    assert schema_mod.CATEGORICAL_KINDS is kinds.CATEGORICAL_KINDS
    # the domain's spelling is a renaming of the same five kinds, nothing more
    assert domain_mod.KINDS == kinds.DOMAIN_KINDS
    assert sorted(kinds.spec_kind(k) for k in domain_mod.KINDS) == sorted(kinds.KINDS)
    assert {kinds.spec_kind(k) for k in domain_mod.DISCRETE_KINDS} == set(kinds.CATEGORICAL_KINDS)
    assert [kinds.domain_kind(kinds.spec_kind(k)) for k in domain_mod.KINDS] == list(domain_mod.KINDS)
    assert kinds.model_kind("integer") == "continuous" and kinds.domain_kind("nominal") == "categorical"


def _kind_literals(tree: ast.AST):
    """String literals a column kind is compared with (``x.kind == "..."``, ``x.kind in (...)``,
    ``s.kind(c) == "..."``)."""
    def is_kind(node):
        return ((isinstance(node, ast.Attribute) and node.attr == "kind")
                or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "kind"))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and is_kind(node.left):
            for comp in node.comparators:
                elts = comp.elts if isinstance(comp, (ast.Tuple, ast.List, ast.Set)) else [comp]
                for e in elts:
                    if isinstance(e, ast.Constant) and isinstance(e.value, str):
                        yield node.lineno, e.value


# the vocabulary and its named parts, in both spellings
NAMED_SETS = [frozenset(v) for v in (
    kinds.KINDS, kinds.MODEL_KINDS, kinds.DOMAIN_KINDS, kinds.CATEGORICAL_KINDS, kinds.NUMERIC_KINDS,
    kinds.ORDERED_KINDS, [kinds.domain_kind(k) for k in kinds.CATEGORICAL_KINDS],
    [kinds.domain_kind(k) for k in kinds.ORDERED_KINDS])]


def _vocabulary_definitions(tree: ast.AST):
    """Tuples/lists/sets of string literals that spell out the vocabulary or one of its named
    parts (all kinds, the categorical ones, the numeric ones...): a vocabulary written again."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2 and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            values = frozenset(e.value for e in node.elts)
            if values in NAMED_SETS:
                yield node.lineno, sorted(values)


# ``.kind`` attributes that are not a column's kind, each with what it is
NOT_COLUMN_KINDS = {
    "_validate.py": {"int"},                                   # check_scalar: the kind of a scalar
    "privacy/accountant.py": {"pure", "approx", "gaussian"},   # kinds of privacy loss
    "privacy/dp_bayes.py": {"b", "iuf"},                       # numpy dtype.kind codes
    "privacy/mechanisms.py": {"iu", "f", "iub"},               # numpy dtype.kind codes
    "privacy/dpsyn.py": {"discrete"},                          # an encoded column: levels vs numeric cells
}


def test_the_code_compares_kinds_only_with_members_of_the_vocabulary_and_writes_it_once():
    stray, copies = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        rel = path.relative_to(PACKAGE).as_posix()
        other = NOT_COLUMN_KINDS.get(rel, set())
        stray += [(rel, line, v) for line, v in _kind_literals(tree) if v not in ALL_SPELLINGS | other]
        if rel != "kinds.py":
            copies += [(rel, line, v) for line, v in _vocabulary_definitions(tree)]
    assert not stray, f"kind strings outside synthmi.kinds: {stray}"
    assert not copies, f"kind vocabularies written out again (use synthmi.kinds): {copies}"


def test_every_kind_the_objects_produce_is_in_the_vocabulary():
    df = _frame()
    seen = set()
    seen |= {v.kind for v in Schema.infer(df)}
    seen |= {c.kind for c in ReleaseSpec.draft(df, ["age", "region"]).columns.values()}
    seen |= {c.kind for c in ReleaseSpec.from_roles(df, ["age"], private=True).columns.values()}
    from synthmi.data import load_domain

    for name in ("adult", "nhanes"):
        seen |= {kinds.spec_kind(load_domain(name)[c].kind) for c in load_domain(name)}
    assert seen <= set(kinds.KINDS) and {"integer", "continuous", "binary", "nominal", "ordinal"} <= seen


@pytest.mark.parametrize("kind", ["integer", "categorical", "numeric", "Nominal"])
def test_a_variable_refuses_a_kind_outside_the_model_vocabulary(kind):
    with pytest.raises(ValueError, match=r"The kind of column 'x' must be one of \['continuous', 'binary'"):
        Variable("x", kind, ("a", "b"))


# ---------------------------------------------------------------- views of one spec: round trips
def test_schema_to_spec_to_schema_round_trip():
    schema = Schema.infer(_frame(), {"age": "ordinal"})
    spec = ReleaseSpec.from_schema(schema, quasi_identifiers=["age", "region"])
    assert spec.quasi_identifiers == ["age", "region"]
    assert spec.inferred == [c for c in spec.columns if spec[c].is_categorical]  # a schema's levels are read from data
    back = spec.schema(schema.columns)
    assert back == schema
    assert back.to_dict() == schema.to_dict()


def test_public_domain_to_spec_to_public_domain_round_trip():
    dom = PublicDomain({
        "region": {"kind": "categorical", "levels": ["N", "S", "E", "Other"], "other": "Other"},
        "edu": {"kind": "ordinal", "levels": ["lo", "mid", "hi"], "missing": False},
        "female": {"kind": "binary", "levels": [0, 1]},
        "age": {"kind": "integer", "bounds": [17, 90], "point_masses": [17]},
        "income": {"kind": "continuous", "bounds": [0, 1e5], "point_masses": [0]},
    }, source="a code book")
    spec = ReleaseSpec.from_public_domain(dom, quasi_identifiers=["age", "edu"])
    assert spec.quasi_identifiers == ["age", "edu"] and spec.inferred == []
    assert spec["region"].kind == "nominal" and spec["region"].other == "Other" and not spec["edu"].missing
    back = spec.public_domain()
    assert back == dom and back.to_dict() == dom.to_dict()
    # and through the spec's JSON form (spec.json files carry 'other' and 'missing' now)
    again = ReleaseSpec.from_dict(spec.to_dict())
    assert again == spec and again.public_domain().to_dict() == dom.to_dict()


def test_bundled_domains_round_trip_through_a_spec():
    from synthmi.data import load_domain

    for name in ("adult", "nhanes"):
        dom = load_domain(name)
        assert ReleaseSpec.from_public_domain(dom).public_domain().to_dict() == dom.to_dict(), name


def test_the_spec_json_of_before_reads_and_writes_unchanged():
    """Specs written before 'other' and 'missing' existed read and write the same JSON."""
    d = ReleaseSpec.draft(_frame(), ["age", "region"]).to_dict()
    assert all({"other", "missing"}.isdisjoint(c) for c in d["columns"].values())
    assert ReleaseSpec.from_dict(d).to_dict() == d


def test_inferred_values_never_reach_the_public_domain():
    """A DP path reads the spec's public_domain(): declared levels and bounds only."""
    spec = ReleaseSpec.draft(_frame(), ["age", "region"])
    assert len(spec.public_domain()) == 0
    spec.columns["region"] = ColumnSpec("region", "quasi_identifier", "nominal", levels=("N", "S", "E"), declared=True)
    assert list(spec.public_domain()) == ["region"]


def test_column_spec_checks_other_and_missing():
    with pytest.raises(ValueError, match="'other' level that is not one of its levels"):
        ColumnSpec("r", "keep", "nominal", levels=("a", "b"), other="z")
    with pytest.raises(ValueError, match="'missing' must be true or false"):
        ColumnSpec("r", "keep", "nominal", levels=("a", "b"), missing="no")


# ---------------------------------------------------------------- one store of column facts
#: the facts of a column; only synthmi.columns.ColumnSpec may hold them
COLUMN_FACTS = {"kind", "levels", "categories", "bounds", "point_masses", "other", "missing", "declared",
                "description", "note"}


def _stored_facts(path: Path):
    """Per-column facts a module stores itself: dataclass/class fields, ``self.x = ...`` and
    ``object.__setattr__(self, "x", ...)`` for x a column fact."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                        and item.target.id in COLUMN_FACTS:
                    yield node.name, item.target.id
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr in COLUMN_FACTS:
            yield "self", node.attr
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__setattr__" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in COLUMN_FACTS:
            yield "__setattr__", node.args[1].value


def test_the_facts_of_a_column_are_stored_once_in_column_spec():
    """Issue 27: domain.py and schema.py hold no column facts of their own; a ColumnDomain and
    a Variable each hold one ColumnSpec (fails before: both were dataclasses with their own fields)."""
    for module in ("domain.py", "schema.py"):
        assert not list(_stored_facts(PACKAGE / module)), (module, list(_stored_facts(PACKAGE / module)))
    from synthmi.columns import ColumnSpec as StoredColumn
    from synthmi.domain import ColumnDomain

    assert list(_stored_facts(PACKAGE / "columns.py"))  # the check sees a store where there is one
    assert ColumnSpec is StoredColumn
    cd = ColumnDomain("integer", bounds=(0, 9), point_masses=(0,), name="age")
    var = Variable("region", "nominal", ("N", "S"))
    for view in (cd, var):
        assert isinstance(view.column, ColumnSpec) and not hasattr(view, "__dict__")
        with pytest.raises(AttributeError):
            view.kind = "binary"
    assert (cd.column.kind, cd.column.bounds, cd.column.point_masses, cd.column.declared) == \
        ("integer", (0.0, 9.0), (0.0,), True)
    assert (var.column.kind, var.column.levels) == ("nominal", ("N", "S"))


def test_schema_and_public_domain_show_the_spec_s_own_columns():
    """The views share the spec's ColumnSpec objects: what is derived through the spec is what
    they show, and a domain read from JSON is the store a spec built from it holds."""
    from dataclasses import replace
    import pickle

    from synthmi.domain import DomainError

    dom = PublicDomain({
        "region": {"kind": "categorical", "levels": ["N", "S", "Other"], "other": "Other"},
        "age": {"kind": "integer", "bounds": [17, 90]},
    }, source="a code book")
    spec = ReleaseSpec.from_public_domain(dom, quasi_identifiers=["age"])
    assert spec["region"] is dom["region"].column  # role keep: the very same column
    assert all(spec.public_domain()[c].column is spec[c] for c in spec.columns)
    assert all(spec.schema()[c].column is spec[c] for c in spec.columns)
    assert spec.schema()["age"].kind == "continuous" and spec.public_domain()["region"].kind == "categorical"
    spec.columns["age"] = replace(spec["age"], bounds=(18, 80))
    assert spec.public_domain()["age"].bounds == (18.0, 80.0)
    # inferred bounds are confidential: not in the domain, and they conform no data
    spec.columns["age"] = replace(spec["age"], declared=False)
    assert "age" not in spec.public_domain() and "age" in spec.schema()
    with pytest.raises(DomainError, match="Column 'age' has no declared public domain"):
        spec["age"].conform(pd.Series([20, 30], name="age"))
    # the views pickle (processes, Dask) as views of an equal column
    back = pickle.loads(pickle.dumps(dom))
    assert back == dom and back["age"].column == dom["age"].column
    assert pickle.loads(pickle.dumps(spec.schema())) == spec.schema()


# ---------------------------------------------------------------- one resolution of the QIs
def test_resolve_quasi_identifiers_precedence_and_checks():
    spec = ReleaseSpec.draft(_frame(), ["region", "age"])
    assert resolve_quasi_identifiers(None, spec) == spec.quasi_identifiers == ["region", "age"]
    assert resolve_quasi_identifiers(["sex"], spec) == ["sex"]            # given wins
    assert resolve_quasi_identifiers("sex") == ["sex"]                    # one name
    assert resolve_quasi_identifiers([], None, recorded=["a"], option="--qi") == ["a"]
    assert resolve_quasi_identifiers([], spec, recorded=["a"], option="--qi") == ["region", "age"]
    with pytest.raises(ValueError, match="The '--qi' option must name at least one column. Give --qi, or a --spec"):
        resolve_quasi_identifiers([], None, option="--qi")
    with pytest.raises(ValueError, match="The '--qi' option names columns more than once: \\['a'\\]"):
        resolve_quasi_identifiers(["a", "a"], option="--qi")
    with pytest.raises(ValueError, match="needs the 'quasi_identifiers' or a spec"):
        resolve_quasi_identifiers(None, None, owner="f")
    with pytest.raises(ValueError, match="names columns not in 'original'"):
        resolve_quasi_identifiers(["nope"], df=_frame(), frame="original")


class _Resolved(BaseException):
    """Raised by the spy once the QIs are resolved: the command need not run further."""


@pytest.fixture
def release(tmp_path):
    from synthmi.models.cart import CartSynthesizer

    df = _frame(120, seed=3)[["age", "female", "region", "income"]]
    df["y"] = (df["income"] > df["income"].median()).astype(int)
    src = tmp_path / "orig.csv"
    df.to_csv(src, index=False)
    spec = ReleaseSpec.draft(df, ["region", "age"])
    spec.analyses = [{"formula": "y ~ age + female", "family": "logit"}]
    spec.save(tmp_path / "spec.json")
    CartSynthesizer().fit(pd.read_csv(src), quasi_identifiers=["age", "female"]).sample(
        2, random_state=1).to_dir(tmp_path / "syn")
    return tmp_path, str(src), spec


def test_every_command_resolves_the_spec_quasi_identifiers_through_the_one_function(release, monkeypatch):
    """synthesize, tune, disclosure and report take the QIs of a --spec through
    resolve_quasi_identifiers (the spy stops each command there) and get the spec's."""
    tmp, src, spec = release
    calls = []

    def spy(*args, **kwargs):
        calls.append(resolve(*args, **kwargs))
        raise _Resolved

    resolve = spec_mod.resolve_quasi_identifiers
    monkeypatch.setattr(spec_mod, "resolve_quasi_identifiers", spy)
    s, syn = str(tmp / "spec.json"), str(tmp / "syn")
    runs = {
        "synthesize": ["synthesize", "--data", src, "--spec", s, "--method", "cart", "--m", "2", "--out",
                       str(tmp / "out")],
        "tune": ["tune", "--data", src, "--spec", s, "--target", "expected_matches<=5", "--out", str(tmp / "t.json")],
        "disclosure": ["disclosure", "--original", src, "--synthetic", syn, "--spec", s, "--out", str(tmp / "d.json")],
        "report": ["report", "--original", src, "--synthetic", syn, "--spec", s, "--out", str(tmp / "r.html")],
    }
    for verb, argv in runs.items():
        calls.clear()
        with pytest.raises(_Resolved):
            main(argv)
        assert calls == [spec.quasi_identifiers], verb
    # without a spec, report falls back to the QIs recorded with the copies, in the same function
    calls.clear()
    with pytest.raises(_Resolved):
        main(["report", "--original", src, "--synthetic", syn, "--analysis", "y ~ age", "--out", str(tmp / "r2.html")])
    assert calls == [["age", "female"]]


def test_models_and_measures_resolve_the_spec_quasi_identifiers_alike(release):
    from synthmi.evaluation.risk import reidentification_risk
    from synthmi.models.cart import CartSynthesizer
    from synthmi.synthetic import SyntheticData

    tmp, src, spec = release
    df = pd.read_csv(src)
    fitted = CartSynthesizer().fit(df, spec)
    assert fitted.spec_.quasi_identifiers == spec.quasi_identifiers
    copies = SyntheticData.from_dir(tmp / "syn").copies
    res = reidentification_risk(df, copies, spec=spec)
    assert list(res.to_dict()["settings"]["quasi_identifiers"]) == spec.quasi_identifiers


def test_a_dp_release_takes_kinds_levels_and_bounds_from_the_declaration_not_the_dtypes():
    """The DP path once took kinds from dtypes (issue 27): here every dtype disagrees with the
    declaration (age float, smoker text '0'/'1', region with a level no record holds), and the
    spec the release records is the declared domain's spec, whatever the dtypes."""
    from synthmi.privacy import DPSynSynthesizer

    dom = PublicDomain({
        "region": {"kind": "categorical", "levels": ["N", "S", "Atlantis"]},
        "age": {"kind": "integer", "bounds": [18, 90], "missing": False},
        "smoker": {"kind": "binary", "levels": [0, 1]},
        "income": {"kind": "continuous", "bounds": [0, 1e5], "point_masses": [0]},
    }, source="code book")
    rng = np.random.default_rng(5)
    n = 200
    df = pd.DataFrame({"region": rng.choice(["N", "S"], n), "age": rng.integers(18, 80, n).astype(float),
                       "smoker": rng.choice(["0", "1"], n), "income": rng.gamma(2.0, 1e4, n).round()})
    synth = DPSynSynthesizer(epsilon=1.0, delta=1e-9, random_state=0)
    with pytest.warns(UserWarning, match="user seed"):
        synth.fit(df, domain=dom)
    released = synth.spec_
    assert released.inferred == []
    assert {c: released[c].kind for c in df} == {"region": "nominal", "age": "integer", "smoker": "binary",
                                                  "income": "continuous"}
    expected = ReleaseSpec.from_public_domain(dom)
    for c in df:
        got, want = released[c], expected[c]
        assert (got.levels, got.bounds, got.point_masses, got.other, got.missing) == (
            want.levels, want.bounds, want.point_masses, want.other, want.missing), c
