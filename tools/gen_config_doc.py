from gpusteward.config.reference import render_markdown_table
from gpusteward.indicators import INDICATORS
ind = ["| indicator | unit | meets its objective when | scenarios | meaning |", "|---|---|---|---|---|"]
for i in INDICATORS.values():
    d = "value <= threshold" if i.direction.value == "at_most" else "value >= threshold"
    sc = ", ".join(sorted(s.value for s in i.scenarios))
    ind.append(f"| `{i.name}` | {i.unit.value} | {d} | {sc} | {i.help} |")
print("""# Configuration reference

GPU Steward reads one TOML file. `gpusteward validate-config FILE` checks it and lists every
problem at once, each with its path, for example:

```
$ gpusteward validate-config broken.toml
broken.toml: 3 problem(s) in the configuration:
  warehouse.pth: unknown field (did you mean 'path'?)
  teams.vision.entitled_share: expected a number, got "big"
  scenarios.online_inference.slos[1].threshold: expected a duration, got "fast"
```

The example in `examples/gpusteward.toml` describes the simulated demo pool and is what
`gpusteward demo` uses. Without `--config`, commands read `$GPUSTEWARD_CONFIG`, else that example
(with relative paths resolved against the current folder). Paths in a config file are relative to
the file's folder. Durations are written like Prometheus durations: `250ms`, `90s`, `5m`, `1h30m`,
`2d`. Secrets are never written in the file: a receiver names the environment variable that holds
its signing secret (`secret_env`), and no command prints it.

Rules map each job to a scenario and a team; the first rule whose conditions all hold wins. A rule
without `team` gives the job to the team whose `accounts` list its account (or whose key equals the
account). Work no rule matches is counted as `unattributed`, never dropped.

## Fields

`<name>` stands for a key you choose (a team's short name, a scenario); `[]` marks a list of tables.
The reference below is generated from the schema's own help texts
(`python -c "from gpusteward.config.reference import render_markdown_table as r; print(r())"`), and a
test fails when a field is missing here.
""")
print(render_markdown_table())
print("""## Indicators

An objective (`scenarios.<name>.slos[]`) names one of these indicators. Durations are written as
durations (`threshold = "30m"`) and compared in seconds; ratios are numbers between 0 and 1.
""")
print("\n".join(ind))
