"""Lazy exports: a package's name loads its submodule on first use only, then stays."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _package(tmp_path, monkeypatch):
    package = tmp_path / "lazypkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from evopolicygym._lazy import lazy_exports\n"
        "__getattr__ = lazy_exports(__name__, {'Heavy': '_heavy', 'Broken': '_broken'})\n"
    )
    (package / "_heavy.py").write_text("class Heavy:\n    pass\n")
    (package / "_broken.py").write_text("raise ImportError('a missing extra')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.startswith("lazypkg")]:
        monkeypatch.delitem(sys.modules, name)
    import lazypkg

    return lazypkg


def test_a_name_loads_its_submodule_on_first_use_and_stays(tmp_path, monkeypatch):
    lazypkg = _package(tmp_path, monkeypatch)
    assert "lazypkg._heavy" not in sys.modules
    heavy = lazypkg.Heavy
    assert "lazypkg._heavy" in sys.modules
    assert heavy is sys.modules["lazypkg._heavy"].Heavy
    assert vars(lazypkg)["Heavy"] is heavy  # kept: the next lookup is a plain attribute


def test_unknown_names_and_broken_submodules_raise_their_own_errors(tmp_path, monkeypatch):
    lazypkg = _package(tmp_path, monkeypatch)
    with pytest.raises(AttributeError, match="has no attribute 'Missing'"):
        lazypkg.Missing  # noqa: B018
    with pytest.raises(ImportError, match="a missing extra"):
        lazypkg.Broken  # noqa: B018
    assert not hasattr(lazypkg, "Missing")


def test_the_lane_host_path_loads_no_judge_model():
    # What a lane host imports (the worker module) leaves the pydantic-backed protocol
    # modules unloaded.
    code = (
        "import json, sys, evopolicygym.rollout.worker; "
        "print(json.dumps([m for m in sys.modules if m.startswith('evopolicygym.protocol.')]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    assert "evopolicygym.protocol._frames" in loaded
    assert not {"evopolicygym.protocol._journal", "evopolicygym.protocol._run_record"} & loaded


@pytest.mark.parametrize("env_id", ["toy", "gym/halfcheetah5"])
def test_a_lane_host_builds_worlds_without_pydantic(env_id):
    # What a lane host imports (the worker module, then the modules the spec's world needs)
    # and a world built from the spec the judge sends: no envspec model, so no pydantic.
    from evopolicygym.envs import get_env

    spec_json = get_env(env_id).model_dump_json(exclude={"task"})
    code = (
        "import json, sys, evopolicygym.rollout.worker as worker; "
        "from evopolicygym.envs import RuntimeSpec; "
        "[__import__(name) for name in worker.runtime_modules(sys.argv[1])]; "
        "world = RuntimeSpec(json.loads(sys.argv[1])).make_world(); world.reset(7); "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, spec_json], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []
