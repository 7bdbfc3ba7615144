# Per-suite report: every run.json of the suite -> results.parquet, leaderboard (Markdown + CSV,
# rank score), learning curves (PNG) and report.html. Rebuilt only when a run record changed.


rule report:
    input:
        suite_records,
    output:
        table=f"{RESULTS}/{{suite}}/results.parquet",
        leaderboard=f"{RESULTS}/{{suite}}/leaderboard.md",
        scores=f"{RESULTS}/{{suite}}/leaderboard.csv",
        curves=f"{RESULTS}/{{suite}}/curves.png",
        html=f"{RESULTS}/{{suite}}/report.html",
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
