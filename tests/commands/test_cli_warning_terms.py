"""Warnings on the command line speak its terms (issue 27 review): a library warning
printed by ``synthmi VERB`` says "the data", never the Python argument name ``df``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from synthmi.cli import main


def test_a_broken_rule_warns_of_the_data_not_df(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 120
    g = np.array(["a"] * 60 + ["b"] * 60)
    y = np.where(g == "a", "u", rng.choice(["u", "v"], n))
    y[:3] = "v"  # three g == 'a' rows break the rule "y = u where g == 'a'"
    df = pd.DataFrame({"g": g, "y": y, "x": rng.normal(10, 1, n)})
    src = tmp_path / "orig.csv"
    df.to_csv(src, index=False)
    rc = main(["synthesize", "--data", str(src), "--qi", "y,x", "--method", "cart", "--m", "2", "--seed", "1",
               "--rule", "y=u:g == 'a'", "--out", str(tmp_path / "syn")])
    err = capsys.readouterr().err
    warn = [line for line in err.splitlines() if "breaks its rule" in line]
    assert rc == 0 and warn, err
    assert warn[0] == ("synthmi synthesize: warning: Column 'y' breaks its rule on 3 rows of the data; the models of "
                       "'y' are fitted on the rows the rule leaves free and the copies follow the rule.")
    assert "df" not in err.replace("pdf", "")
