"""Run the examples in the protocol modules' docstrings, python-chess style.

Every module of the ``protocol`` package is collected (new ones included), so
an example in a docstring is a test the day it is written.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import protocol

MODULES = sorted(info.name for info in pkgutil.walk_packages(protocol.__path__, prefix="protocol."))
#: The engine modules must keep working examples, not just be free of broken ones.
MUST_HAVE_EXAMPLES = {
    "protocol.rules.cards", "protocol.rules.layout", "protocol.rules.game", "protocol.deals.shuffle"
}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name: str) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} has lost its docstring examples"
