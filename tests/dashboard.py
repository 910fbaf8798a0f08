#!/usr/bin/env python3
"""The dashboard in a real browser (headless Chromium through selenium and chromedriver):
load it, add a seed through its form, and read from the rendered DOM that the page count
rises and the seed's host appears in the hosts table; pause that host from its row. Writes a
screenshot.

    tests/dashboard.py DASHBOARD_URL SEED_URL HOST SCREENSHOT
"""

import shutil
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def wait_for(what, check, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception:
            pass
        time.sleep(0.1)
    raise SystemExit(f"dashboard: timed out waiting for {what}")


def main():
    url, seed, host, screenshot = sys.argv[1:5]
    opts = Options()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1100"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    try:
        driver.get(url)
        text = lambda id_: driver.find_element(By.ID, id_).text
        wait_for("the first status", lambda: text("state") not in ("", "…"))
        before = int(text("pages"))
        driver.find_element(By.ID, "seed").send_keys(seed)
        driver.find_element(By.ID, "addseed").click()
        wait_for("the seed's answer", lambda: "admitted" in text("seedresult"))
        first = wait_for("pages fetched", lambda: int(text("pages")) > before and int(text("pages")))
        wait_for("the page count to rise", lambda: int(text("pages")) > first)
        wait_for(f"{host} in the hosts table",
                 lambda: host in driver.find_element(By.CSS_SELECTOR, "#hoststable tbody").text)
        # Pause the host from its row: the row says so once the API has taken it.
        row = lambda: next(r for r in driver.find_elements(By.CSS_SELECTOR, "#hoststable tbody tr")
                           if host in r.text)
        row().find_element(By.TAG_NAME, "button").click()
        wait_for(f"{host} paused", lambda: "unpause host" in row().text)
        driver.save_screenshot(screenshot)
        print(f"ok: pages {before} -> {text('pages')}, {host} listed, screenshot {screenshot}")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
