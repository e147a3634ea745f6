"""Agent modules run on a node as one plain command, without Ansible's module packaging.

Standard library only. ``command`` builds, on the controller, a shell command
``PYTHON -I -S -c PROGRAM`` whose program carries the named modules of this package
(their sources, compressed; ``netbackends.base`` names a sub-package's module,
``netbackends`` its ``__init__``) and loads them as the package ``beonet_agent``, then runs
``main`` with the arguments as ``A``. Nothing is written to the node, nothing but the
standard library is imported (``-S``: no site-packages; ``-I``: no environment
variable and no folder of the caller's on the path), and the process is about a third
of a module's (no ``ansible.module_utils.basic``): what a long-lived helper on every
node of a big cluster, such as the discovery listener, should cost.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

PACKAGE = "beonet_agent"
# loads the modules in the order given (each after those it imports; a sub-package's
# __init__ after its own modules, which find their package made for them), then runs main
_LOADER = """import base64,json,sys,types,zlib
S=json.loads(zlib.decompress(base64.b64decode('%(sources)s')))
def L(n,k):
 f='%(package)s'+('.'+n if n else '');m=sys.modules.get(f)
 if m is None:
  m=types.ModuleType(f);sys.modules[f]=m
  if n:q,_,t=n.rpartition('.');setattr(L(q,1),t,m)
 m.__package__=f if k else f.rpartition('.')[0]
 if k:m.__path__=[]
 return m
for n,s,k in S:
 exec(compile(s,'%(package)s/'+n.replace('.','/')+('/__init__' if k else '')+'.py','exec'),L(n,k).__dict__)
A=json.loads(base64.b64decode('%(args)s'))
"""


def _packed(data: Any) -> str:
    return base64.b64encode(zlib.compress(json.dumps(data).encode("utf-8"), 9)).decode("ascii")


def sources(names: Sequence[str]) -> list[tuple[str, str, bool]]:
    """(name, source, whether a package) of this package's modules, by name (``sub.mod``
    for a sub-package's module, ``sub`` for its ``__init__``), in the order given."""
    folder = os.path.dirname(os.path.abspath(__file__))
    out = []
    for name in names:
        path = os.path.join(folder, *name.split("."))
        package = os.path.isdir(path)
        with open(os.path.join(path, "__init__.py") if package else path + ".py", encoding="utf-8") as fh:
            out.append((name, fh.read(), package))
    return out


def program(names: Sequence[str], main: str, args: Mapping[str, Any]) -> str:
    """The Python program: the modules loaded as beonet_agent.NAME, then main (which
    finds them in sys.modules and its arguments in A)."""
    loader = _LOADER % {"sources": _packed(sources(names)), "package": PACKAGE,
                        "args": base64.b64encode(json.dumps(dict(args)).encode("utf-8")).decode("ascii")}
    return loader + main


def command(names: Sequence[str], main: str, args: Mapping[str, Any], python: str = "python3") -> str:
    """The shell command that runs program(names, main, args) with python."""
    return "%s -I -S -c %s" % (shlex.quote(python), shlex.quote(program(names, main, args)))
