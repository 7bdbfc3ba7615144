# One job per suite cell (env x agent x repeat). The job runs `evopolicygym run --suite --job`,
# which resumes an interrupted run directory and writes run.json even when the agent failed
# (outcome "error"): such a record is a result, so the job succeeds. Retries come from the
# suite. Only the harness version (not library code) decides whether a finished run is stale.
# A plain shell command: no `run:` block, so a local job never parses the workflow again.

for suite in SUITES.values():

    rule:
        name:
            f"run_{suite.slug}"
        input:
            lambda wildcards: split_files(JOB_BY_ROOT[wildcards.run_root]),
        output:
            "{run_root}/run.json",
        log:
            f"{LOGS}/run/{suite.slug}/{{run_root}}.log",
        wildcard_constraints:
            run_root=exact_pattern(job.root for job in suite.jobs),
        retries: suite.section.retries
        threads: suite.section.threads
        resources:
            mem_mb=suite.section.mem_mb,
            runtime=suite.section.runtime,
        params:
            suite=str(suite.path),
            job=lambda wildcards: JOB_BY_ROOT[wildcards.run_root].name,
            env=lambda wildcards: JOB_BY_ROOT[wildcards.run_root].env,
            agent=lambda wildcards: JOB_BY_ROOT[wildcards.run_root].agent_label,
            harness_version=HARNESS_VERSION,
        message:
            "run {params.job}: {params.env} with {params.agent}"
        # The run directory is where Snakemake expects run.json (a storage provider may move
        # it); `evopolicygym report RUN_JSON` then prints the run's status line, a convenience
        # that never fails the job (Snakemake would delete the finished run's run.json).
        shell:
            "(evopolicygym run --suite {params.suite:q} --job {params.job:q}"
            ' --root "$(realpath -m "$(dirname {output:q})")" --jobs {threads}'
            " > {log:q} 2>&1 || test -s {output:q})"
            " && (evopolicygym report {output:q} || true)"
