"""``synthmi dp audit --empirical dpsyn`` without ``--delta``.

A new user's trial (nu1): the README writes ``--delta`` in brackets, and the audit of DPSyn without it
answered "The '--delta' option must be in the open interval (0, 1) for 'dpsyn'. Got None instead." --
a range error for an option that was not given. The error now says that the option is required for
this release and why (the release is (epsilon, delta)-DP: the audit needs the claimed delta).
"""
from __future__ import annotations

import pytest

from synthmi.cli import main


@pytest.mark.parametrize("argv", [["--empirical", "dpsyn", "--eps", "1"],
                                  ["--empirical", "beta", "--mechanism", "smooth", "--eps", "1"]])
def test_missing_delta_is_named_as_missing(argv, capsys):
    assert main(["dp", "audit", *argv, "--runs", "4"]) == 1
    err = capsys.readouterr().err
    assert "The '--delta' option is required" in err and "(epsilon, delta)" in err
    assert "None" not in err


def test_out_of_range_delta_still_says_the_range(capsys):
    assert main(["dp", "audit", "--empirical", "dpsyn", "--eps", "1", "--delta", "1.5", "--runs", "4"]) == 1
    assert "must be in the open interval (0, 1) for 'dpsyn'. Got 1.5 instead." in capsys.readouterr().err
