"""The report in a real browser: headless Chromium (Debian's chromium + chromium-driver).

Opens the page of a dedup run over the bundled sample from a file:// URL, checks that the
summary, both charts and known groups (English and Korean) with their diffs are rendered, that
the filter finds a document and links to its group, and saves two screenshots, ``report.png``
(the top: summary and charts) and ``report-filter.png`` (the filter's answer): to
``$NEARDUP_ARTIFACTS`` when set, else to pytest's temporary directory. A second page, of Japanese
and Chinese texts, checks their per-character diffs as the browser shows them. Skipped only when
Chromium or its driver is not installed (`.ci/run` installs both, and CJK fonts for the
screenshots).
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

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)),
        reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
    ),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("chromium-profile")
    # The flags keep Chromium from reaching for the network: no updates, sync or background
    # requests, and no host name resolves (a file:// page needs none; Chromium still looks up
    # Google's account and update hosts otherwise), so the test runs the same offline.
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost",
        "--window-size=1200,1600",
        f"--user-data-dir={profile}",
    ):
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
    result = CliRunner().invoke(
        main, ["dedup", str(SAMPLE), "-o", str(folder / "groups.tsv"), "--report", str(page), "-q"]
    )
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

    # The sample's largest group: the Apertium translation packages (42 documents).
    group = browser.find_element(By.CSS_SELECTOR, ".group h3")
    assert group.text.startswith("group of 42: original apertium-")
    first = browser.find_element(By.CSS_SELECTOR, ".group")
    assert first.find_elements(By.CSS_SELECTOR, ".doc.diff del")
    assert first.find_elements(By.CSS_SELECTOR, ".doc.diff ins")
    assert first.find_element(By.CSS_SELECTOR, ".doc.diff ins").is_displayed()

    # A Korean group of the sample: OpenStack Aodh's packages, diffed word by word.
    korean = browser.find_element(By.ID, "group-ko:aodh-api#6b8d05cc")
    assert (
        korean.find_element(By.TAG_NAME, "h3").text == "group of 9: original ko:aodh-api#6b8d05cc"
    )
    assert "알람" in korean.find_element(By.CSS_SELECTOR, ".doc.original").text
    added = [e.text for e in korean.find_elements(By.CSS_SELECTOR, ".doc.diff ins")]
    assert "알람 평가기" in added  # aodh-evaluator: "API 서버" became "알람 평가기"

    folder = Path(os.environ.get("NEARDUP_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    browser.execute_script("window.scrollTo(0, 0)")
    assert browser.save_screenshot(str(folder / "report.png"))

    box = browser.find_element(By.ID, "filter")
    box.send_keys("apertium-en-gl")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#matches li"))
    matches = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#matches li")]
    assert any(m.startswith("apertium-en-gl") and "group of 42" in m for m in matches)
    assert "found" in browser.find_element(By.ID, "match-count").text
    browser.execute_script("document.getElementById('find').scrollIntoView()")
    assert browser.save_screenshot(str(folder / "report-filter.png"))
    browser.find_element(By.CSS_SELECTOR, "#matches li a").click()
    assert browser.current_url.endswith("#group-apertium-afr-nld%23c2e2651d")

    box.clear()
    box.send_keys("no-such-document-id")
    WebDriverWait(browser, 10).until(
        lambda d: d.find_element(By.ID, "match-count").text.startswith("0 ")
    )
    assert not browser.find_elements(By.CSS_SELECTOR, "#matches li")

    for name in ("report.png", "report-filter.png"):
        assert (folder / name).stat().st_size > 10_000


def test_chinese_and_japanese_diffs_render_per_character(browser, tmp_path):
    from selenium.webdriver.common.by import By

    from neardup.report import RunData, render

    run = RunData.from_columns(
        ["ja-1", "ja-2", "zh-1", "zh-2"],
        ["ja-1", "ja-1", "zh-1", "zh-1"],
        (["ja-1", "zh-1"], ["ja-2", "zh-2"]),
        [0.8, 0.75],
    )
    texts = {
        0: "東京は今日も晴れています。",
        1: "東京は今日も雨が降っています。",
        2: "北京今天天气很好。",
        3: "北京今天天气不好。",
    }
    page = tmp_path / "cjk.html"
    page.write_text(render(run, texts, "近似重複 レポート"), encoding="utf-8")
    browser.get(page.as_uri())
    assert browser.title == "近似重複 レポート"
    japanese = browser.find_element(By.ID, "group-ja-1")
    assert japanese.find_element(By.CSS_SELECTOR, ".doc.original").text == texts[0]
    assert [e.text for e in japanese.find_elements(By.CSS_SELECTOR, ".doc.diff del")] == ["晴れ"]
    assert [e.text for e in japanese.find_elements(By.CSS_SELECTOR, ".doc.diff ins")] == [
        "雨が降っ"
    ]
    chinese = browser.find_element(By.ID, "group-zh-1")
    assert [e.text for e in chinese.find_elements(By.CSS_SELECTOR, ".doc.diff del")] == ["很"]
    assert [e.text for e in chinese.find_elements(By.CSS_SELECTOR, ".doc.diff ins")] == ["不"]
