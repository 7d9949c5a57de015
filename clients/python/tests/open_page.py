"""Run by plugins/.venv's python (it has Playwright): opens URL in Chromium (/usr/bin/chromium) in a context made
from the storageState file STATE, and prints the page's URL, then (with KEY) the page's localStorage value of KEY,
then its visible text. Usage: open_page.py STATE URL [KEY]"""

import sys

from playwright.sync_api import sync_playwright

state, url = sys.argv[1], sys.argv[2]
key = sys.argv[3] if len(sys.argv) > 3 else None
with sync_playwright() as playwright:
    browser = playwright.chromium.launch(
        executable_path="/usr/bin/chromium", headless=True, chromium_sandbox=False,
        args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
    try:
        context = browser.new_context(storage_state=state)
        page = context.new_page()
        page.goto(url, timeout=30000)
        print(page.url)
        if key is not None:
            print(page.evaluate("key => localStorage.getItem(key)", key))
        print(page.inner_text("body"))
    finally:
        browser.close()
