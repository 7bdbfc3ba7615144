# EvoPolicyGym batch pipeline. Wiring only: config + schema, rules from rules/, target rules.
#   snakemake smoke --cores 2            offline smoke suite (built-in agents) -> HTML report
#   snakemake check_envs --cores 4       readiness of every curated environment
#   snakemake suite_<slug> --cores 4     any config/*-suite.toml, e.g. suite_main128_codex
# Profiles: workflow/profiles/default (picked up automatically), slurm, kubernetes.
# `snakemake --lint` asks for a conda environment or container per rule, and only that (pinned
# by tests/e2e/test_snakemake.py): every rule runs the project's own locked environment (uv, or
# the Nix dev shell), for which Snakemake has no deployment method.

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: f"{workflow.basedir}/config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/checks.smk"
include: "rules/runs.smk"
include: "rules/reports.smk"


rule smoke:
    default_target: True
    input:
        f"{REPORT}/report.html".format(suite=SMOKE),


rule check_envs:
    input:
        rules.readiness.output,


for suite in SUITES.values():

    rule:
        name:
            f"suite_{suite.slug}"
        input:
            f"{REPORT}/report.html".format(suite=suite.slug),
