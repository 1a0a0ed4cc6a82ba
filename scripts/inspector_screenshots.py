"""Screenshots of the inspector for the README (1600x1000, headless Chromium via Playwright).

Against a running API with the demo data (see docs/inspector.md, "Screenshots"):

    .venv/bin/python scripts/inspector_screenshots.py --url http://127.0.0.1:8080 \\
        --token mpk_... --out docs/images

The key needs memory:read, memory:review and admin (every view). Writes
inspector-<view>.png for the sign-in page, the graph (Team view with the dialog open and a
node's card), the review queue, the Dreams page and My settings.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the API's base URL")
    parser.add_argument("--token", required=True, help="an API key (read, review, admin)")
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--node", default=None,
                        help="label of the node to select in the dialog (default: the first)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    def shot(page, name: str) -> None:
        page.wait_for_timeout(400)
        path = args.out / f"inspector-{name}.png"
        page.screenshot(path=str(path))
        print(f"wrote {path}")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=ARGS)
        page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
        page.goto(f"{args.url}/inspector/login")
        shot(page, "sign-in")
        page.fill("#api_key", args.token)
        page.click("button[type=submit]")
        expect(page.locator(".topbar .user")).to_be_visible()

        page.goto(f"{args.url}/inspector/graph?view=team")
        expect(page.locator("#entities-table tbody tr").first).to_be_visible()
        shot(page, "graph-tables")
        page.click("#open-graph")
        page.wait_for_function("window.inspectorGraph && window.inspectorGraph.layoutMs > 0",
                               timeout=30_000)
        page.wait_for_timeout(800)
        node = args.node or page.evaluate(
            "Object.keys(window.inspectorGraph.positions())[0]")
        page.evaluate("id => window.inspectorGraph.select(id)", node)
        expect(page.locator("#node-card")).to_be_visible()
        page.wait_for_timeout(800)
        shot(page, "graph")

        page.goto(f"{args.url}/inspector/review")
        page.wait_for_timeout(800)
        shot(page, "review")
        page.goto(f"{args.url}/inspector/dreams")
        page.wait_for_timeout(800)
        shot(page, "dreams")
        page.locator("#dreams-table a.dream-id").first.click()  # the newest Dream's detail
        expect(page.locator("#dream-detail")).to_be_visible()
        page.wait_for_timeout(400)
        shot(page, "dream-detail")
        page.goto(f"{args.url}/inspector/settings")
        shot(page, "settings")
        browser.close()


if __name__ == "__main__":
    main()
