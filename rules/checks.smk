# Environment readiness: one `evopolicygym check-envs` job per environment (a failed check still
# leaves its JSON result), then one aggregated readiness table.


rule check_env:
    output:
        CHECK_RESULT,
    log:
        f"{LOGS}/check_env/{{env}}.log",
    wildcard_constraints:
        env=exact_pattern(checked_envs()),
    params:
        min_level=config["check_envs"]["min_level"],
    message:
        "check-envs: {wildcards.env}"
    shell:
        "evopolicygym check-envs --env {wildcards.env:q} --min-level {params.min_level:q}"
        " --output {output:q} > {log:q} 2>&1 || test -s {output:q}"


# Light: runs where Snakemake runs, not as a cluster job.
localrules:
    readiness,


rule readiness:
    input:
        expand(CHECK_RESULT, env=checked_envs()),
    output:
        markdown=f"{RESULTS}/check-envs/readiness.md",
        csv=f"{RESULTS}/check-envs/readiness.csv",
    log:
        f"{LOGS}/readiness/readiness.log",
    script:
        "../workflow/scripts/readiness.py"
