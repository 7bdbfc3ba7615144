"""The interpreter fingerprint: any change to an imported module or a site directory changes
it, a reinstall of the same bytes does not, and a repeated fingerprint re-reads only files that
changed."""

from __future__ import annotations

import importlib
import os
import sys
import time

from evopolicygym.judge import integrity
from evopolicygym.judge.integrity import interpreter_fingerprint, warm_digests


def _site(tmp_path):
    site = tmp_path / "site-packages"
    site.mkdir()
    module = site / "simulator.py"
    module.write_text("REWARD = 1.0\n")
    # Installed files are old; a patch lands on a later tick of the file system's clock.
    time.sleep(0.05)
    return site, module


def test_a_same_size_patch_changes_the_fingerprint(tmp_path):
    site, module = _site(tmp_path)
    before = interpreter_fingerprint([str(module)], [str(site)])
    assert interpreter_fingerprint([str(module)], [str(site)]) == before
    module.write_text("REWARD = 9.0\n")  # same size, within the same second
    assert interpreter_fingerprint([str(module)], [str(site)]) != before


def test_a_patch_with_restored_times_still_changes_the_fingerprint(tmp_path):
    site, module = _site(tmp_path)
    before = interpreter_fingerprint([str(module)], [str(site)])
    times = os.stat(module)
    module.write_text("REWARD = 9.0\n")
    os.utime(module, ns=(times.st_atime_ns, times.st_mtime_ns))  # ctime cannot be set back
    assert interpreter_fingerprint([str(module)], [str(site)]) != before


def test_a_pth_file_added_to_a_site_directory_changes_it(tmp_path):
    site, module = _site(tmp_path)
    before = interpreter_fingerprint([str(module)], [str(site)])
    (site / "zz.pth").write_text("import os\n")
    assert interpreter_fingerprint([str(module)], [str(site)]) != before


def test_a_reinstall_of_the_same_bytes_keeps_it(tmp_path):
    site, module = _site(tmp_path)
    before = interpreter_fingerprint([str(module)], [str(site)])
    replacement = site / "simulator.py.new"
    replacement.write_bytes(module.read_bytes())
    replacement.replace(module)  # a new inode with the same content
    assert interpreter_fingerprint([str(module)], [str(site)]) == before


def test_digests_taken_ahead_change_nothing_and_hide_no_later_patch(tmp_path, monkeypatch):
    site, module = _site(tmp_path)
    cold = interpreter_fingerprint([str(module)], [str(site)])
    monkeypatch.setattr(integrity, "_DIGESTS", {})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "simulator", raising=False)
    importlib.import_module("simulator")
    warm_digests().join()  # every imported module file, this one included
    assert str(module) in integrity._DIGESTS
    assert interpreter_fingerprint([str(module)], [str(site)]) == cold
    module.write_text("REWARD = 9.0\n")
    patched = interpreter_fingerprint([str(module)], [str(site)])
    assert patched != cold
    monkeypatch.setattr(integrity, "_DIGESTS", {})
    assert interpreter_fingerprint([str(module)], [str(site)]) == patched
