"""Version strings of every independently versioned format.

The protocol version names the agent-facing contract (HTTP API, workspace, feedback layout).
Schema versions name on-disk JSON formats; a MINOR bump adds fields, a MAJOR bump removes or
changes the meaning of one. ``HARNESS_VERSION`` decides whether a finished run is stale: the
Snakemake workflow re-runs a run only when this string changes, never because library code did.
"""

PROTOCOL_VERSION = "protocol/v2.0-draft"
SCHEMA_VERSION = "0.4"
HARNESS_VERSION = "0.3.0"
