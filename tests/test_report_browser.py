"""The report in a real browser: headless Chromium (Debian's chromium + chromium-driver).

Opens the page of a dedup run over the bundled sample from a file:// URL, checks that the
summary, both charts and a known group with its diff are rendered, that the filter finds a
document, and saves a screenshot: to ``$NEARDUP_ARTIFACTS`` when set, else to pytest's temporary
directory. Skipped only when Chromium or its driver is not installed (`.ci/run` installs both).
"""

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from neardup.cli import main

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.jsonl"

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)),
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("chromium-profile")
    # The flags keep Chromium from reaching for the network: no updates, sync or background
    # requests, so the test runs the same on a machine without network access.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--window-size=1200,1600", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    # An explicit driver path: Selenium then never tries to download one.
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    page = folder / "report.html"
    result = CliRunner().invoke(main, ["dedup", str(SAMPLE), "-o", str(folder / "groups.tsv"),
                                       "--report", str(page), "-q"])
    assert result.exit_code == 0, result.output
    return page


def test_report_renders_and_filters_in_chromium(browser, report_page, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(report_page.as_uri())
    assert browser.title == "neardup report"

    summary = browser.find_element(By.CSS_SELECTOR, "table.summary").text
    assert "documents" in summary and "2,500" in summary

    charts = browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) == 2
    for chart in charts:
        assert chart.size["height"] > 100 and chart.size["width"] > 300
        assert chart.find_elements(By.CSS_SELECTOR, "rect.bar")
    assert browser.find_elements(By.CSS_SELECTOR, "svg.chart line.threshold")

    # The sample's largest group: the Apertium translation packages (32 documents).
    group = browser.find_element(By.CSS_SELECTOR, ".group h3")
    assert group.text.startswith("group of 32: original apertium-")
    first = browser.find_element(By.CSS_SELECTOR, ".group")
    assert first.find_elements(By.CSS_SELECTOR, ".doc.diff del")
    assert first.find_elements(By.CSS_SELECTOR, ".doc.diff ins")
    assert first.find_element(By.CSS_SELECTOR, ".doc.diff ins").is_displayed()

    box = browser.find_element(By.ID, "filter")
    box.send_keys("apertium-en-gl")
    WebDriverWait(browser, 10).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#matches li"))
    matches = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#matches li")]
    assert any(m.startswith("apertium-en-gl") and "group of 32" in m for m in matches)
    assert "found" in browser.find_element(By.ID, "match-count").text

    box.clear()
    box.send_keys("no-such-document-id")
    WebDriverWait(browser, 10).until(
        lambda d: d.find_element(By.ID, "match-count").text.startswith("0 "))
    assert not browser.find_elements(By.CSS_SELECTOR, "#matches li")

    folder = Path(os.environ.get("NEARDUP_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / "report.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
