"""An identifier column is named before it is released (found trying the CLI on an Adult
extract with an ``ID`` column): for a CSV every column not in --qi is kept by default, so
the ID went out unchanged beside the synthetic quasi-identifiers (linking each synthetic
row to its person) and was a CART predictor, silently. Both tests failed before the warning."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import main


class _Stop(Exception):
    pass


def _people(n=60, seed=5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "ID": np.arange(1000, 1000 + n),             # an identifier
        "code": [f"P{i:04d}" for i in range(n)],     # a text identifier
        "age": rng.integers(18, 80, n),
        "sex": rng.choice(["F", "M"], n),
        "wt": rng.lognormal(8, 0.5, n),              # distinct in every row, but a float weight
        "hours": rng.integers(10, 60, n),
    })


@pytest.fixture()
def people_csv(tmp_path):
    path = tmp_path / "people.csv"
    _people().to_csv(path, index=False)
    return path


def test_synthesize_warns_before_fitting_about_kept_identifiers(tmp_path, people_csv, capsys, monkeypatch):
    from synthmi.models.cart import CartSynthesizer

    def _fit(self, *a, **k):
        raise _Stop("stop before fitting")

    monkeypatch.setattr(CartSynthesizer, "fit", _fit)
    base = ["synthesize", "--data", str(people_csv), "--qi", "age,sex", "--method", "cart", "--m", "2",
            "--out", str(tmp_path / "syn"), "--quiet"]
    # issue 30: an identifier released unchanged is an error (before the fit), not a warning
    assert main(base) == 1
    err = capsys.readouterr().err
    assert "'ID', 'code' unchanged, and they hold a different value in every row" in err and "--keep" in err
    assert "--allow-identifiers" in err and err.startswith("synthmi synthesize: error:")
    assert "'wt'" not in err and "'hours'" not in err and "1000" not in err  # names only, never values
    # --allow-identifiers releases them with the warning (the stand-in fit stops it)
    assert main([*base, "--allow-identifiers"]) == 1
    err = capsys.readouterr().err
    assert "'ID', 'code' have a different value in every row" in err and "stop before fitting" in err
    # a --keep without the identifiers (and the weight given as such) draws no warning
    assert main([*base, "--keep", "hours,wt", "--weights", "wt"]) == 1
    assert "identifier" not in capsys.readouterr().err


def test_spec_draft_names_identifier_columns(tmp_path, people_csv, capsys):
    out = tmp_path / "spec.json"
    assert main(["spec", "--data", str(people_csv), "--qi", "age,sex", "--out", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "'ID', 'code' have a different value in every row" in err and '"excluded"' in err
    assert main(["spec", "--data", str(people_csv), "--qi", "age,sex", "--keep", "hours", "--out",
                 str(tmp_path / "s2.json"), "--quiet"]) == 0
    assert "identifier" not in capsys.readouterr().err
