"""A screenshot of a running demo's page for the docs, taken in Debian's Chromium with playwright
(never `playwright install`): sign in as a demo login, open the page, and capture the whole page or
one element of it (docs/pages.md's "GPUs held in parts" is the team page's `#shared-gpus` in the
demo). With `make demo` serving on port 8000:

    .venv/bin/python scripts/demo_screenshot.py http://127.0.0.1:8000 /teams/search/ \\
        docs/screenshots/team-shared-gpus-demo.png --login finance:finance-demo --element '#shared-gpus'

Look at the PNG before committing it.
"""
from __future__ import annotations

import argparse
import sys

CHROMIUM = "/usr/bin/chromium"
DESKTOP = {"width": 1400, "height": 900}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the demo's address, e.g. http://127.0.0.1:8000")
    parser.add_argument("path", help="the page, e.g. /teams/search/")
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("--login", default="finance:finance-demo", help="user:password (docs/demo.md)")
    parser.add_argument("--element", help="a CSS selector: capture that element only")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    username, _, password = args.login.partition(":")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_context(viewport=DESKTOP).new_page()
        page.goto(args.base + "/accounts/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        page.click("form.login button[type=submit]")
        page.wait_for_url(args.base + "/")
        page.goto(args.base + args.path)
        page.wait_for_load_state("load")
        if args.element:
            found = page.locator(args.element)
            if not found.count():
                print(f"{args.element} is not on {args.path}", file=sys.stderr)
                return 1
            found.first.screenshot(path=args.out)
        else:
            page.screenshot(path=args.out, full_page=True)
        browser.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
