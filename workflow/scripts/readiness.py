# Thin: aggregate the per-environment check-envs results into one readiness table.
# `snakemake` is injected by Snakemake's script directive.
import sys
from pathlib import Path

from evopolicygym.report import write_readiness

with open(snakemake.log[0], "w") as log:  # noqa: F821
    sys.stderr = log
    table = write_readiness(
        [Path(p) for p in snakemake.input],  # noqa: F821
        markdown=Path(snakemake.output.markdown),  # noqa: F821
        csv=Path(snakemake.output.csv),  # noqa: F821
    )
    log.write(table.to_string() + "\n")
print(f"readiness: {int(table['ok'].sum())} of {len(table)} environments pass", flush=True)
