"""The DS-STAR loop: plan one step, code the whole plan, run it, verify; if not sufficient, route
(add a step, or drop a wrong step and what follows), and go again until verified or the round cap.

    p = [Planner(q, D)]                              round 1
    for each round:
        s = Coder(p, base code); r = run(s)          (Debugger repairs a failing s)
        if Verifier(p, q, s, r) = Yes: stop          (else its reason goes to the router and planner)
        Router(p, q, r, D) -> Add Step | Step k      (Step k: p = p[:k-1])
        p += [Planner(p, q, r, D)]
    answer = Finalizer(q, guidelines, s, r)          also when the round cap or a budget was reached:
                                                     copied from r when r already holds it, else a
                                                     script that prints only the answer; with the
                                                     reading behind it (readings.py): the plan's
                                                     assumptions, and the alternatives r printed

Every prompt starts with the run's shared context (roles/context.py): documents, question, answer
format and the file descriptions (the verifier and finalizer: those of the files the script they judge
reads), and for the roles that write code what the folder's memory offers (memory/knowledge.py). Text
from the data and the scripts' output is quoted as data (quoting.py). After every round the loop's
state is checkpointed, so `dsstar resume` continues a stopped run from its last completed round.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from dsstar_cli import readings
from dsstar_cli.agent import Agent, Attempt, BudgetExhausted
from dsstar_cli.analyzer import FileDescription
from dsstar_cli.analyzer.retriever import Selection
from dsstar_cli.events import Event
from dsstar_cli.model import ModelError
from dsstar_cli.roles import coder, finalizer, planner, router, verifier
from dsstar_cli.quoting import quote
from dsstar_cli.roles.context import DESCRIPTION_TOKENS, RunContext, build_context

VERIFIED, UNVERIFIED, FAILED = "verified", "unverified", "failed"
UNANSWERABLE = "unanswerable"  # Verified: the folder does not hold what the question needs.
# How the answer was made: printed by the finalizer's script, or copied by the finalizer from the output
# of the last script that ran (which already held it), with no script run.
FROM_SCRIPT, FROM_OUTPUT = "final_script", "solution_output"


@dataclass
class Task:
    question: str
    data_dir: Path | str     # a folder here, or (engine: spark) a location the cluster reads
    guidelines: str | None = None
    earlier: str | None = None  # A follow-up's earlier run, quoted (followup.py): in every prompt's context.
    engine_note: str = ""    # how scripts query the tables (engine/note.py)
    memory: str = ""         # what earlier verified runs on the folder established (memory/knowledge.py)


@dataclass
class PlanStep:
    text: str
    code: str = ""  # The script that implemented the plan up to and including this step.


@dataclass
class LoopResult:
    outcome: str                 # verified | unverified | failed
    answer: str | None
    reason: str
    rounds: int
    plan: list[str]
    history: list[dict] = field(default_factory=list)  # Every routing decision, in order.
    final_code: str = ""
    final_output: str = ""
    answer_from: str | None = None  # FROM_SCRIPT | FROM_OUTPUT; None without an answer.
    error_kind: str | None = None  # For failures caused by the model: see ModelError.kind.
    note: str | None = None        # What the answer refers to (year, unit, period): beside it, never in it.
    reading: readings.Reading = field(default_factory=readings.Reading)
    solution_code: str = ""      # The verified (or last working) script the answer was made from.


class DSStarLoop:
    def __init__(self, agent: Agent, max_rounds: int, prompt_output_chars: int,
                 checkpoint: Callable[[dict], None] | None = None, document_chars: int = 64_000,
                 description_tokens: int = DESCRIPTION_TOKENS):
        self.agent = agent
        self.document_chars, self.description_tokens = document_chars, description_tokens
        self.max_rounds = max_rounds
        self.output_chars = prompt_output_chars
        self.checkpoint = checkpoint or (lambda state: None)
        self.plan: list[PlanStep] = []
        self.history: list[dict] = []
        self.rounds = 0
        self.last: Attempt | None = None   # The latest round's script and its run.
        self.best: Attempt | None = None   # The latest script that ran: what the finalizer works from.
        self.verified = False
        self.reason = ""                   # The verifier's why, for the router and the planner.
        self.route_why = ""                # The router's why, for the planner.

    def run(self, task: Task, files: list[FileDescription], others: list[FileDescription] = (),
            state: dict | None = None) -> LoopResult:
        """`files` are described in every prompt; `others` (left out by the retriever) only named.
        `state` is a checkpoint to continue from (see `state()`)."""
        self.task = task
        self.context = self.context_for(task, files, others)
        if state:
            self._restore(state)
        try:
            return self._solve()
        except ModelError as exc:
            return self._result(FAILED, None, str(exc), error_kind=exc.kind)

    def context_for(self, task: Task, files: list[FileDescription], others: list[FileDescription] = ()) -> RunContext:
        """The shared context every prompt of this run starts with (roles/context.py)."""
        return build_context(task.question, task.guidelines, str(task.data_dir), Selection(list(files), list(others)),
                             self.document_chars, self.description_tokens, earlier=task.earlier,
                             engine_note=task.engine_note, memory=task.memory)

    # -- the algorithm ---------------------------------------------------------------------------

    def _solve(self) -> LoopResult:
        try:
            while not self.verified and self.rounds < self.max_rounds:
                self._start_round(self.rounds + 1)
                dropped = self._route(self.last) if self.last else []
                self._add_step(self.last, dropped)
                self.last = self._implement()
                self.best = self.last if self.last.ok else self.best
                self.verified = self._verify(self.last)
                self.checkpoint(self.state())
        except BudgetExhausted as stop:  # Checked before every model call and bounding every script.
            return self._finalize(self.best, False, stop)
        return self._finalize(self.best, self.verified)

    def _start_round(self, round_no: int) -> None:
        self.rounds = self.agent.round = round_no
        self.agent.emit(Event("round_started", {"round": round_no, "max_rounds": self.max_rounds}))

    def _route(self, last: Attempt) -> list[str]:
        """Router: Add Step keeps the plan; Step k drops steps k.. and returns their text."""
        steps = self._steps()
        decision = self.agent.ask(router.ROLE, router.messages(self.context, steps, self._output(last), self.reason),
                                  router.parser(len(steps)), steps=str(len(steps)))
        action, step, self.route_why = decision or ("add", None, "")  # Unreadable: add a step (documented).
        dropped = steps[step - 1:] if action == "fix" else []
        if action == "fix":
            del self.plan[step - 1:]
        record = {"round": self.rounds, "action": action, "step": step, "dropped": dropped,
                  "fallback": decision is None}
        self.history.append(record)
        self.agent.emit(Event("route", record))
        return dropped

    def _add_step(self, last: Attempt | None, dropped: list[str]) -> None:
        """Planner: the first step, or the next one given the last script's output."""
        if last is None:
            messages = planner.first_step_messages(self.context)
        else:
            messages = planner.next_step_messages(self.context, self._steps(), self._output(last), dropped,
                                                  self.reason, self.route_why)
        step = self.agent.ask(planner.ROLE, messages, planner.parse)
        if step is None:
            raise ModelError("the planner gave no usable step, even after a format reminder")
        self.plan.append(PlanStep(step))
        self.agent.emit(Event("plan", {"round": self.rounds, "steps": self._steps(), "added": len(self.plan),
                                       "dropped": dropped}))

    def _implement(self) -> Attempt:
        """Coder extends the script of the steps before the new one; the whole script re-runs."""
        base = self.plan[-2].code if len(self.plan) > 1 else None
        printed = self.last.printed_chars if self.last else 0  # Told when its output was cut, and how much.
        cut = self.last.cut_chars(self.output_chars) if self.last else 0
        messages = coder.messages(self.context, self._steps(), base, self.output_chars, printed, cut)
        attempt = self.agent.write_and_run(coder.ROLE, messages, "solution", self.context)
        self.plan[-1].code = attempt.code
        return attempt

    def _verify(self, last: Attempt) -> bool:
        """Verifier; a script that did not run cannot be sufficient, so that costs no call."""
        if not last.ok:
            sufficient, reason = False, "the script did not run successfully"
        else:
            figures = verifier.figures_in(last.execution.stdout, str(self.agent.executor.workdir))
            verdict = self.agent.ask(verifier.ROLE, verifier.messages(self.context, self._steps(), last.code,
                                                                      self._output(last), figures), verifier.parse)
            # Documented fallback: an unreadable verdict counts as No.
            sufficient, reason = verdict if verdict is not None else (False, "unreadable verdict, taken as No")
            reason = reason or "judged by the verifier (no reason given)"
        self.reason = reason
        self.agent.emit(Event("verdict", {"round": self.rounds, "sufficient": sufficient, "reason": reason}))
        return sufficient

    def _finalize(self, best: Attempt | None, verified: bool, stop: BudgetExhausted | None = None) -> LoopResult:
        """Finalizer, from the last script that ran: the answer copied from its output when that output
        already holds it (no script runs, the data is not read again), else a script printing only it."""
        self.agent.emit(Event("finalizing", {"verified": verified, "budget": stop.kind if stop else None}))
        if best is None:
            why = f"{stop.reason}, and " if stop else ""
            return self._result(FAILED, None, f"{why}no script ran successfully in {self.rounds} round(s)")
        self.agent.finalizing()  # The answer still gets made, within a short grace period.
        messages = finalizer.messages(self.context, self._steps(), best.code, self._output(best), self.reason)
        try:
            reply = self.agent.ask(finalizer.ROLE, messages, finalizer.parse)
            if reply is None:
                return self._result(FAILED, None, "the finalizer gave neither an answer nor a script, even after a "
                                                  "format reminder")
            if reply.unanswerable is not None:
                return self._unanswerable(reply.unanswerable, verified)
            if reply.answer is not None:  # The output held it: copied, not recomputed.
                self.agent.emit(Event("answered_from_output", {"round": self.rounds, "answer": reply.answer,
                                                               "verified": verified}))
                return self._answered(reply, reply.answer, FROM_OUTPUT, verified, stop)
            final = self.agent.run_and_repair(reply.script, "final", self.context)
        except BudgetExhausted as late:  # Its grace period ran out too, mid-call or mid-script.
            why = f"{stop.reason}, and " if stop else ""
            return self._result(FAILED, None, f"{why}{late.reason} before the final answer was written")
        answer = final.execution.stdout.strip() if final.ok else ""
        if not answer:
            why = "printed nothing" if final.ok else "did not run"
            return self._result(FAILED, None, f"the finalizer's script {why}", final)
        return self._answered(reply, answer, FROM_SCRIPT, verified, stop, final)

    def _answered(self, reply: finalizer.FinalReply, answer: str, answer_from: str, verified: bool,
                  stop: BudgetExhausted | None, final: Attempt | None = None) -> LoopResult:
        if verified:
            outcome, reason = VERIFIED, "the verifier judged the plan sufficient"
        elif stop:
            outcome, reason = stop.outcome, f"{stop.reason} before a verified plan"
        else:
            outcome, reason = UNVERIFIED, f"round cap reached ({self.max_rounds} rounds) without a verified plan"
        printed = "\n".join(a.execution.stdout for a in (self.best, final) if a and a.execution)
        result = self._result(outcome, answer, reason, final, answer_from=answer_from)
        result.note, result.reading = reply.note, readings.behind(reply.reading, answer, printed)
        return result

    def _unanswerable(self, why: str, verified: bool) -> LoopResult:
        """The verified output shows the folder lacks what the question needs: a result, not an answer."""
        if verified:
            return self._result(UNANSWERABLE, None, f"the data cannot answer the question: {why}")
        return self._result(FAILED, None, f"no verified answer; the finalizer found the data cannot answer: {why}")

    # -- helpers ---------------------------------------------------------------------------------

    def scripts(self) -> list[str]:
        """The scripts behind the final plan: what the answer was computed from."""
        return [step.code for step in self.plan if step.code]

    def partial(self, outcome: str, reason: str, error_kind: str | None = None) -> LoopResult:
        """The state so far, for a run stopped from outside (Ctrl-C, SIGTERM)."""
        return self._result(outcome, None, reason, error_kind=error_kind)

    def state(self) -> dict:
        """What `dsstar resume` needs to continue after the last completed round."""
        return {"rounds": self.rounds, "verified": self.verified, "history": self.history, "reason": self.reason,
                "plan": [asdict(step) for step in self.plan],
                "last": self.last.to_dict() if self.last else None,
                "best": self.best.to_dict() if self.best else None}

    def _restore(self, state: dict) -> None:
        self.rounds, self.verified, self.history = state["rounds"], state["verified"], list(state["history"])
        self.reason = state.get("reason", "")  # Checkpoints before the reason was kept have none.
        self.agent.round = self.rounds  # A finalizer run straight after resuming belongs to the last round.
        self.plan = [PlanStep(**step) for step in state["plan"]]
        self.last = Attempt.from_dict(state["last"]) if state["last"] else None
        self.best = Attempt.from_dict(state["best"]) if state["best"] else None
        if state.get("announce", True):  # (Not after a short round of this run's own: memory/shortcut.py.)
            self.agent.emit(Event("resumed", {"rounds": self.rounds, "steps": self._steps()}))

    def _steps(self) -> list[str]:
        return [step.text for step in self.plan]

    def _output(self, attempt: Attempt) -> str:
        """What a role is shown of a script's run: quoted, as data (it prints cells of the data)."""
        return quote(attempt.output(self.output_chars), "output of the script")

    def _result(self, outcome: str, answer: str | None, reason: str, final: Attempt | None = None,
                error_kind: str | None = None, answer_from: str | None = None) -> LoopResult:
        return LoopResult(outcome=outcome, answer=answer, reason=reason, rounds=self.rounds, plan=self._steps(),
                          history=self.history, final_code=final.code if final else "",
                          final_output=final.output(self.output_chars) if final else "", answer_from=answer_from,
                          error_kind=error_kind, solution_code=self.best.code if self.best else "")
