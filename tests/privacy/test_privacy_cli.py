import json

import pytest

from synthmi.cli import main


@pytest.mark.slow
def test_dp_bayes_and_audit(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert main(["dp", "bayes", "--n", "100", "--k", "50", "--eps", "1", "--mechanism", "global", "--seed", "1",
                 "--out", str(out), "--quiet"]) == 0
    payload = json.loads(out.read_text())
    assert payload["expected_hellinger"] == pytest.approx(0.682, abs=5e-4)
    assert payload["alpha"] + payload["beta"] == pytest.approx(102)
    a = tmp_path / "a.json"
    assert main(["dp", "audit", "--n", "200", "--eps", "0.1", "--mechanism", "local", "--prior", "0.1,0.1",
                 "--out", str(a), "--quiet"]) == 0
    res = json.loads(a.read_text())
    assert res["exceeds_epsilon"] is True and (res["k_x"], res["k_y"]) == (1, 2)
    assert main(["dp", "sigma", "--eps", "1", "--delta", "1e-5", "--marginals", "1"]) == 0
    assert "4.900555" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["dp", "bayes", "--n", "10", "--k", "11", "--eps", "1"], "'--k' option"),
        (["dp", "bayes", "--n", "0", "--k", "0", "--eps", "1"], "'--n' option"),
        (["dp", "bayes", "--n", "10", "--k", "5", "--eps", "0"], "The '--eps' option"),
        (["dp", "bayes", "--n", "10", "--k", "5", "--eps", "1", "--mechanism", "local"], "NOT differentially private"),
        (["dp", "audit", "--n", "10", "--eps", "1", "--mechanism", "smooth", "--delta", "2"], "The '--delta' option"),
    ],
)
def test_dp_cli_errors(argv, msg, capsys):
    assert main(argv) == 1
    assert msg in capsys.readouterr().err


def _csv(tmp_path, **cols):
    import pandas as pd

    path = tmp_path / "d.csv"
    pd.DataFrame(cols).to_csv(path, index=False)
    return str(path)


def _bayes(tmp_path, data, *extra):
    # laplace at eps = 50: P(noise = 0) = tanh(25) ~ 1 - 4e-22, so the release shows k itself
    out = tmp_path / "r.json"
    rc = main(["dp", "bayes", "--data", data, "--eps", "50", "--mechanism", "laplace", "--seed", "0",
               "--out", str(out), "--overwrite", "--quiet", *extra])
    return rc, (json.loads(out.read_text()) if rc == 0 else None)


@pytest.mark.slow
def test_dp_bayes_data_coding_comes_from_positive_not_from_the_data(tmp_path, capsys):
    data = _csv(tmp_path, ans=["no"] * 7)
    # Without a public positive level the coding is refused, not inferred from the observed values.
    rc, _ = _bayes(tmp_path, data, "--column", "ans")
    assert rc == 1 and "'--positive' option is required" in capsys.readouterr().err
    rc, res = _bayes(tmp_path, data, "--column", "ans", "--positive", "yes")
    assert rc == 0 and (res["alpha"], res["beta"]) == (1.0, 8.0)  # k = 0 of n = 7: "no" is not a one
    rc, res = _bayes(tmp_path, data, "--column", "ans", "--positive", "no")
    assert rc == 0 and (res["alpha"], res["beta"]) == (8.0, 1.0)
    # numeric 0/1 column: positive level 1 by default; another level one-vs-rest on request
    num = _csv(tmp_path, v=[0, 1, 1, 0, 1])
    rc, res = _bayes(tmp_path, num, "--column", "v")
    assert rc == 0 and (res["alpha"], res["beta"]) == (4.0, 3.0)
    rc, res = _bayes(tmp_path, num, "--column", "v", "--positive", "0")
    assert rc == 0 and (res["alpha"], res["beta"]) == (3.0, 4.0)
    # a declared n must be the row count (public under substitution)
    rc, res = _bayes(tmp_path, num, "--column", "v", "--n", "5")
    assert rc == 0 and res["n"] == 5
    rc, _ = _bayes(tmp_path, num, "--column", "v", "--n", "4")
    assert rc == 1 and "'--n' option must equal the number of rows" in capsys.readouterr().err


def test_dp_bayes_data_refuses_missing_values_without_counting_them(tmp_path, capsys):
    data = _csv(tmp_path, ans=["yes", None, "no", None, None, "yes"])
    rc, _ = _bayes(tmp_path, data, "--column", "ans", "--positive", "yes")
    err = capsys.readouterr().err
    assert rc == 1 and "Column 'ans' has missing values" in err
    assert not any(ch.isdigit() for ch in err.split("has missing values", 1)[1].split("\n")[0])  # no count, no n
    rc, _ = _bayes(tmp_path, _csv(tmp_path, v=[0.0, 1.0, None]), "--column", "v")
    assert rc == 1 and "Column 'v' has missing values" in capsys.readouterr().err


def test_dp_bayes_on_bundled_adult(tmp_path):
    rc, res = _bayes(tmp_path, "adult", "--column", "sex", "--positive", "Male")
    from synthmi.data import load_adult

    df = load_adult()
    assert rc == 0 and res["n"] == len(df)
    assert res["alpha"] == 1.0 + float((df["sex"] == "Male").sum())
