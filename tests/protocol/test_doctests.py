"""Run the examples in the protocol modules' docstrings, python-chess style.

Every module of the ``protocol`` package is collected (new ones included), so
an example in a docstring is a test the day it is written.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import protocol
from protocol.native import source_path

MODULES = sorted(info.name for info in pkgutil.walk_packages(protocol.__path__, prefix="protocol."))
#: The engine modules must keep working examples, not just be free of broken ones.
MUST_HAVE_EXAMPLES = {
    "protocol.rules.cards", "protocol.rules.layout", "protocol.rules.game", "protocol.deals.shuffle"
}


def examples(name: str) -> list[doctest.DocTest]:
    """The examples in module ``name``'s docstrings, run in the module as imported.

    A compiled module (tools/native.py) keeps no docstrings doctest can find: they
    are read from its source, run again as a module of its own, and each example
    then runs among the imported module's names, so that it uses the classes every
    other module uses."""
    module = importlib.import_module(name)
    if module.__file__ is None or module.__file__.endswith(".py"):
        return doctest.DocTestFinder().find(module)
    # Not beside __file__: a compiled module imported through another one names the
    # shared runtime (server/native__mypyc...so) as its file.
    spec = importlib.util.spec_from_file_location(name, source_path(name))
    assert spec is not None and spec.loader is not None
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    found = doctest.DocTestFinder().find(source)
    for test in found:
        test.globs = dict(vars(module))
    return found


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name: str) -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for test in examples(name):
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} has lost its docstring examples"
