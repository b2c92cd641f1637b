"""The root of every error the farm raises on purpose, and the map of the whole tree.

Every deliberate error derives from `FarmError`; the CLI prints its message and exits 2. An
exception outside this tree, met while a trial runs, is a bug in the farm itself: the trial is
recorded as `harness_error` with its traceback, never retried, and shown in red.

    FarmError                        mcp_farm.schema.errors
    ├── SpecError                    a YAML file or spec value is invalid (file and field named)
    │   └── ScenarioError            mcp_farm.scenarios.catalog: a scenario or suite is invalid
    ├── StoreError                   the results database could not be reached or written
    ├── MessageError                 a task payload or result does not fit its task
    ├── PatternTimeout               mcp_farm.schema.parse.regexes: a scenario's or server's
    │                                regex ran past its time budget (the worker: InfraError)
    ├── CodeRepoError                mcp_farm.scenarios.coderepo: a pinned checkout failed
    ├── RoutingError                 mcp_farm.scheduler.submission.routing: no queue serves a model
    ├── PreflightError               mcp_farm.scheduler.submission.preflight: an endpoint is unusable
    └── WorkerError                  mcp_farm.workers.errors
        ├── InfraError               not the model's fault: recorded as `infra_error`, retried
        │   └── SlotBusy             mcp_farm.workers.node.slots: every endpoint slot stayed taken
        ├── AdapterError             a model target this worker cannot serve
        ├── GrammarDeadEnd           mcp_farm.workers.model.constrain.sampler: a grammar
        │                            allowed no token (llama.cpp's own path aborts)
        └── UnreadableJson           mcp_farm.workers.model.safejson: a reply is not JSON
"""

from __future__ import annotations


class FarmError(Exception):
    """Base of all deliberate farm errors; the CLI turns these into exit status 2."""


class SpecError(FarmError):
    """A YAML file or a spec value is invalid. The message names the file and the field, and
    the line where it is known (`file:line: field: problem`)."""

    def __init__(self, source: str, field: str, problem: str, line: int | None = None) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        self.line = line  # 1-based, in `source`; given where the field was located
        at = f"{source}:{line}" if line is not None else source
        where = f"{at}: {field}" if field else at
        super().__init__(f"{where}: {problem}")


class StoreError(FarmError):
    """The results database could not be reached or written."""


class MessageError(FarmError):
    """A task's payload or result does not fit the task's message model (the task is named)."""

    def __init__(self, task: str, problem: str) -> None:
        self.task = task
        self.problem = problem
        super().__init__(f"task {task}: {problem}")
