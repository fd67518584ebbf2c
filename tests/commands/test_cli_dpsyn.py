"""``synthmi synthesize --method dpsyn``: fully synthetic DP copies from the CLI."""
import json

import pytest

from synthmi.cli import main
from synthmi.synthetic import SyntheticData

ARGS = ["synthesize", "--data", "adult", "--qi", "age,sex,race,education", "--keep", "income,hours_per_week",
        "--method", "dpsyn", "--param", "epsilon=1", "--param", "delta=1e-9", "--m", "2", "--seed", "3", "--quiet"]


@pytest.mark.slow
def test_dpsyn_cli_spends_the_budget_and_is_reproducible(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main([x for x in ARGS if x != "--quiet"] + ["--out", str(a)]) == 0
    # add/remove-one DP: the exact number of records is private, so neither the
    # log nor metadata.json may carry it (48,842 rows in the bundled Adult)
    log = capsys.readouterr().err
    assert "48842" not in log and "48,842" not in log
    assert "48842" not in (a / "metadata.json").read_text()
    assert main(ARGS + ["--out", str(b)]) == 0
    for name in ("copy_01.csv", "copy_02.csv"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    meta = json.loads((a / "metadata.json").read_text())
    assert meta["method"] == "dpsyn"
    assert meta["diagnostics"]["epsilon_spent"] == pytest.approx(1.0, abs=1e-6)
    syn = SyntheticData.from_dir(a)
    assert list(syn.copies[0].columns) == ["age", "education", "race", "sex", "hours_per_week", "income"]
    assert list(syn.copies[0]["education"].cat.categories) == ["<HS", "HS", ">HS"]
    # public bounds hold: ages inside the documented 17-90 range, whatever the data say
    assert syn.copies[0]["age"].between(17, 90).all()


def test_bounds_are_checked(tmp_path, capsys):
    assert main(ARGS + ["--bounds", "hours_per_week=1-99", "--out", str(tmp_path / "x")]) == 1
    assert "The '--bounds' option takes COLUMN=LO:HI" in capsys.readouterr().err
    cart = ["synthesize", "--data", "adult", "--qi", "age", "--method", "cart", "--bounds", "age=17:90",
            "--out", str(tmp_path / "y"), "--quiet"]
    assert main(cart) == 1
    assert "'--bounds' option is for dpsyn" in capsys.readouterr().err
