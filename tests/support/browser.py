"""Headless Chromium from Debian's package, driven through its command line: a screenshot, the DOM after the
scripts ran, and what the page reported as errors. No network: every request goes to a proxy that is not there,
so that a page which needs one shows a failed load among its errors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from html import unescape
from pathlib import Path

import pytest

# Written first into the page's head: records console.error calls, uncaught errors, failed loads (a script,
# style or image from the network) and rejected promises into an attribute of <html>, which --dump-dom shows.
RECORDER = """<script>
(() => {
  const errors = [];
  const record = (kind, text) => {
    errors.push(kind + ": " + text);
    document.documentElement.setAttribute("data-page-errors", JSON.stringify(errors));
  };
  const consoleError = console.error.bind(console);
  console.error = (...args) => { record("console.error", args.map(String).join(" ")); consoleError(...args); };
  window.addEventListener("error", (event) => record("error", event.message
    || "failed to load " + (event.target.src || event.target.href || event.target.tagName)), true);
  window.addEventListener("unhandledrejection", (event) => record("unhandled rejection", String(event.reason)));
})();
</script>"""
ERRORS_ATTRIBUTE = re.compile(r'<html[^>]*\sdata-page-errors="([^"]*)"')
UNCAUGHT = re.compile(r'CONSOLE[^\]]*\] "Uncaught[^\n]*')
OFFLINE = ["--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]
TIMEOUT_S = 60


@dataclass(frozen=True)
class Rendered:
    dom: str
    screenshot: Path
    errors: list[str]  # what the page reported, then any uncaught error in Chromium's log


def chromium() -> str:
    """The Chromium binary; fails (never skips) without it: CI installs it (.ci/run)."""
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run installs it when missing)")
    return binary


def render(page: Path, screenshot: Path, width: int, height: int) -> Rendered:
    """Open a copy of `page` with the error recorder, offline, once: a screenshot of width x height CSS pixels
    at half scale (a quarter of the pixels to read back) and the DOM once the scripts ran."""
    recorded = page.with_name(f"recorded-{page.name}")
    recorded.write_text(page.read_text(encoding="utf-8").replace("<head>", "<head>" + RECORDER, 1), encoding="utf-8")
    run = subprocess.run(
        [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", *OFFLINE,
         f"--user-data-dir={page.parent / 'chromium-profile'}", "--virtual-time-budget=5000",
         f"--window-size={width},{height}", "--force-device-scale-factor=0.5", f"--screenshot={screenshot}",
         "--enable-logging=stderr", "--v=0", "--dump-dom", recorded.resolve().as_uri()],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=True,
    )
    found = ERRORS_ATTRIBUTE.search(run.stdout)
    page_errors = json.loads(unescape(found.group(1))) if found else []
    return Rendered(run.stdout, screenshot, page_errors + UNCAUGHT.findall(run.stderr))
