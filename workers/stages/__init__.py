"""One trial's stages, each a short function with typed hand-offs (docs/architecture.md): connect,
set up, shape the tool list, converse, probe, then grade, attribute and record. `workers/trial.py`
runs them in that order."""
