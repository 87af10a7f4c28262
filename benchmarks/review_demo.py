"""A scripted review of 30 items by two annotators in headless Chromium, then ``beirx review export``.

    python benchmarks/quality_damage.py --keep WORK            # the data: 200 damaged Apertium-Spanish SciFact docs
    python benchmarks/review_demo.py WORK [--items 30] [--screenshots DIR]

It starts ``beirx review WORK/es --source WORK/en --sample 30 --quality WORK/report/quality.json``, and two
browsers (annotators "Ana" and "Ben") rate every item *from the keyboard* as the script says: the rows
quality_damage.py damaged get adequacy 1-2, the others 4-5, each annotator deviating by one point on a seeded
20% of the items (Ana also types one correction). These ratings are scripted, not human judgements: the demo
shows the app, the storage and the statistics working end to end; the figures describe the script. Screenshots
of the login page, the first item (rated, before saving) and Ben's final page go to ``--screenshots``. Needs Debian chromium and chromium-driver.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from browser import Browsers, skip_reason  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scripted(damaged: bool, annotator: str, item: str) -> tuple[int, int]:
    """(adequacy, fluency) for one item; each annotator deviates by one point on a seeded 20% of items."""
    rng = random.Random(f"{annotator}-{item}")
    adequacy, fluency = (rng.choice((1, 2)), rng.choice((2, 3))) if damaged else (rng.choice((4, 5)), rng.choice((4, 5)))
    if rng.random() < 0.2:
        adequacy = min(5, max(1, adequacy + rng.choice((-1, 1))))
    return adequacy, fluency


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("work", type=Path, help="the folder benchmarks/quality_damage.py --keep wrote")
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--screenshots", type=Path, help="save PNG screenshots here")
    args = parser.parse_args()
    if skip_reason():
        sys.exit(skip_reason())
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    damaged = json.loads((args.work / "damaged.json").read_text(encoding="utf-8"))
    dataset = args.work / "es"
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen([sys.executable, "-m", "beirx", "review", str(dataset), "--source", str(args.work / "en"),
                               "--lang", "es", "--sample", str(args.items), "--quality",
                               str(args.work / "report" / "quality.json"), "--port", str(port)], env=env)
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    browsers = Browsers()
    try:
        while True:
            try:
                urllib.request.urlopen(url + "/static/review.css", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() - started > 120:
                    sys.exit("beirx review did not start")
                time.sleep(0.3)
        from beirx.review.store import ReviewStore

        items = ReviewStore.in_folder(dataset).items()
        shots = args.screenshots
        if shots:
            shots.mkdir(parents=True, exist_ok=True)
        for name in ("Ana", "Ben"):
            driver = browsers.new()
            driver.get(url + "/")
            if shots and name == "Ana":
                driver.save_screenshot(str(shots / "review-login.png"))
            driver.find_element(By.ID, "name").send_keys(name, Keys.ENTER)
            for item in items:
                WebDriverWait(driver, 30).until(lambda d, p=item.position: d.current_url.endswith(f"/items/{p}"))
                adequacy, fluency = scripted(item.id in damaged, name, item.id)
                body = driver.find_element(By.TAG_NAME, "body")
                body.send_keys(str(adequacy), "qwert"[fluency - 1])
                if name == "Ana" and item.id in damaged and damaged[item.id] == "number":
                    box = driver.find_element(By.ID, "correction_text")
                    box.send_keys(Keys.END, " [número corregido]")
                    box.send_keys(Keys.CONTROL, Keys.ENTER)
                    continue
                if shots and name == "Ana" and item.position == 1:
                    driver.set_window_size(1280, 1750)  # the whole form: scales, errors, correction box
                    driver.save_screenshot(str(shots / "review-item.png"))
                    driver.set_window_size(1280, 1000)
                body.send_keys(Keys.ENTER)
            WebDriverWait(driver, 30).until(lambda d: d.current_url.endswith("/done"))
            if shots and name == "Ben":
                driver.save_screenshot(str(shots / "review-done.png"))
        print(f"2 annotators rated {len(items)} items in {time.monotonic() - started:.0f} s (wall, including startup)")
    finally:
        browsers.close()
        server.terminate()
        server.wait(timeout=30)
    subprocess.run([sys.executable, "-m", "beirx", "review", "export", str(dataset)], env=env, check=True)


if __name__ == "__main__":
    main()
