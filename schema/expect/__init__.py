"""What a scenario expects of the agent's calls (the steps, the tools each accepts, the
matchers) and of the world afterwards (`state:` probes, `grade_by`; docs/state.md).

Three modules: `matchers` (how one argument, item or key is judged; matchers nest), `steps`
(expected calls, their tools, their order, routes) and `state` (probes of a server's state and
the verdicts they give). Every name is re-exported here, so
`from mcp_farm.schema.expect import ExpectedCall` reads as it always has.
"""

from mcp_farm.schema.expect.matchers import (
    ARRAY_KINDS,
    MATCHER_KINDS,
    NO_OPTIONAL_INSIDE,
    OneOrList,
    ParamMatcher,
)
from mcp_farm.schema.expect.state import (
    DivergedBy,
    GradeBy,
    ProbeKind,
    ProbeRead,
    ProbeResult,
    SetBack,
    StateProbe,
    StateVerdict,
)
from mcp_farm.schema.expect.steps import (
    ExpectedCall,
    Option,
    Route,
    ToolChoice,
    ToolOption,
    order_problems,
)

__all__ = [
    "ARRAY_KINDS",
    "MATCHER_KINDS",
    "NO_OPTIONAL_INSIDE",
    "DivergedBy",
    "ExpectedCall",
    "GradeBy",
    "OneOrList",
    "Option",
    "ParamMatcher",
    "ProbeKind",
    "ProbeRead",
    "ProbeResult",
    "Route",
    "SetBack",
    "StateProbe",
    "StateVerdict",
    "ToolChoice",
    "ToolOption",
    "order_problems",
]
