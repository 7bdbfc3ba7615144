"""Readiness tooling: how far an environment is from a trustworthy benchmark task.

It sits above the run machinery and uses it, never the other way round:

- :mod:`~evopolicygym.readiness.checks`: ``check-envs``, the checks of levels L0-L4;
- :mod:`~evopolicygym.readiness.anchors`: the uniform random anchor of an envspec;
- :mod:`~evopolicygym.readiness.calibration`: level L4, a built-in agent's run against random;
- :mod:`~evopolicygym.readiness.discover`: the catalogue of installed environments
  (``discover-envs``, the bulk ids that ``check-envs --bulk/--discover`` lists).

The runtime side of environments (specs, registry, adapters, bulk specs) is
:mod:`evopolicygym.envs`.
"""
