#!/usr/bin/env python3
"""Open qexp pages in headless Chromium and fail on a console error or a
broken image.

    check.py [--screenshots DIR] [--self-test] PAGE.html [PAGE.html ...]

Each page is loaded from disk (file://) in a fresh headless Chromium
(Debian's chromium with /usr/bin/chromedriver, through Selenium). A page
fails when the browser's console logged an error (a resource that did not
load, a script error), when an <img> did not decode (naturalWidth 0), when
it has no inline SVG chart, or when an SVG file it links to is missing.
For each page it prints what it found: images, inline SVG charts, the
page's title.

--self-test first plants a broken image in a copy of the first page and
checks that this copy fails, so a check that can no longer fail is noticed.
Exit status: 0 every page clean, 1 a page failed, 2 bad usage.
"""

import argparse
import pathlib
import shutil
import sys
import tempfile
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,1600",
]

BROKEN_IMAGES = """
return Array.from(document.images)
  .filter(i => !i.complete || i.naturalWidth === 0)
  .map(i => i.getAttribute('src'));
"""


# Chart files a page links to (the report links each SVG beside it).
LINKED_SVGS = """
return Array.from(document.querySelectorAll('a[href$=".svg"]'))
  .map(a => a.href)
  .filter(h => h.startsWith('file:'));
"""


def browser(profile: str) -> webdriver.Chrome:
    opts = webdriver.ChromeOptions()
    for f in FLAGS:
        opts.add_argument(f)
    opts.add_argument(f"--user-data-dir={profile}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def check(page: pathlib.Path, screenshots: pathlib.Path | None) -> list[str]:
    """The problems of one page, empty when it is clean."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="qexp-chromium-") as profile:
        driver = browser(profile)
        try:
            driver.get(page.resolve().as_uri())
            broken = driver.execute_script(BROKEN_IMAGES)
            linked = driver.execute_script(LINKED_SVGS)
            images = driver.execute_script("return document.images.length")
            svgs = driver.execute_script("return document.querySelectorAll('svg').length")
            title = driver.title
            for entry in driver.get_log("browser"):
                if entry.get("level") == "SEVERE":
                    problems.append(f"console error: {entry.get('message')}")
            problems.extend(f"broken image: {src}" for src in broken)
            if svgs == 0:
                problems.append("no chart: the page has no inline SVG")
            for href in linked:
                target = pathlib.Path(urllib.parse.unquote(urllib.parse.urlparse(href).path))
                if not target.is_file():
                    problems.append(f"linked chart missing: {href}")
            if screenshots is not None:
                screenshots.mkdir(parents=True, exist_ok=True)
                shot = screenshots / (page.parent.name + "-" + page.stem + ".png")
                driver.save_screenshot(str(shot))
                print(f"browser-check: screenshot {shot}")
        finally:
            driver.quit()
    state = "ok" if not problems else "FAILED"
    print(f"browser-check: {state} {page} — title {title!r}, {images} image(s), {svgs} inline SVG chart(s)")
    for p in problems:
        print(f"browser-check:   {p}")
    return problems


def self_test(page: pathlib.Path) -> bool:
    """A copy of `page` with a broken image planted must fail the check."""
    with tempfile.TemporaryDirectory(prefix="qexp-planted-") as d:
        copy = pathlib.Path(d) / page.name
        shutil.copy(page, copy)
        text = copy.read_text(encoding="utf-8")
        planted = '<img src="planted-missing-chart.svg" alt="planted" />'
        copy.write_text(text.replace("</body>", planted + "\n</body>", 1), encoding="utf-8")
        print("browser-check: self-test: a copy with a planted broken image must fail")
        failed = bool(check(copy, None))
    print(f"browser-check: self-test {'passed (the planted image was caught)' if failed else 'FAILED: the planted image went unnoticed'}")
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="+", type=pathlib.Path)
    ap.add_argument("--screenshots", type=pathlib.Path)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    missing = [p for p in args.pages if not p.is_file()]
    if missing:
        print(f"browser-check: no such page: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    if args.self_test and not self_test(args.pages[0]):
        return 1
    failed = [p for p in args.pages if check(p, args.screenshots)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
