"""A remembered answer whose files changed: its verified script re-runs in the sandbox on the current
files, and the verifier alone is asked whether the output still answers the question (one call; a
second only when its reply is malformed, as for any role).

How the answer in the requested form is made without the finalizer:
- when the verified run's answer came from a final script (answer_from final_script), that script
  re-runs too and prints the answer, as it did before; the verifier sees that answer beside the
  output and judges both. Re-running code that already formatted the answer once is cheaper and
  more faithful than asking a model to format it again.
- when the answer was copied from the output (answer_from solution_output: no final script exists),
  the verifier's reply carries it, copied from the new output in an ```answer block. The verifier
  reads that output anyway to judge it, so copying the value costs no extra call; a Yes without the
  block is not trusted.

Either way, a script that fails, an empty answer, a No, or an unreadable verdict ends the re-check:
the run then goes on as a normal full run (`None` is returned). Remembered code runs only through
the Agent's executor: the sandbox, with the data folder read-only, as every generated script.
"""

from __future__ import annotations

from dsstar_cli import readings
from dsstar_cli.agent import Agent, Attempt, BudgetExhausted
from dsstar_cli.events import Event
from dsstar_cli.loop import FROM_SCRIPT, VERIFIED, LoopResult
from dsstar_cli.memory.store import Entry
from dsstar_cli.model import ModelError
from dsstar_cli.quoting import quote
from dsstar_cli.roles import verifier
from dsstar_cli.roles.context import RunContext


def recheck(entry: Entry, changed: list[str], agent: Agent, context: RunContext, output_chars: int) -> LoopResult | None:
    """The verified answer on the current files, or None when the re-check fails (see the module docstring)."""
    agent.round = 1
    agent.emit(Event("memory_recheck", {"run": entry.run_id, "at": entry.at, "changed": changed}))
    try:
        return _recheck(entry, agent, context, output_chars)
    except (BudgetExhausted, ModelError) as exc:  # The full run that follows meets it again and reports it.
        return _rejected(agent, str(exc))


def _recheck(entry: Entry, agent: Agent, context: RunContext, output_chars: int) -> LoopResult | None:
    plan = list(entry.result.get("plan") or [])
    solution = Attempt(entry.solution_code, agent.execute(entry.solution_code, "solution"))
    if not solution.ok:
        return _rejected(agent, "the remembered script failed on the current files")
    final, answer = None, None
    if entry.answer_from == FROM_SCRIPT:
        final = Attempt(entry.final_code, agent.execute(entry.final_code, "final"))
        answer = final.execution.stdout.strip() if final.ok else ""
        if not answer:
            return _rejected(agent, "the remembered final script " + ("printed nothing" if final.ok else "failed"))
    output = quote(solution.output(output_chars), "output of the script")
    shown = quote(answer, "output of the final script") if answer is not None else None
    verdict = agent.ask(verifier.ROLE, verifier.recheck_messages(context, plan, entry.solution_code, output, shown),
                        verifier.parse_recheck)
    sufficient, why, copied = verdict if verdict is not None else (False, "unreadable verdict, taken as No", None)
    agent.emit(Event("verdict", {"round": 1, "sufficient": sufficient, "reason": why}))
    if not sufficient:
        return _rejected(agent, f"the verifier said No: {why}")
    answer = answer if answer is not None else copied
    if not answer:
        return _rejected(agent, "the verifier said Yes but gave no answer block")
    printed = "\n".join(a.execution.stdout for a in (solution, final) if a is not None and a.execution)
    found = readings.behind(readings.Reading(), answer, printed)  # What the new output says of other readings.
    kept = tuple(entry.result.get("assumptions") or ())
    reading = found if found.assumptions else readings.Reading(kept, found.alternatives)
    return LoopResult(outcome=VERIFIED, answer=answer, rounds=1, plan=plan,
                      reason=f"re-checked: run {entry.run_id}'s verified script ran again on the changed files and "
                             "the verifier judged its output sufficient",
                      final_code=entry.final_code if final else "",
                      final_output=final.output(output_chars) if final else "", answer_from=entry.answer_from,
                      note=entry.result.get("note"), reading=reading, solution_code=entry.solution_code)


def _rejected(agent: Agent, why: str) -> None:
    agent.emit(Event("memory_rejected", {"reason": why}))
    return None
