"""Every component declares its options once (``OPTIONS``), and everything else agrees with that declaration: the
constructor's defaults, the generated flags, the reading of a system's spelling or a ``--translator-option``, and
no argparse outside ``beirx/cli/``."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import beirx
from beirx.cli import build_parser
from beirx.cli.flags import given
from beirx.evaluate.params import checked_params
from beirx.evaluate.rerankers import RERANKERS
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.subsets.system_args import parse_system
from beirx.translate.backends import TRANSLATORS
from beirx.translate.quality import QUALITY_METHODS

COMPONENTS = [("eval", RETRIEVERS, name) for name in RETRIEVERS.names()] + \
             [("eval", RERANKERS, name) for name in RERANKERS.names()] + \
             [("translate", TRANSLATORS, name) for name in TRANSLATORS.in_order()] + \
             [("quality", QUALITY_METHODS, name) for name in QUALITY_METHODS.in_order()]
ARGV = {"eval": ["eval"], "translate": ["translate", "--dataset", "d", "--lang", "es"], "quality": ["quality", "t"]}
# Options that choose whether a quality method runs and are no constructor parameter (or, for the judge's backend,
# are one with another meaning of "not given": not given, no judge).
SELECTORS = {("similarity", "skip"), ("roundtrip", "translator"), ("roundtrip", "model"), ("roundtrip", "options"),
             ("comet", "path"), ("judge", "backend"), ("judge", "model")}
# A server's connection options, which the in-process LLM translator declares (they share one flag set) only to
# refuse them by name.
SERVER_ONLY = {("hf-llm", name) for name in ("base_url", "concurrency", "timeout", "deadline", "attempts", "backoff",
                                             "breaker_failures", "breaker_seconds")}


def _parameters(cls) -> dict[str, inspect.Parameter]:
    """The constructor parameters a component's options may set (a translator's: keyword-only, over its bases)."""
    found: dict[str, inspect.Parameter] = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is not None:
            found.update(inspect.signature(init).parameters)
    return found


@pytest.mark.parametrize(("command", "registry", "name"), COMPONENTS, ids=[f"{c}-{n}" for c, _, n in COMPONENTS])
def test_constructor_defaults_are_the_declared_defaults(command, registry, name):
    cls = registry.get(name)
    parameters = _parameters(cls)
    names = [option.name for option in cls.OPTIONS]
    assert len(names) == len(set(names)), f"{name} declares an option twice"
    for option in cls.OPTIONS:
        if (name, option.name) in SELECTORS | SERVER_ONLY:
            continue
        assert option.name in parameters, f"{name}: option {option.name} is no constructor parameter"
        default = parameters[option.name].default
        if default is not inspect.Parameter.empty:
            assert option.default == default, f"{name}.{option.name}: declared {option.default!r}, constructor {default!r}"


@pytest.mark.parametrize("command", sorted(ARGV))
def test_every_declared_flag_is_in_the_parser(command):
    parser = build_parser(ARGV[command])
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices[command]
    flags = {flag for action in sub._actions for flag in action.option_strings}
    missing = [f"{name}: {option.flag_name()}" for kind, registry, name in COMPONENTS if kind == command
               for option in registry.get(name).OPTIONS if option.flag_name() and option.flag_name() not in flags]
    assert missing == []


def _sample(option) -> str:
    """A value the option accepts, as text."""
    if option.choices:
        return option.choices[-1]
    for text in ("2", "1", "0.5", "16", "all", "x"):
        try:
            option.read(text)
            return text
        except Exception:  # noqa: BLE001 - the next candidate
            continue
    raise AssertionError(f"no sample value for option {option.name}")


def _typed_flagged(cls):
    return [o for o in cls.OPTIONS if o.flag_name() and not o.switch and not o.repeat and (o.type or o.choices)]


@pytest.mark.parametrize("name", RETRIEVERS.names())
def test_a_system_spelling_and_the_flag_read_a_value_alike(name):
    cls = RETRIEVERS.get(name)
    for option in _typed_flagged(cls):
        text = _sample(option)
        argv = ["eval", "--retriever", name, option.flag_name(), text]
        from_flag = given(build_parser(argv).parse_args(argv), cls.flag_options())[option.name]
        assert parse_system(f"{name}:{option.name}={text}").params[option.name] == from_flag, option.name
        assert checked_params(cls, {option.name: text})[option.name] == from_flag, option.name


@pytest.mark.parametrize("name", RERANKERS.names())
def test_a_grid_value_and_the_reranker_flag_read_a_value_alike(name):
    cls = RERANKERS.get(name)
    for option in _typed_flagged(cls):
        text = _sample(option)
        argv = ["eval", "--reranker", name, option.flag_name(), text]
        from_flag = given(build_parser(argv).parse_args(argv), cls.OPTIONS)[option.name]
        assert checked_params(cls, {option.name: text}, owner="grid")[option.name] == from_flag, option.name


@pytest.mark.parametrize("name", TRANSLATORS.in_order())
def test_a_translator_option_and_its_flag_read_a_value_alike(name):
    cls = TRANSLATORS.get(name)
    for option in _typed_flagged(cls):
        text = _sample(option)
        argv = ["translate", "--dataset", "d", "--lang", "es", "--translator", name, option.flag_name(), text]
        from_flag = given(build_parser(argv).parse_args(argv), cls.OPTIONS)[option.name]
        assert cls.read_options({option.name: text})[option.name] == from_flag, option.name


def test_a_bad_value_is_refused_alike_naming_the_option():
    from beirx.errors import BeirxError

    with pytest.raises(BeirxError, match="system 'bm25:k1=nan': option k1: expected a finite number"):
        parse_system("bm25:k1=nan")
    with pytest.raises(BeirxError, match="hf: option beam_size: must be at least 1, got 0"):
        TRANSLATORS.get("hf").read_options({"beam_size": "0"})
    with pytest.raises(BeirxError, match="unknown option beam for the hf translator; valid options: beam_size"):
        TRANSLATORS.get("hf").read_options({"beam": "2"})
    with pytest.raises(BeirxError, match="bm25 has no parameter 'k'; its keys are b, combine, fields"):
        parse_system("bm25:k=1")


def test_no_module_outside_cli_imports_argparse_or_adds_arguments():
    """Components receive plain dictionaries; only beirx/cli/ knows argparse and the parsed namespace."""
    root = Path(beirx.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            imported = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(name.split(".")[0] == "argparse" for name in imported):
                offenders.append(f"{path.relative_to(root)}:{node.lineno} imports argparse")
            if isinstance(node, ast.Attribute) and node.attr == "add_argument":
                offenders.append(f"{path.relative_to(root)}:{node.lineno} calls add_argument")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and node.args \
                    and getattr(node.args[0], "id", None) == "args":
                offenders.append(f"{path.relative_to(root)}:{node.lineno} reads args")
    assert offenders == []


def test_a_flag_whose_value_reads_as_none_is_given():
    """``--roundtrip-sample all`` (every row) reads as None, which must not fall back to the declared default."""
    flags = [(name, option) for name in QUALITY_METHODS.in_order() for option in QUALITY_METHODS.get(name).OPTIONS
             if option.flag_name() and option.type is not None and _reads_as_none(option)]
    assert {option.flag_name() for _, option in flags} >= {"--judge-sample", "--roundtrip-sample"}
    for name, option in flags:
        argv = ARGV["quality"] + [option.flag_name(), "all"]
        values = given(build_parser(argv).parse_args(argv), QUALITY_METHODS.get(name).OPTIONS)
        assert option.name in values and values[option.name] is None, option.flag_name()
    argv = ARGV["quality"]
    assert "sample" not in given(build_parser(argv).parse_args(argv), QUALITY_METHODS.get("roundtrip").OPTIONS)


def _reads_as_none(option) -> bool:
    try:
        return option.read("all") is None
    except Exception:  # noqa: BLE001 - "all" is not a value of this option
        return False
