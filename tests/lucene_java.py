"""Real Lucene 8.7 for tests: compile a harness under tools/ with javac against the Debian liblucene8-java jars
and run it. CI installs apt packages default-jdk-headless liblucene8-java; elsewhere tests skip with the reason."""

from __future__ import annotations

import glob
import shutil
import subprocess
from pathlib import Path

JAR_DIR = Path("/usr/share/java")
_FAST_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]  # short runs: skip the optimising JIT


def jars(prefixes: tuple[str, ...]) -> list[str]:
    """The first jar of each prefix (e.g. ``lucene-core-8``) in :data:`JAR_DIR` that exists."""
    return [m[0] for p in prefixes if (m := sorted(glob.glob(str(JAR_DIR / f"{p}*.jar"))))]


def skip_reason(prefixes: tuple[str, ...]) -> str | None:
    """Why a harness needing these jars cannot run here, or None."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"{tool} not found (CI installs apt packages default-jdk-headless liblucene8-java)"
    if len(jars(prefixes)) < len(prefixes):
        return f"Lucene 8 jars {', '.join(prefixes)} not all in {JAR_DIR} (apt package liblucene8-java)"
    return None


class JavaHarness:
    """One harness source compiled into ``workdir``; :meth:`run` starts a JVM on it."""

    def __init__(self, source: Path, workdir: Path, prefixes: tuple[str, ...]) -> None:
        self.main = source.stem
        self.classpath = ":".join([*jars(prefixes), str(workdir)])
        subprocess.run(["javac", *(f"-J{flag}" for flag in _FAST_JVM), "-d", str(workdir), "-cp", self.classpath,
                        str(source)], check=True)

    def run(self, args: list[str], data: str = "") -> list[str]:
        """The harness's output lines for ``args`` with ``data`` on stdin (UTF-8)."""
        cmd = ["java", *_FAST_JVM, "-cp", self.classpath, self.main, *args]
        out = subprocess.run(cmd, input=data.encode("utf-8"), capture_output=True, check=True).stdout
        return out.decode("utf-8").split("\n")[:-1]
