#!/usr/bin/env bash
# Set up EvoPolicyGym without Nix: the steps uv cannot do by itself.
# Run from anywhere; it works on the repository that contains it. See --help.
set -euo pipefail

MINIWOB_REV="7fd85d71a4b60325c6585396ec4f48377d049838"
MINIWOB_SOURCE="${EVOPOLICYGYM_MINIWOB_SOURCE:-https://github.com/Farama-Foundation/miniwob-plusplus.git}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MINIWOB_DIR="$REPO/third_party/miniwob-plusplus"

# Debian/Ubuntu packages per step. Wheels bring MuJoCo, Box2D and the simulators themselves;
# these are the shared libraries and tools around them.
APT_SMOKE=(bubblewrap git)
APT_CORE=(bubblewrap git ffmpeg libegl1 libgl1 libgl1-mesa-dri libosmesa6 swig)
APT_WEB=(git chromium)

usage() {
  cat <<EOF
Usage: workflow/scripts/setup.sh [STEP...] [--no-system] [--dry-run]

Prepares this checkout for EvoPolicyGym on a machine without Nix. Python packages come from
pyproject.toml extras and uv.lock through 'uv sync'; this script adds what uv cannot install.

Steps (at least one):
  --smoke        base install + dev tools: enough for 'uv run snakemake smoke --cores 2'
                 (apt: ${APT_SMOKE[*]})
  --core         Core-16 simulators (Box2D, MuJoCo, MiniGrid, HighwayEnv, Robotics) and the
                 SLURM/Kubernetes executor plugins (apt: ${APT_CORE[*]})
  --web          BrowserGym and Debian's Chromium (apt: ${APT_WEB[*]}), and MiniWoB++ at
                 commit $MINIWOB_REV in third_party/miniwob-plusplus (if it cannot be
                 cloned, the pages shipped in the miniwob wheel are used instead)
  --atari-roms   ale-py and a check that its Atari ROMs are present (AutoROM if they are not)

Options:
  --no-system    skip apt-get (print the packages instead); for machines where you are not root
  --dry-run      print every command instead of running it
  -h, --help     this text

Environment:
  EVOPOLICYGYM_MINIWOB_SOURCE  git URL or path to clone MiniWoB++ from (a mirror, when GitHub
                               is unreachable); default $MINIWOB_SOURCE

Steps add to one environment (.venv, or \$UV_PROJECT_ENVIRONMENT); running the script again
with another step keeps what earlier steps installed. The jax and mario extras
conflict (numpy); give each its own: UV_PROJECT_ENVIRONMENT=.venv-jax uv sync --extra jax
EOF
}

say() { printf 'setup: %s\n' "$*"; }
die() {
  printf 'setup: error: %s\n' "$1" >&2
  shift
  for line in "$@"; do printf 'setup:   %s\n' "$line" >&2; done
  exit 1
}

run() {
  if ((DRY_RUN)); then
    printf '+ %s\n' "$*"
  else
    "$@"
  fi
}

want_smoke=0 want_core=0 want_web=0 want_atari=0 SYSTEM=1 DRY_RUN=0
if (($# == 0)); then
  usage >&2
  exit 2
fi
for arg in "$@"; do
  case "$arg" in
    --smoke) want_smoke=1 ;;
    --core) want_core=1 ;;
    --web) want_web=1 ;;
    --atari-roms) want_atari=1 ;;
    --no-system) SYSTEM=0 ;;
    --dry-run) DRY_RUN=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      printf 'setup: unknown option %s (see --help)\n' "$arg" >&2
      exit 2
      ;;
  esac
done
if ((want_smoke + want_core + want_web + want_atari == 0)); then
  printf 'setup: choose at least one step: --smoke, --core, --web or --atari-roms\n' >&2
  exit 2
fi

cd "$REPO"

if ! command -v uv >/dev/null 2>&1 && ((!DRY_RUN)); then
  die "uv is not installed." \
    "Install it with 'pip install uv' (or the official installer), then run this script again."
fi

is_debian_like() {
  [[ -r /etc/os-release ]] && grep -Eq '^(ID|ID_LIKE)=.*(debian|ubuntu)' /etc/os-release
}

install_system_packages() {
  local packages=("$@")
  if ((!SYSTEM)); then
    say "skipping system packages (--no-system); install them yourself: ${packages[*]}"
    return
  fi
  if ! is_debian_like; then
    say "not Debian/Ubuntu: install the equivalents of these packages yourself: ${packages[*]}"
    return
  fi
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 ||
      die "installing ${packages[*]} needs root." "Run as root, or rerun with --no-system."
    sudo=(sudo)
  fi
  say "installing system packages: ${packages[*]}"
  run "${sudo[@]}" apt-get update -qq ||
    die "apt-get update failed." "Check network access to your Debian/Ubuntu mirror, or use --no-system."
  run "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" ||
    die "apt-get install failed for: ${packages[*]}"
}

# One 'uv sync' for all requested extras; --inexact keeps packages that earlier runs of this
# script installed for other steps.
extras=(dev)
apt_packages=()
((want_smoke)) && apt_packages+=("${APT_SMOKE[@]}")
((want_core)) && extras+=(core cluster) && apt_packages+=("${APT_CORE[@]}")
((want_web)) && extras+=(web) && apt_packages+=("${APT_WEB[@]}")
((want_atari)) && extras+=(atari)

if ((${#apt_packages[@]})); then
  mapfile -t apt_packages < <(printf '%s\n' "${apt_packages[@]}" | sort -u)
  install_system_packages "${apt_packages[@]}"
fi

# MiniWoB++ first: it is the step most likely to fail offline, and it fails fast.
if ((want_web)); then
  if [[ -d "$MINIWOB_DIR/.git" ]] &&
    [[ "$(git -C "$MINIWOB_DIR" rev-parse HEAD 2>/dev/null)" == "$MINIWOB_REV" ]]; then
    say "MiniWoB++ already at $MINIWOB_REV in $MINIWOB_DIR"
  else
    if [[ -e "$MINIWOB_DIR" ]] && ((!DRY_RUN)); then
      die "$MINIWOB_DIR exists but is not a MiniWoB++ checkout at $MINIWOB_REV." \
        "Move it away, then run this script again."
    fi
    say "cloning MiniWoB++ from $MINIWOB_SOURCE"
    run mkdir -p "$REPO/third_party"
    if ! run git clone --quiet "$MINIWOB_SOURCE" "$MINIWOB_DIR"; then
      say "warning: could not clone MiniWoB++ from $MINIWOB_SOURCE (offline or GitHub unreachable?);" \
        "using the pages of the miniwob wheel. For the pinned pages, point EVOPOLICYGYM_MINIWOB_SOURCE" \
        "at a mirror or a local clone and run this step again."
      rm -rf "$MINIWOB_DIR"
    elif ! run git -C "$MINIWOB_DIR" -c advice.detachedHead=false checkout --quiet "$MINIWOB_REV"; then
      rm -rf "$MINIWOB_DIR"
      say "warning: commit $MINIWOB_REV is not in $MINIWOB_SOURCE; using the pages of the miniwob" \
        "wheel. Use a clone of Farama-Foundation/miniwob-plusplus that contains it."
    fi
  fi
fi

sync_args=()
for extra in "${extras[@]}"; do sync_args+=(--extra "$extra"); done
say "installing Python packages from uv.lock: uv sync --locked --inexact --compile-bytecode ${sync_args[*]}"
run uv sync --locked --inexact --compile-bytecode "${sync_args[@]}" ||
  die "uv sync failed." \
    "Offline? uv needs PyPI (or a mirror set with UV_INDEX_URL) for packages not yet in its cache." \
    "Lock out of date? Run 'uv lock' after editing pyproject.toml."

if ((want_web)); then
  if [[ -d "$MINIWOB_DIR/.git" ]] || ((DRY_RUN)); then
    say "MiniWoB++ pages: $MINIWOB_DIR/miniwob/html/miniwob/ (found by itself; MINIWOB_URL overrides it)"
  else
    say "MiniWoB++ pages: the miniwob wheel's (MINIWOB_URL overrides them)"
  fi
  if [[ -n "${EVOPOLICYGYM_CHROMIUM:-}" ]] || command -v chromium >/dev/null 2>&1; then
    say "browser: ${EVOPOLICYGYM_CHROMIUM:-$(command -v chromium)}"
  else
    say "warning: no chromium found; install Debian's chromium package (apt-get install chromium)" \
      "or set EVOPOLICYGYM_CHROMIUM to a Chromium binary"
  fi
fi

if ((want_atari)); then
  rom_check=(uv run --no-sync python -c
    "from ale_py import roms; ids = roms.get_all_rom_ids(); assert ids, 'no ROMs'; print(len(ids), 'Atari ROMs')")
  if ((DRY_RUN)); then
    run "${rom_check[@]}"
    run uv run --no-sync --with autorom AutoROM --accept-license
    say "(dry run: AutoROM runs only if the check finds no ROMs)"
  elif "${rom_check[@]}"; then
    say "Atari ROMs are installed (ale-py >= 0.9 ships them)"
  else
    say "ale-py has no ROMs; fetching them with AutoROM (you accept the ROM license)"
    run uv run --no-sync --with autorom AutoROM --accept-license ||
      die "AutoROM could not download the ROMs." "It needs network access; on an offline machine copy the ROMs from one that has them."
    run "${rom_check[@]}" || die "ROMs are still missing after AutoROM."
  fi
fi

say "done. Next: uv run snakemake smoke --cores 2"
