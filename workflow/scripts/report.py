# Thin: build one suite's report from its run records, then print the suite's final table.
# `snakemake` is injected by Snakemake's script directive.
import sys
from pathlib import Path

from evopolicygym.report import ReportFiles, build_report

out = snakemake.output  # noqa: F821
with open(snakemake.log[0], "w") as log:  # noqa: F821
    sys.stderr = log
    report = build_report(
        snakemake.params.suite,  # noqa: F821
        ReportFiles(
            table=Path(out.table),
            leaderboard=Path(out.leaderboard),
            scores=Path(out.scores),
            curves=Path(out.curves),
            html=Path(out.html),
        ),
        archive=Path(snakemake.params.archive) if snakemake.params.archive else None,  # noqa: F821
        records=[Path(p) for p in snakemake.input],  # noqa: F821
    )
    log.write(report.final_table())
print(report.final_table(), flush=True)
