"""tkchat's test suite: one package, so that pytest and the tests' own ``from tests.conftest
import ...`` load the same conftest module (two copies had two lists of Tk callback errors,
and the fixture that fails a test whose callback raised read the one nobody wrote to)."""
