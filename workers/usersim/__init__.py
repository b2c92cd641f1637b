"""The simulated user: its conversation loop, the checks of its messages for invented and
volunteered facts, and the grading and attribution of its conversations (whether it left
early, whose mistake a failure was; docs/simulated-user.md)."""

from mcp_farm.workers.usersim.facts import facts_in, invented, volunteered
from mcp_farm.workers.usersim.grade import failure_source, grade_simulated, left_early
from mcp_farm.workers.usersim.loop import UserSide, read_final_state, run_simulated, user_side

__all__ = [
    "UserSide",
    "facts_in",
    "failure_source",
    "grade_simulated",
    "invented",
    "left_early",
    "read_final_state",
    "run_simulated",
    "user_side",
    "volunteered",
]
