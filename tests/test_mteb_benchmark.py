"""``beirx mteb benchmark``: task files and a benchmark.py that mteb loads (an ``mteb.Benchmark`` of them), user text
entering the file only as literals, and a file that does not round-trip refused."""

from __future__ import annotations

import ast

import pytest

from conftest import TINY_CORPUS, TINY_QRELS, TINY_QUERIES, write_beir

from beirx.cli import main
from beirx.errors import BeirxError
from extras import needs

mteb = needs("mteb", "mteb")
needs("pyarrow", "hub")


def test_benchmark_of_two_datasets_loads_with_mteb(tmp_path, capsys):
    from beirx.publish.mteb_benchmark import load_benchmark

    a = write_beir(tmp_path / "alpha", TINY_CORPUS, TINY_QUERIES, TINY_QRELS)
    b = write_beir(tmp_path / "beta", TINY_CORPUS[:4], TINY_QUERIES, {"test": TINY_QRELS["test"][:3]})
    name = 'Tricky "name"\n""" + __import__("os").system("x") #'
    assert main(["mteb", "benchmark", str(a), str(b), "--name", name, "--output", str(tmp_path / "bench"),
                 "--contact", "someone"]) == 0
    assert "2 tasks (alpha, beta)" in capsys.readouterr().out
    source = (tmp_path / "bench" / "benchmark.py").read_text(encoding="utf-8")
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]
    assert {ast.unparse(c.func) for c in calls} == {"Path", "Path(__file__).resolve", "importlib.util.spec_from_file_location",
                                                     "importlib.util.module_from_spec", "module_spec.loader.exec_module",
                                                     "getattr(module, class_name)", "getattr", "_task", "Benchmark"}
    benchmark = load_benchmark(tmp_path / "bench")
    assert isinstance(benchmark, mteb.Benchmark) and benchmark.name == name and benchmark.contacts == ["someone"]
    assert [t.metadata.name for t in benchmark.tasks] == ["alpha", "beta"]
    assert [t.metadata.dataset["revision"] for t in benchmark.tasks][0].startswith("local-")
    assert "thakur2021beir" in benchmark.citation and "2 retrieval tasks (eng-Latn)" in benchmark.description


def test_a_benchmark_file_that_does_not_round_trip_is_refused():
    from beirx.publish.mteb_benchmark import BenchmarkSpec, benchmark_source, check_benchmark_source

    spec = BenchmarkSpec(name="b", description="d", citation="c", tasks=[("t.py", "T")])
    source = benchmark_source(spec)
    check_benchmark_source(source, spec)
    for tampered in (source.replace('name="b"', 'name="x"'), source + "import os\nos.system('x')\n",
                     source.replace('TASK_FILES = [("t.py", "T")]', 'TASK_FILES = [("u.py", "T")]')):
        with pytest.raises(BeirxError, match="does not round-trip"):
            check_benchmark_source(tampered, spec)
