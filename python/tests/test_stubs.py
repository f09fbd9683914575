"""The type stubs (.pyi) name what the module has: every function and
class a stub declares exists, and every public function of the module has
a stub, so that neither drifts from the other."""
import ast
import os

import pytest

import nascent

STUBS = os.path.dirname(nascent.__file__)
MODULES = {"__init__": nascent, "nn": nascent.nn, "optim": nascent.optim,
           "llama": nascent.llama, "models": nascent.models}


def declared(name):
    with open(os.path.join(STUBS, name + ".pyi")) as f:
        tree = ast.parse(f.read())
    return {n.name for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_stubs_match_the_module(name):
    module, names = MODULES[name], declared(name)
    # Private names (_GradMode) stay in the extension module.
    where = nascent._nascent if name == "__init__" else module
    missing = sorted(n for n in names if not hasattr(where, n))
    assert not missing, f"{name}.pyi declares what the module lacks: {missing}"
    public = {n for n, v in vars(module).items()
              if not n.startswith("_") and callable(v)
              and not isinstance(v, type(nascent))}
    unstubbed = sorted(n for n in public - names
                       if not isinstance(getattr(module, n), nascent.dtype))
    assert not unstubbed, f"{name}.pyi lacks stubs for {unstubbed}"
