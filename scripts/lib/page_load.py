#!/usr/bin/env python3
"""Loads one page in a fresh headless Chromium and prints the milliseconds to its `load` event
(Navigation Timing's loadEventEnd): no cache, no connection or TLS session kept from before.
Run by scripts/bench-canvas --browser, inside a network namespace when it measures a delayed link.

    page_load.py URL [--spki BASE64]...   # --spki: a pinned key (Chromium's --ignore-certificate-errors-spki-list)
"""
import argparse, json, shutil, sys, tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

args = argparse.ArgumentParser()
args.add_argument("url")
args.add_argument("--spki", action="append", default=[])
args.add_argument("--count", type=int, default=1, help="loads, each in a fresh browser")
opts = args.parse_args()

for _ in range(opts.count):
    profile = tempfile.mkdtemp(prefix="page-load-")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disk-cache-size=1",
                 "--no-first-run", "--disable-extensions", "--disable-background-networking", f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    if opts.spki:
        options.add_argument("--ignore-certificate-errors-spki-list=" + ",".join(opts.spki))
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.set_page_load_timeout(120)
        driver.get(opts.url)
        WebDriverWait(driver, 120).until(lambda d: d.execute_script(
            "const n = performance.getEntriesByType('navigation')[0]; return n && n.loadEventEnd > 0"))
        timing = driver.execute_script("""
            const n = performance.getEntriesByType('navigation')[0];
            const r = performance.getEntriesByType('resource');
            return {load: n.loadEventEnd, resources: r.length,
                    failed: r.filter(e => e.responseStatus && e.responseStatus !== 200).map(e => e.name + " " + e.responseStatus),
                    bytes: r.reduce((s, e) => s + (e.encodedBodySize || 0), 0)};""")
        print(json.dumps(timing), flush=True)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
sys.exit(0)
