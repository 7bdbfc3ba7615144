# Per-suite report: every run.json of the suite -> results.parquet, leaderboard (Markdown + CSV,
# rank score), learning curves (PNG) and report.html. Rebuilt only when a run record changed.


# Light: runs where Snakemake runs, not as a cluster job.
localrules:
    report,


rule report:
    input:
        suite_records,
    output:
        table=f"{REPORT}/results.parquet",
        leaderboard=f"{REPORT}/leaderboard.md",
        scores=f"{REPORT}/leaderboard.csv",
        curves=f"{REPORT}/curves.png",
        html=f"{REPORT}/report.html",
    log:
        f"{LOGS}/report/{{suite}}.log",
    wildcard_constraints:
        suite=exact_pattern(SUITES),
    params:
        suite=lambda wildcards: str(SUITES[wildcards.suite].path),
        archive=str(ARCHIVE) if config["report"]["include_archive"] else "",
    message:
        "report: suite {wildcards.suite}"
    script:
        "../workflow/scripts/report.py"
