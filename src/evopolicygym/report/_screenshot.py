"""A picture of a report as a person sees it: ``report.html`` rendered by headless Chromium."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

# Headless, and quiet on a machine without network: no first-run UI, no background fetches.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
LAPTOP = (1366, 900)


class ScreenshotError(RuntimeError):
    """No Chromium, or Chromium did not write the picture."""


def screenshot(page: Path, output: Path, *, size: tuple[int, int] = LAPTOP) -> Path:
    """Render ``page`` at ``size`` (a laptop screen by default) into the PNG ``output``.
    Chromium comes from ``$EVOPOLICYGYM_CHROMIUM``, ``/usr/bin/chromium`` or ``PATH``. Raises
    :class:`ScreenshotError` saying how to install it, or with Chromium's own message."""
    from ..envs.web import find_chromium

    browser = find_chromium()
    if browser is None:
        raise ScreenshotError("no Chromium to render the report: apt-get install chromium")
    output = Path(output).resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="evopolicygym-chromium-") as profile:
        result = subprocess.run(
            [
                str(browser),
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={size[0]},{size[1]}",
                f"--screenshot={output}",
                Path(page).resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
    if not output.is_file():
        raise ScreenshotError(f"Chromium wrote no screenshot: {result.stderr.strip()[-500:]}")
    return output
