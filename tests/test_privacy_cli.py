import json

import pytest

from synthmi.cli import main


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
        (["dp", "bayes", "--n", "10", "--k", "5", "--eps", "0"], "'epsilon' parameter"),
        (["dp", "bayes", "--n", "10", "--k", "5", "--eps", "1", "--mechanism", "local"], "NOT differentially private"),
        (["dp", "audit", "--n", "10", "--eps", "1", "--mechanism", "smooth", "--delta", "2"], "'delta' parameter"),
    ],
)
def test_dp_cli_errors(argv, msg, capsys):
    assert main(argv) == 1
    assert msg in capsys.readouterr().err
