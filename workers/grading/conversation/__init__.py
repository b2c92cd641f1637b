"""Grading a trial's turns: each turn as a one-prompt scenario of its own, then all together.

Every trial but a simulated user's is graded here: a one-prompt scenario is a conversation of
one turn (`Scenario.dialogue`), whose verdict is its turn's. Each turn is graded by `grade` (its
calls, its steps, its answer); three things are added here:

- a value taken from an earlier turn's result (`from_turn` on a chained matcher): the turn is
  graded with such matchers read as "present", then each is checked by the chained matcher
  itself against the calls that did that step of that turn (the model's, when the turn passed;
  the farm's, when it failed and the conversation continued);
- a turn that must ask (`must_ask`): a tool called instead is `guessed`; a reply that is no
  question about the missing detail is `output_mismatch`;
- a turn whose steps were right but that made fewer calls of its own than it needs
  (`Turn.min_calls`; one on a turn with steps, whose steps earlier calls may have done) is
  `no_tool_call`.

The conversation passes only if every turn passed on its own; otherwise its outcome is its
first failed turn's (docs/conversations.md). Recovery after an error result (`recovered`) is
read here for every trial.

Turn views (`views`), values from earlier turns (`crossing`), one turn's verdict (`turn`), the
conversation's (`verdict`) and recovery (`recovery`) each have a module here.
"""

from mcp_farm.workers.grading.conversation.crossing import done_steps
from mcp_farm.workers.grading.conversation.recovery import recovered
from mcp_farm.workers.grading.conversation.turn import EARLY, ENDS, grade_turn, too_few_calls
from mcp_farm.workers.grading.conversation.verdict import (
    NOT_GRADED,
    grade_conversation,
    recorded_turns,
    stored_turns,
    trial_steps,
)
from mcp_farm.workers.grading.conversation.views import credited_calls, plain_view, turn_calls

__all__ = [
    "EARLY",
    "ENDS",
    "NOT_GRADED",
    "credited_calls",
    "done_steps",
    "grade_conversation",
    "grade_turn",
    "plain_view",
    "recorded_turns",
    "recovered",
    "stored_turns",
    "too_few_calls",
    "trial_steps",
    "turn_calls",
]
