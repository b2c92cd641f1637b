"""The simulated user: its conversation loop, the check of its messages for invented facts,
and the grading and attribution of its conversations (docs/simulated-user.md)."""

from mcp_farm.workers.usersim.facts import facts_in, invented
from mcp_farm.workers.usersim.grade import failure_source, grade_simulated
from mcp_farm.workers.usersim.loop import UserSide, read_final_state, run_simulated, user_side

__all__ = [
    "UserSide",
    "facts_in",
    "failure_source",
    "grade_simulated",
    "invented",
    "read_final_state",
    "run_simulated",
    "user_side",
]
