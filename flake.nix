{
  description = "EvoPolicyGym: one development shell per environment family";

  # Pattern: Nix provides Python, uv and the system libraries; uv installs the Python packages
  # from pyproject.toml extras and uv.lock into a per-family virtual environment. Nixpkgs'
  # Python package set is not used for the benchmark itself, so the versions are exactly those
  # of uv.lock on every machine, with or without Nix.
  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.05";
    # MiniWoB++ pages served to BrowserGym from a file:// URL. Pinned by commit; `nix flake lock`
    # records its narHash in flake.lock (it cannot be computed without network access).
    miniwob = {
      url = "github:Farama-Foundation/miniwob-plusplus/7fd85d71a4b60325c6585396ec4f48377d049838";
      flake = false;
    };
  };

  outputs =
    {
      self,
      nixpkgs,
      miniwob,
    }:
    let
      lib = nixpkgs.lib;
      linuxSystems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      darwinSystems = [
        "x86_64-darwin"
        "aarch64-darwin"
      ];
      forSystems = systems: f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # Extras synced into each family's environment (see [project.optional-dependencies]).
      # jax and mario get their own environments: they need numpy >= 2.1 and < 2.0.
      familyExtras = {
        core = [
          "core"
          "dev"
          "cluster"
        ];
        jax = [
          "jax"
          "dev"
          "cluster"
        ];
        mario = [
          "mario"
          "dev"
        ];
        web = [
          "web"
          "dev"
          "cluster"
        ];
      };

      mkFamilyShell =
        pkgs: family: extra:
        let
          isLinux = pkgs.stdenv.isLinux;
          python = pkgs.python311;
          # Libraries that manylinux wheels (mujoco, box2d, pyarrow, ...) dlopen at run time.
          runtimeLibs =
            [
              pkgs.stdenv.cc.cc.lib
              pkgs.zlib
            ]
            ++ lib.optionals isLinux [
              pkgs.libGL
              pkgs.libglvnd
              pkgs.mesa
            ]
            ++ (extra.libs or [ ]);
          syncFlags = lib.concatMapStringsSep " " (e: "--extra ${e}") familyExtras.${family};
        in
        pkgs.mkShell (
          {
            name = "evopolicygym-${family}";
            packages = [
              python
              pkgs.uv
              pkgs.git
              pkgs.ffmpeg # video feedback and report animations
              pkgs.swig # builds Box2D from source where no wheel exists (aarch64-linux)
            ] ++ (extra.packages or [ ]);

            UV_PROJECT_ENVIRONMENT = ".venv-${family}";
            UV_PYTHON = "${python}/bin/python3.11";
            UV_PYTHON_DOWNLOADS = "never";
            EVOPOLICYGYM_SHELL = family;

            shellHook =
              lib.optionalString isLinux ''
                export __EGL_VENDOR_LIBRARY_DIRS="${pkgs.mesa}/share/glvnd/egl_vendor.d"
              ''
              + ''
              export LD_LIBRARY_PATH="${lib.makeLibraryPath runtimeLibs}''${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
              if [ -f pyproject.toml ] && [ -f uv.lock ]; then
                # Bytecode compiled once, here: workers never write it, and every host imports it.
                if UV_COMPILE_BYTECODE=1 uv sync --locked ${syncFlags}; then
                  . "$UV_PROJECT_ENVIRONMENT/bin/activate"
                else
                  echo "evopolicygym: 'uv sync --locked ${syncFlags}' failed; the shell has no project environment." >&2
                  echo "evopolicygym: check network access to PyPI, or run 'uv lock' if pyproject.toml changed." >&2
                fi
              else
                echo "evopolicygym: run 'nix develop .#${family}' from the repository root to sync .venv-${family}." >&2
              fi
            ''
            + (extra.hook or "");
          }
          // lib.optionalAttrs isLinux {
            # MuJoCo renders headless through EGL (OSMesa is gone from Mesa >= 25.1); the hook
            # points GLVND at Mesa's vendor file so this works without a system OpenGL driver.
            MUJOCO_GL = "egl";
            PYOPENGL_PLATFORM = "egl";
          }
          // (extra.env or { })
        );

      webExtra = pkgs: {
        # BrowserGym drives this Chromium through the Playwright driver of the Python wheel
        # (src/evopolicygym/envs/web.py), so no Playwright browser download is needed.
        packages = [ pkgs.chromium ];
        env = {
          MINIWOB_URL = "file://${miniwob}/miniwob/html/miniwob/";
          EVOPOLICYGYM_CHROMIUM = "${pkgs.chromium}/bin/chromium";
          PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = "1";
        };
      };

      shellsFor =
        pkgs:
        let
          shells = {
            core = mkFamilyShell pkgs "core" { };
            jax = mkFamilyShell pkgs "jax" { };
            mario = mkFamilyShell pkgs "mario" { };
          }
          // lib.optionalAttrs pkgs.stdenv.isLinux { web = mkFamilyShell pkgs "web" (webExtra pkgs); };
        in
        shells // { default = shells.core; };

      # The fast test suite against nixpkgs' own Python packages: a cross-check that needs no
      # network inside the build sandbox. The authoritative run is `uv run ... pytest`.
      testsFor =
        pkgs:
        let
          python = pkgs.python311.withPackages (
            ps: with ps; [
              pytest
              pytest-timeout
              pydantic
              flask
              gymnasium
              numpy
              pandas
              pyarrow
              matplotlib
            ]
          );
        in
        pkgs.runCommand "evopolicygym-tests"
          {
            nativeBuildInputs = [
              python
              pkgs.snakemake
              pkgs.git # tests of setup.sh build small git repositories
            ];
            src = self;
          }
          ''
            cp -r "$src" source && chmod -R u+w source && cd source
            export HOME="$TMPDIR" PYTHONPATH="$PWD/src"
            python -m pytest -p no:cacheprovider -m "not slow and not core and not slurm" tests
            touch "$out"
          '';
    in
    {
      devShells = forSystems (linuxSystems ++ darwinSystems) shellsFor;

      checks = forSystems linuxSystems (pkgs: {
        tests = testsFor pkgs;
        # Building a shell's inputDerivation fetches and builds everything the shell provides.
        shells = pkgs.linkFarm "evopolicygym-shells" (
          lib.mapAttrsToList (name: shell: {
            inherit name;
            path = shell.inputDerivation;
          }) (shellsFor pkgs)
        );
      });

      formatter = forSystems (linuxSystems ++ darwinSystems) (pkgs: pkgs.nixfmt-rfc-style);
    };
}
