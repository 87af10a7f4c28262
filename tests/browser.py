"""Headless Debian Chromium driven by selenium through the system chromedriver (no download: this machine is
offline; selenium-manager is never asked). Start flags keep Chromium from phoning home, which would hang it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
         "--window-size=1280,1000")


def skip_reason() -> str | None:
    """Why a browser test cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not Path(path).is_file():
            return f"{path} not found (apt install {package})"
    return None


class Browsers:
    """Starts Chromium instances, each with a fresh profile (its own cookies: one annotator each)."""

    def __init__(self) -> None:
        self.drivers = []
        self.profiles: list[str] = []

    def new(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        profile = tempfile.mkdtemp(prefix="beirx-chromium-")
        self.profiles.append(profile)
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        driver.set_page_load_timeout(30)
        self.drivers.append(driver)
        return driver

    def close(self) -> None:
        for driver in self.drivers:
            driver.quit()
        for profile in self.profiles:
            shutil.rmtree(profile, ignore_errors=True)
