# Case splits: one `evopolicygym data make` per split directory a suite's [[run]] names in `data`
# (only for suites with a [data] table; other data directories must already exist).


# Light: runs where Snakemake runs, not as a cluster job.
localrules:
    data,


rule data:
    output:
        train="{data_dir}/train.json",
        valid="{data_dir}/valid.json",
        heldout="{data_dir}/heldout.json",
    log:
        f"{LOGS}/data/{{data_dir}}.log",
    wildcard_constraints:
        data_dir=exact_pattern(DATA),
    params:
        env=lambda wildcards: DATA[wildcards.data_dir].env,
        bulk=lambda wildcards: "--bulk" if DATA[wildcards.data_dir].bulk else "",
        seed=lambda wildcards: DATA[wildcards.data_dir].seed,
        train=lambda wildcards: DATA[wildcards.data_dir].train_size,
        valid=lambda wildcards: DATA[wildcards.data_dir].valid_size,
        heldout=lambda wildcards: DATA[wildcards.data_dir].heldout_size,
    message:
        "data: {params.env} splits (seed {params.seed}) -> {wildcards.data_dir}"
    shell:
        "evopolicygym data make --env {params.env:q} {params.bulk:q}"
        " --root {wildcards.data_dir:q} --seed {params.seed} --train-size {params.train}"
        " --valid-size {params.valid} --heldout-size {params.heldout} --force > {log:q} 2>&1"
