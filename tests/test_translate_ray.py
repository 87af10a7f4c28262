"""The Ray executor on a private local Ray instance (2 CPUs, 127.0.0.1): Apertium replicas give the
single-process bytes, and a replica killed by PID mid-run is restarted by Ray with no batch translated twice.

The reference is the single-process CLI run of test_translate_pipeline_apertium.py (20 SciFact documents,
batches of 30 segments). Backend calls are counted by a subclass of the Apertium translator that writes
a marker file when a batch starts and another when it is done, so the test can kill a replica that is
inside a batch and count finished calls across processes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from test_translate_pipeline_apertium import BATCH, FILES, manifest, reference, scifact_slice  # noqa: F401

ray = pytest.importorskip("ray", reason="the Ray extra is not installed (pip install 'beirx[ray]')")

from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.translate.backends.apertium import ApertiumTranslator  # noqa: E402
from beirx.translate.execution.ray_executor import RayExecutor  # noqa: E402
from beirx.translate.pipeline import translate_dataset  # noqa: E402
from beirx.translate.translation_memory import TranslationMemory  # noqa: E402


class CountingApertium(ApertiumTranslator):
    """Apertium that leaves ``<pid>-<id>.start`` before and ``.done`` (the segments, JSON) after each batch."""

    def __init__(self, src, tgt, model=None, *, log_dir: str, **options):
        super().__init__(src, tgt, model, **options)
        self.log_dir = Path(log_dir)

    def translate_batch(self, segments):
        stem = self.log_dir / f"{os.getpid()}-{uuid.uuid4().hex}"
        stem.with_suffix(".start").write_text("", encoding="utf-8")
        out = super().translate_batch(segments)
        stem.with_suffix(".done").write_text(json.dumps(segments), encoding="utf-8")
        return out


def factory(log_dir: str):
    return lambda: CountingApertium("en", "es", log_dir=log_dir)


@pytest.fixture(scope="module")
def local_ray():
    here = Path(__file__).resolve().parent  # replicas import this module (and beirx) by name, as pytest did
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(here), str(here.parent),
                                                             os.environ.get("PYTHONPATH")]))
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()
    if saved is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = saved


def finished_calls(log_dir: Path) -> list[list[str]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(log_dir.glob("*.done"))]


def run(scifact_slice: Path, out: Path, log_dir: Path, kill: bool = False) -> tuple[dict, list[int]]:
    log_dir.mkdir()
    executor = RayExecutor(factory(str(log_dir)), workers=2)
    killed: list[int] = []
    pids = executor.pids()

    def killer():  # SIGKILL the first replica seen inside a batch
        deadline = time.time() + 60
        while time.time() < deadline:
            for start in log_dir.glob("*.start"):
                pid = int(start.stem.split("-")[0])
                if pid in pids and not start.with_suffix(".done").exists():
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.005)

    thread = threading.Thread(target=killer, daemon=True)
    if kill:
        thread.start()
    try:
        with TranslationMemory(out.parent / "tm.sqlite") as tm:
            m = translate_dataset(BeirDataset(scifact_slice), out, CountingApertium("en", "es", log_dir=str(log_dir)),
                                  tm, batch_size=int(BATCH), progress=False, executor=executor)
    finally:
        executor.close()
    if kill:
        thread.join(5)
    return m, killed


def test_two_ray_replicas_give_the_single_process_bytes(local_ray, scifact_slice, reference, tmp_path):
    m, _ = run(scifact_slice, tmp_path / "out", tmp_path / "calls")
    for name in FILES:
        assert (tmp_path / "out" / name).read_bytes() == (reference / name).read_bytes(), name
    calls = finished_calls(tmp_path / "calls")
    pids = {int(p.stem.split("-")[0]) for p in (tmp_path / "calls").glob("*.done")}
    assert len(pids) == 2  # both replicas worked
    assert len(calls) == m.counts["batches"] and sum(map(len, calls)) == m.counts["segments_unique"]


def test_a_killed_replica_is_restarted_and_no_batch_is_translated_twice(local_ray, scifact_slice, reference, tmp_path):
    m, killed = run(scifact_slice, tmp_path / "out", tmp_path / "calls", kill=True)
    assert len(killed) == 1, "no replica was caught inside a batch"
    for name in FILES:
        assert (tmp_path / "out" / name).read_bytes() == (reference / name).read_bytes(), name
    sent = [s for call in finished_calls(tmp_path / "calls") for s in call]
    assert len(sent) == len(set(sent)) == m.counts["segments_unique"] == manifest(reference).counts["segments_unique"]
    unfinished = [p for p in (tmp_path / "calls").glob("*.start") if not p.with_suffix(".done").exists()]
    assert [int(p.stem.split("-")[0]) for p in unfinished] == killed  # the killed batch was redone elsewhere


def test_without_ray_the_error_names_the_extra(monkeypatch):
    from beirx.errors import MissingExtraError
    from beirx.translate.execution.ray_executor import RayExecutor

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'beirx\[ray\]'"):
        RayExecutor(lambda: None, workers=1)
