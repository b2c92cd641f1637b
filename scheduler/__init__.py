"""The control plane, by role: `cli` (the `farm` commands), `submission` (expand, route, record,
publish, run embedded), `operations` (cancel, resume, recovery, progress, nodes), `scorecard`
(aggregate, build, gates, comparisons; SQL in `scorecard.queries`), `statistics` (rates, judge
variance) and `report` (terminal, Markdown/JSON/JUnit, HTML). Import what you need from its
module: this package loads nothing on import, so `farm --help` stays light."""
