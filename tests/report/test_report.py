"""The disclosure review report: self-contained HTML, aggregates only, CLI end to end."""
from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import main
from synthmi.models.cart import CartSynthesizer
from synthmi.provenance import frame_sha256
from synthmi.workflow.evaluate import evaluate_release
from synthmi.report.html import render_report, write_report

from _report_fixtures import fake_report_data

QI = ["age", "sex", "group"]
FORMULA = "y ~ age + sex + group"


def _sentinel_data(n: int = 400, seed: int = 3) -> pd.DataFrame:
    """Data whose every confidential value is recognisable if it leaks.

    Ages lie in [1000, 2000) with six decimals, so no aggregate the report
    shows (coefficients, S_pMSE ~ 1, counts <= n = 400, rates in [0, 1])
    can print like one of them; the kept column holds unique sentinel strings.
    """
    rng = np.random.default_rng(seed)
    age = np.round(rng.uniform(1000, 2000, n), 6)
    sex = pd.Categorical(rng.choice(["F", "M"], n), categories=["F", "M"])
    group = pd.Categorical(rng.choice(["g1", "g2", "g3"], n), categories=["g1", "g2", "g3"])
    eta = -0.5 + 0.001 * (age - 1500) + 0.4 * (sex == "M")
    y = pd.Categorical(np.where(rng.normal(size=n) < eta, "yes", "no"), categories=["no", "yes"])
    secret = pd.Categorical([f"SENTINEL{i:05d}" for i in range(n)])
    return pd.DataFrame({"age": age, "sex": sex, "group": group, "y": y, "secret": secret})


def _external_refs(html: str) -> list[str]:
    return re.findall(r"""(?:src|href)\s*=\s*["']?(?!data:|#)([^"' >]+)""", html)


@pytest.mark.slow
def test_render_is_self_contained_with_every_section():
    html = render_report(fake_report_data())
    assert html.startswith("<!DOCTYPE html>")
    assert _external_refs(html) == []  # no file, URL or CDN: opens offline
    assert "<script" not in html and "<link" not in html
    for section in ("summary", "utility", "coefficients", "risk", "settings", "provenance"):
        assert f'id="{section}"' in html
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(imgs) == 3  # coefficient plot, the I_i histogram and the risk-utility map
    for b64 in imgs:
        assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"
    # summary columns of the issue, with integers shown as integers
    for label in ("S_pMSE", "mean CI overlap", "mean std. difference", "expected correct matches", "true-match rate"):
        assert label in html
    assert "<td>5</td>" in html and "5.000" not in html


@pytest.mark.slow
def test_render_escapes_labels():
    data = fake_report_data()
    data.settings["original"] = "<b>evil</b>"
    html = render_report(data)
    assert "<b>evil</b>" not in html and "&lt;b&gt;evil&lt;/b&gt;" in html


@pytest.fixture(scope="module")
def evaluated():
    df = _sentinel_data()
    before = df.copy()
    syn = CartSynthesizer().fit(df, quasi_identifiers=QI, keep=["y", "secret"]).sample(3, random_state=5)
    data = evaluate_release(df, {"cart": syn}, QI, FORMULA, family="probit", tolerance={"age": 5.0}, k0=3)
    return df, before, syn, data


@pytest.mark.slow
def test_evaluate_release_never_stores_or_prints_confidential_values(evaluated):
    df, before, syn, data = evaluated
    pd.testing.assert_frame_equal(df, before)  # input not mutated
    html = render_report(data)
    for s in df["secret"].astype(str):
        assert s not in html
    leaked = [v for v in df["age"] if repr(float(v)) in html or f"{v:.3f}" in html or f"{v:.2f}" in html]
    assert leaked == []
    # no plain hash of confidential input (a confirmation oracle for guessed values)
    assert frame_sha256(df) not in html
    assert "SYNTHMI_PROVENANCE_KEY" in html  # the report says how to record a keyed digest


def test_confidential_input_gets_a_keyed_digest_only(evaluated, monkeypatch):
    import hashlib
    import hmac

    from synthmi.provenance import confidential_digest

    df = evaluated[0]
    monkeypatch.setenv("SYNTHMI_PROVENANCE_KEY", "holder-secret")
    d1 = confidential_digest(df)
    assert d1.startswith("hmac-sha256:") and frame_sha256(df) not in d1
    assert d1 == confidential_digest(df.copy())  # reproducible for the holder
    monkeypatch.setenv("SYNTHMI_PROVENANCE_KEY", "another-secret")
    assert confidential_digest(df) != d1  # useless without the key
    # the digest is an HMAC of what frame_sha256 hashes, under the key
    mac = hmac.new(b"holder-secret", digestmod=hashlib.sha256)
    mac.update(repr([(str(c), str(df[c].dtype)) for c in df.columns]).encode())
    mac.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    assert d1 == "hmac-sha256:" + mac.hexdigest()


def test_evaluate_release_numbers_match_the_evaluation_layer(evaluated):
    from synthmi.evaluation import analyse, pmse
    from synthmi.evaluation.risk import reidentification_risk

    df, _, syn, data = evaluated
    row = data.summary.iloc[0]
    assert row["M"] == 3
    assert row["S_pMSE"] == pytest.approx(pmse(df, syn.copies, variables=QI + ["y"]).mean_s_pmse)
    res = analyse(FORMULA, family="probit", original=df, synthetic=syn.copies)
    assert row["mean_ci_overlap"] == pytest.approx(res.mean_ci_overlap)
    assert row["mean_std_diff"] == pytest.approx(res.mean_std_diff)
    risk = reidentification_risk(df, syn.copies, QI, tolerance={"age": 5.0})
    assert row["expected_matches"] == pytest.approx(risk.figures["expected_matches"])
    np.testing.assert_allclose(data.individual_risk["cart"], risk.individual.to_numpy())
    # the subgroup table partitions the records and the expected matches
    rb = data.risk_by_subgroup
    assert rb["records"].sum() == len(df)
    assert rb["expected_matches"].sum() == pytest.approx(row["expected_matches"])
    assert list(data.per_variable.index) == QI


@pytest.mark.slow
def test_report_cli_end_to_end(tmp_path, capsys):
    df = _sentinel_data(n=300, seed=9)
    src = tmp_path / "original.csv"
    df.to_csv(src, index=False)
    orig = pd.read_csv(src)
    for c in ("sex", "group", "y", "secret"):
        orig[c] = pd.Categorical(orig[c], categories=sorted(orig[c].unique()))
    syn = CartSynthesizer().fit(orig, quasi_identifiers=QI).sample(2, random_state=1)
    syn.to_dir(tmp_path / "syn")
    out = tmp_path / "r.html"
    rc = main(["report", "--original", str(src), "--synthetic", f"cart={tmp_path / 'syn'}", "--qi", "age,sex,group",
               "--analysis", FORMULA, "--tol", "age=3", "--k0", "2", "--out", str(out), "--quiet"])
    assert rc == 0
    assert capsys.readouterr().out.strip().endswith("r.html")
    html = out.read_text()
    assert "cart" in html and "SENTINEL" not in html
    assert "&quot;age&quot;: 3.0" in html  # the tolerance is part of the settings (escaped JSON)


def test_report_cli_bad_input_is_one_line(tmp_path, capsys):
    rc = main(["report", "--original", str(tmp_path / "nope.csv"), "--synthetic", str(tmp_path), "--out", str(tmp_path / "x.html")])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "\n" not in err and "nope.csv" in err and "Traceback" not in err
    rc = main(["report", "--original", "adult", "--synthetic", str(tmp_path / "missing"), "--out", str(tmp_path / "x.html")])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "\n" not in err and "'--synthetic' directory" in err


@pytest.mark.slow
def test_write_report_creates_parent(tmp_path):
    p = write_report(fake_report_data(), tmp_path / "a" / "b" / "report.html")
    assert p.exists() and p.stat().st_size > 10_000


@pytest.mark.slow
def test_demo_writes_the_report_and_prints_its_path(tmp_path, capsys):
    """The main job end to end (M = 2 to stay quick): DA-MI and CART copies, report, path on stdout."""
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--m", "2", "--quiet"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == str((out / "report.html").resolve())
    html = (out / "report.html").read_text()
    assert "<td>dami</td>" in html and "<td>cart</td>" in html
    assert sorted(p.name for p in (out / "dami").iterdir()) == ["copy_01.csv", "copy_02.csv", "metadata.json"]
    assert "git \u203a commit" in html  # provenance carries the code version (as a readable row)


@pytest.mark.slow
def test_report_decision_sections(tmp_path):
    """Plain-language releases, reference rows, risk-utility map, two-way heat map, attribute
    disclosure, impossible values and S_pMSE flags, from a real (small) evaluation."""
    import numpy as np
    import pandas as pd

    from synthmi.models import CartSynthesizer, DAMISynthesizer
    from synthmi.report.data import pmse_reading
    from synthmi.workflow.evaluate import evaluate_release, impossible_values
    from synthmi.report.html import render_report

    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"age": rng.integers(18, 80, n).astype(float),
                       "sex": pd.Categorical(rng.choice(["F", "M"], n)),
                       "y": pd.Categorical(rng.choice(["no", "yes"], n))})
    dami = DAMISynthesizer(masks={"age": {"K": 3, "sigma_e": 1.0}, "sex": {"alpha": 6.0}}, progressbar=False)
    rel = {"dami": dami.fit(df, quasi_identifiers=["age", "sex"], keep=["y"]).sample(2, random_state=1),
           "cart": CartSynthesizer().fit(df, quasi_identifiers=["age", "sex"], keep=["y"]).sample(2, random_state=1)}
    data = evaluate_release(df, rel, ["age", "sex"], "y ~ age + sex", tolerance={"age": 1}, target="y")
    r = data.releases["dami"]
    assert r["verbatim"] == ["y"] and r["synthesized"] == ["age", "sex"] and r["masks"]["sex"]["alpha"] == 6.0
    assert r["unchanged_share"]["sex"] > 0.95  # alpha = 6 leaves nearly every category as it was
    assert list(data.references["method"]) == ["reference: original released as is", "reference: independent release"]
    assert data.references.iloc[0]["expected_matches"] > data.summary.set_index("method").loc["cart", "expected_matches"]
    assert set(data.attribute["method"]) >= {"dami", "cart", "reference: original released as is"}
    assert data.pmse_two_way["dami"].shape == (3, 3)
    page = render_report(data)
    for needle in ("What each release is, in plain language", "Released verbatim", "Risk-utility map",
                   "Two-way tables", "Attribute disclosure of", "DiSCO", "reference: independent release",
                   "Impossible values"):
        assert needle in page, needle
    assert "\u203a" in page  # provenance as path rows ("releases > dami > ..."), not a JSON wall
    # S_pMSE readings, by hand: k = 50 -> null sd 0.2, band 0.4 .. 1.6
    assert pmse_reading(0.1, 50)[1] and "nearly identical" in pmse_reading(0.1, 50)[0]
    assert pmse_reading(3.0, 50)[1] and "differ" in pmse_reading(3.0, 50)[0]
    assert not pmse_reading(1.2, 50)[1]
    # impossible values, by hand: one age above the observed max, one fractional, one unknown category
    bad = df.copy()
    bad.loc[0, "age"] = 200.0
    bad.loc[1, "age"] = 30.5
    bad["sex"] = bad["sex"].cat.add_categories(["X"])
    bad.loc[2, "sex"] = "X"
    rows = {r["column"]: r for r in impossible_values(df, [bad], ["age", "sex"])}
    assert rows["age"]["outside observed range"] == 1 and rows["age"]["not whole"] == 1
    assert rows["sex"]["unknown category"] == 1 and rows["age"]["impossible"] == 2


def test_report_flags_a_release_checked_with_looser_thresholds():
    """A release that passed its convergence check with thresholds looser than Vehtari et al. (2021)
    (``--convergence lenient``: R-hat 1.05, ESS 100) is flagged, naming the thresholds; one checked with
    the defaults is not (issue 28)."""
    from synthmi.diagnostics import LENIENT, threshold_record
    from synthmi.report.html import _release_flags

    loose = {"diagnostics_check": {"passed": True, **threshold_record(*LENIENT)}}
    strict = {"diagnostics_check": {"passed": True, **threshold_record(1.01, 400.0)}}
    out = _release_flags({"risk-dami": loose, "rubin": strict})
    assert "LOOSER THRESHOLDS" in out and "<b>risk-dami</b>" in out and "1.05" in out and "(lenient)" in out
    assert "<b>rubin</b>" not in out
    assert _release_flags({"rubin": strict}) == ""


def test_report_describes_tree_and_plug_in_copies_as_what_they_are():
    """A Rubin release of plug-in trees (proper=False) was described as the posterior predictive of
    regressions, with 'none reported' diagnostics; the report now names each column's conditional
    and the plug-in (found by the new-user review of proper=False)."""
    from synthmi.models.rubin import RubinSynthesizer
    from synthmi.workflow.evaluate import describe_release

    rng = np.random.default_rng(3)
    n = 200
    df = pd.DataFrame({"age": rng.integers(20, 70, n).astype(float),
                       "sex": pd.Categorical(rng.choice(["f", "m"], n)), "inc": rng.normal(size=n)})
    syn = RubinSynthesizer(models={"age": "tree", "sex": "tree"}, proper=False, progressbar=False)
    syn.fit(df, quasi_identifiers=["age", "sex"])
    rel = syn.sample(2, random_state=1)
    d = describe_release("trees", rel, df, rel.copies, ["age", "sex"], "partial")
    assert "age tree, sex tree" in d["how"] and "proper=False" in d["how"]
    assert "regression" not in d["how"]
    assert d["plug_in"] is True
    import dataclasses
    html_out = render_report(dataclasses.replace(fake_report_data(), releases={"trees": d}))
    assert "plug-in copies, no posterior sampling" in html_out


def test_release_verdict_names_a_table_far_above_one():
    """The per-release S_pMSE verdict said "consistent with copies drawn from a fitted model" for a DA-MI
    release of randhie whose one-way table of the kernel-smoothed disea had S_pMSE 21.8 (new-user review).
    Copies that smear one column with a point mass (70% zeros, each copy's zeros spread by N(0, 1)) and
    keep the others as they are: the verdict names that table and is flagged, by the table rule tune uses
    (battery.table_feasible, bound 10); the same copies without the smear are not flagged."""
    from synthmi.evaluation.battery import DEFAULT_MAX_TABLE_S_PMSE
    from synthmi.report.html import render_report

    rng = np.random.default_rng(5)
    n = 400
    df = pd.DataFrame({"x": np.where(rng.random(n) < 0.7, 0.0, rng.integers(1, 10, n).astype(float)),
                       "sex": pd.Categorical(rng.choice(["F", "M"], n)),
                       "y": rng.normal(size=n)})
    clean, smeared = [], []
    for j in range(2):
        c = df.sample(frac=1.0, replace=True, random_state=j).reset_index(drop=True)
        clean.append(c)
        s = c.copy()
        s["x"] = s["x"] + np.where(s["x"] == 0, rng.normal(0, 1, n), 0.0)
        smeared.append(s)
    data = evaluate_release(df, {"smeared": smeared, "clean": clean}, ["x", "sex"], "y ~ x + sex",
                            family="gaussian", references=False)
    worst = float(data.summary.set_index("method").loc["smeared", "worst_one_way_s_pmse"])
    assert worst > DEFAULT_MAX_TABLE_S_PMSE  # the smear breaks the x margin: the case under test
    r = data.releases["smeared"]
    assert r["s_pmse_flag"] and "consistent" not in r["s_pmse_reading"]
    assert "one-way table of x" in r["s_pmse_reading"] and f"{worst:.3g}" in r["s_pmse_reading"]
    assert "one-way table of x" in render_report(data)
    assert "table" not in data.releases["clean"]["s_pmse_reading"]


def test_report_warns_when_exact_key_tables_meet_a_continuous_copy():
    """A release whose numeric key is synthesized on a continuous scale (every copy value off the original's
    support) read DiSCO 0 in the report's attribute table with no word (randhie DA-MI, new-user review): the
    attribute section now carries attribute_disclosure's warning for that release and not for a release that
    copies the key's values."""
    from synthmi.report.html import render_report

    rng = np.random.default_rng(2)
    n = 300
    x = rng.integers(0, 30, n).astype(float)
    df = pd.DataFrame({"x": x, "sex": pd.Categorical(rng.choice(["F", "M"], n)),
                       "y": pd.Categorical(np.where(x >= 15, "yes", "no"))})  # y a function of the key x
    smooth = [df.assign(x=df["x"] + rng.normal(0, 0.3, n)) for _ in range(2)]
    donors = [df.assign(x=df["x"].to_numpy()[rng.permutation(n)]) for _ in range(2)]
    data = evaluate_release(df, {"smooth": smooth, "donors": donors}, ["x", "sex"], "y ~ x + sex",
                            family="logit", target="y", references=False)
    assert data.releases["smooth"]["attribute_warnings"] and not data.releases["donors"]["attribute_warnings"]
    page = render_report(data)
    assert "occur nowhere in the original" in page and "smooth: 100%" in page
    assert data.attribute.set_index("method").loc["smooth", "DiSCO"] == 0.0  # exact keys: 0 by construction
    # synthpop's grouping (ngroups_keys = 5): no warning, and the key tables see the smoothed copies' keys
    grouped = evaluate_release(df, {"smooth": smooth}, ["x", "sex"], "y ~ x + sex", family="logit", target="y",
                               references=False, ngroups_keys=5)
    assert not grouped.releases["smooth"]["attribute_warnings"]
    assert grouped.attribute.set_index("method").loc["smooth", "DiSCO"] > 0
    assert "cut into 5 groups" in render_report(grouped)


def test_provenance_reads_the_masks_of_a_spec_tuned_release():
    """A release whose masks came from its spec (as 'synthmi tune' writes them; the masks parameter is empty):
    the provenance showed "params › masks –"; it reads them from the spec, as the release section does."""
    from dataclasses import replace

    from synthmi.models import DAMISynthesizer
    from synthmi.spec import ReleaseSpec

    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"age": rng.integers(18, 80, n).astype(float),
                       "sex": pd.Categorical(rng.choice(["F", "M"], n)),
                       "y": pd.Categorical(rng.choice(["no", "yes"], n))})
    masks = {"age": {"K": 1, "sigma_e": 5.0}, "sex": {"alpha": 2.0}}
    spec = replace(ReleaseSpec.draft(df, ["age", "sex"], ["y"]), masks=masks)
    syn = DAMISynthesizer(progressbar=False).fit(df, spec=spec).sample(2, random_state=1)
    assert not syn.metadata()["params"]["masks"]  # the parameter is empty: the masks are the spec's
    data = evaluate_release(df, {"dami": syn}, ["age", "sex"], "y ~ age + sex", references=False)
    params = data.provenance["releases"]["dami"]["params"]
    assert "masks" not in params and params["masks (from the spec)"]["sex"]["alpha"] == 2.0
    page = render_report(data)
    assert "params \u203a masks</td><td>&ndash;" not in page
    assert "params \u203a masks (from the spec) \u203a age \u203a sigma_e</td><td>5.000" in page
