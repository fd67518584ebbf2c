"""The report in a real browser: headless Chromium loads it without console
messages and renders a non-blank first screen.

Where no Chromium exists the test is skipped with one clear reason; CI
(``.ci/run``) installs the Debian package ``chromium`` first.
"""
from __future__ import annotations

import pytest

from synthmi.report.browser import find_chromium, png_pixel_std, render
from synthmi.report.html import write_report

from _report_fixtures import fake_report_data

CHROMIUM = find_chromium()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH: install the Debian package 'chromium' to run the browser test"),
]

# A rendered page of text and figures has grey-level std ~0.2 (measured 0.24
# on the report); a blank page has exactly 0. 0.05 separates them widely.
NON_BLANK_STD = 0.05


@pytest.mark.slow
def test_report_renders_in_chromium_without_console_errors(tmp_path):
    # positive controls first, so a broken detector cannot pass silently:
    # a console error is caught and a blank page measures as blank
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><p>x</p><script>console.error("boom-7f3a")</script></body></html>')
    res = render(bad, tmp_path / "bad.png")
    assert any("boom-7f3a" in c for c in res.console)
    blank = tmp_path / "blank.html"
    blank.write_text("<html><body></body></html>")
    res = render(blank, tmp_path / "blank.png")
    assert res.console == [] and png_pixel_std(res.screenshot) < 1e-9

    page = write_report(fake_report_data(), tmp_path / "report.html")
    res = render(page, tmp_path / "shot.png")
    assert res.returncode == 0, res.log[-2000:]
    assert res.console == []
    assert png_pixel_std(res.screenshot) > NON_BLANK_STD
