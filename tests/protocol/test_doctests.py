"""Run the examples in the protocol modules' docstrings, python-chess style.

Every module of the ``protocol`` package is collected (new ones included), so
an example in a docstring is a test the day it is written.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
from types import ModuleType

import pytest

import protocol
from protocol.native import source_path

MODULES = sorted(info.name for info in pkgutil.walk_packages(protocol.__path__, prefix="protocol."))
#: The engine modules must keep working examples, not just be free of broken ones.
MUST_HAVE_EXAMPLES = {
    "protocol.rules.cards", "protocol.rules.layout", "protocol.rules.game", "protocol.deals.shuffle"
}


def from_source(name: str) -> ModuleType:
    """Module ``name`` as its source runs: a compiled one (tools/native.py) keeps no
    docstrings doctest can find, so its source is run again as a module of its own."""
    module = importlib.import_module(name)
    if module.__file__ is None or module.__file__.endswith(".py"):
        return module
    # Not beside __file__: a compiled module imported through another one names the
    # shared runtime (server/native__mypyc...so) as its file.
    spec = importlib.util.spec_from_file_location(name, source_path(name))
    assert spec is not None and spec.loader is not None
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    return source


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name: str) -> None:
    module = from_source(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} has lost its docstring examples"
