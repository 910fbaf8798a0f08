#!/usr/bin/env python3
"""The dashboard in a real browser (headless Chromium through selenium and chromedriver):
load it, add a seed through its form, and read from the rendered DOM that the page count
rises and the seed's host appears in the hosts table; pause that host from its row; pause
and resume the crawl; reload and find the last errors listed; pick the service's second
crawl from the crawl selector and see its figures instead. Before that, a page of another
origin (served here on another port) tries to pause the crawl with a cross-site form and a
fetch(): the API refuses both, seen from its status. Writes a screenshot.

    tests/dashboard.py DASHBOARD_URL SEED_URL HOST SCREENSHOT
"""

import re
import http.server
import json
import shutil
import sys
import threading
import time
import urllib.request

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


ATTACK = """<!doctype html><html><body>
<form id="f" method="POST" action="{api}/api/v1/pause" enctype="text/plain" target="sink"></form>
<iframe name="sink"></iframe>
<script>
document.getElementById("f").submit();
fetch("{api}/api/v1/pause", {{method: "POST", headers: {{"Content-Type": "application/json"}},
  body: "{{}}"}}).then(() => document.title = "fetch passed", () => document.title = "fetch refused");
</script></body></html>"""


def attacker_site(api):
    """Serves ATTACK on another loopback port: another origin than the dashboard's."""
    page = ATTACK.format(api=api).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def api_state(api):
    with urllib.request.urlopen(api + "/api/v1/status", timeout=10) as r:
        return json.load(r)["state"]


def main():
    url, seed, host, screenshot = sys.argv[1:5]
    opts = Options()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1100"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    api = url.rstrip("/")
    try:
        # Another origin tries to pause the crawl: a form (text/plain, no preflight) and a
        # fetch() with JSON (preflighted; the API grants no CORS).
        evil = attacker_site(api)
        driver.get(f"http://127.0.0.1:{evil.server_port}/")
        wait_for("the attacker's fetch to fail", lambda: driver.title == "fetch refused", 30)
        time.sleep(0.5)
        if api_state(api) == "paused":
            raise SystemExit("dashboard: a page of another origin paused the crawl")
        evil.shutdown()
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
        # Its delay says why (the term that sets it).
        wait_for(f"{host}'s delay and its reason",
                 lambda: re.search(r"\d+ \((configured|operator|crawl-delay|latency|backoff)\)",
                                   row().text))
        row().find_element(By.TAG_NAME, "button").click()
        wait_for(f"{host} paused", lambda: "unpause host" in row().text)
        # The crawl's own pause and resume, as the dashboard sends them.
        driver.find_element(By.ID, "pause").click()
        wait_for("the crawl paused", lambda: text("state") == "paused" and api_state(api) == "paused")
        driver.find_element(By.ID, "resume").click()
        wait_for("the crawl resumed", lambda: text("state") != "paused" and api_state(api) != "paused")
        # Pages come due again (recrawl every 2 s): the recrawl cards show the schedule and
        # the share of refetches that found a change.
        wait_for("the recrawl cards", lambda: driver.find_element(By.ID, "recrawl").is_displayed()
                 and "% of" in text("changedshare") and text("nextdue") != "–")
        # Opened again, the page lists the errors the crawl kept (the site has error pages).
        driver.get(url)
        wait_for("the last errors listed",
                 lambda: len(driver.find_elements(By.CSS_SELECTOR, "#errors div")) > 0, 90)
        driver.save_screenshot(screenshot)
        pages = text("pages")
        # The service holds a second crawl ("news", empty): the selector shows both, and
        # choosing it shows that crawl's figures and hosts, not the default one's.
        select = lambda: driver.find_element(By.ID, "crawl")
        wait_for("the crawl selector", lambda: select().is_displayed()
                 and [o.text for o in select().find_elements(By.TAG_NAME, "option")]
                 == ["crawl DEFAULT", "crawl news"])
        select().find_elements(By.TAG_NAME, "option")[1].click()
        wait_for("the crawl news shown", lambda: driver.current_url.endswith("/?crawl=news")
                 and text("state") not in ("", "…") and text("pages") == "0"
                 and driver.find_element(By.CSS_SELECTOR, "#hoststable tbody").text == "")
        print(f"ok: pages {before} -> {pages}, {host} listed, crawl news selected, "
              f"screenshot {screenshot}")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
