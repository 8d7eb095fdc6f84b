"""A question the folder's memory covers starts with a short round: two calls instead of four.

Covered: the memory names, for this question, earlier verified runs whose functions fit it
(knowledge.relevant). Then round 1 is

    s = Coder(q, memory)      one call: the script, its one-step plan as its first comment
    r = run(s)                (the Debugger repairs a failing s, as in any round)
    Verifier(p, q, s, r)      one call; a Yes carries the answer, copied from r in the form asked

and a Yes with the answer ends the run verified, with no planner and no finalizer call (the answer
is copied from the output, as the finalizer copies it when the output holds it). Anything short of
that is not lost: a script that still fails, a No, or an unreadable verdict hand the round to the
loop (its plan step, script, output and the verifier's reason), which goes on as after any round:
the router and the planner take it from there. A Yes without the answer hands the verified round to
the loop's finalizer. So a covered question costs 2 calls when the memory fits, and at worst what
the loop would have cost plus nothing: the short round replaces the loop's first round.
"""

from __future__ import annotations

from dsstar_cli import readings
from dsstar_cli.agent import Agent, Attempt, BudgetExhausted
from dsstar_cli.events import Event
from dsstar_cli.loop import FROM_OUTPUT, VERIFIED, LoopResult
from dsstar_cli.model import ModelError
from dsstar_cli.quoting import quote
from dsstar_cli.roles import coder, verifier
from dsstar_cli.roles.context import RunContext

DEFAULT_PLAN = "Answer the question in one script, with the remembered functions that fit it."


def first_round(agent: Agent, context: RunContext, output_chars: int, max_rounds: int) -> LoopResult | dict | None:
    """The run's result (verified in the short round), or the loop's state after it (to go on from),
    or None when the round could not be made (the loop then starts from nothing)."""
    agent.round = 1
    agent.emit(Event("shortcut", {}))
    agent.emit(Event("round_started", {"round": 1, "max_rounds": max_rounds}))
    try:
        attempt = agent.write_and_run(coder.ROLE, coder.shortcut_messages(context, output_chars), "solution", context)
        if not attempt.code:
            return _declined(agent, "the coder gave no script")
        plan = [coder.plan_of(attempt.code) or DEFAULT_PLAN]
        agent.emit(Event("plan", {"round": 1, "steps": plan, "added": 1, "dropped": []}))
        if not attempt.ok:
            return _handed_on(agent, plan, attempt, "the script did not run successfully", False)
        output = quote(attempt.output(output_chars), "output of the script")
        figures = verifier.figures_in(attempt.execution.stdout, str(agent.executor.workdir))
        verdict = agent.ask(verifier.ROLE, verifier.answer_messages(context, plan, attempt.code, output, figures),
                            verifier.parse_recheck)
    except (BudgetExhausted, ModelError) as exc:  # The loop that follows meets it again and reports it.
        return _declined(agent, str(exc))
    sufficient, why, answer = verdict if verdict is not None else (False, "unreadable verdict, taken as No", None)
    agent.emit(Event("verdict", {"round": 1, "sufficient": sufficient, "reason": why}))
    if not sufficient or not answer:
        return _handed_on(agent, plan, attempt, why, sufficient)
    agent.emit(Event("answered_from_output", {"round": 1, "answer": answer, "verified": True}))
    return LoopResult(outcome=VERIFIED, answer=answer, reason="the verifier judged the plan sufficient", rounds=1,
                      plan=plan, answer_from=FROM_OUTPUT, solution_code=attempt.code,
                      reading=readings.behind(readings.Reading(), answer, attempt.execution.stdout))


def _handed_on(agent: Agent, plan: list[str], attempt: Attempt, why: str, verified: bool) -> dict:
    """The loop's state after the short round (loop.DSStarLoop.state's shape), to go on from."""
    agent.emit(Event("shortcut_handed_on", {"reason": why, "verified": verified}))
    return {"rounds": 1, "verified": verified, "history": [], "reason": why, "announce": False,
            "plan": [{"text": plan[0], "code": attempt.code}], "last": attempt.to_dict(),
            "best": attempt.to_dict() if attempt.ok else None}


def _declined(agent: Agent, why: str) -> None:
    agent.emit(Event("shortcut_handed_on", {"reason": why, "verified": False}))
    return None
