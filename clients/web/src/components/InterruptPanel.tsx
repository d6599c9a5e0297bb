import { useId, useState } from "react";

import { textOf } from "../api";
import type { DecisionInput, InterruptInfo } from "../interrupts";
import { Button, inputClass } from "./controls";

/** What was decided, in words. */
export function decisionText(interrupt: InterruptInfo): string {
  const decision = interrupt.decision;
  if (interrupt.state === "EXPIRED") return "Expired: no decision in time (counts as denied).";
  if (interrupt.state === "CANCELLED") return "Cancelled: the answer was stopped.";
  if (!decision) return "";
  const by = ` by ${decision.decidedBy}`;
  const why = decision.reason ? `: ${decision.reason}` : "";
  if (interrupt.kind === "INPUT") {
    if (decision.approved === false) return `Declined${by}${why}`;
    return `Answered${by}: ${textOf(decision.response)}`;
  }
  if (decision.approved) return `Approved${decision.editedArguments != null ? " with edited arguments" : ""}${by}`;
  return `Denied${by}${why}`;
}

const panelClass = "mt-2 flex flex-col gap-2 rounded-lg border border-amber-300 bg-amber-50 p-3 text-sm dark:border-amber-700 dark:bg-amber-950/40";

/**
 * A tool call waiting for a person (Approve, Deny with an optional reason, Edit arguments
 * as JSON), or a question (its answer); once decided, the decision. Decided once: no
 * buttons afterwards.
 */
export function InterruptPanel({ interrupt, decide }: {
  interrupt: InterruptInfo;
  decide?: (interrupt: InterruptInfo, decision: DecisionInput) => Promise<boolean>;
}) {
  if (interrupt.state !== "PENDING" || !decide) {
    const text = decisionText(interrupt);
    if (!text && interrupt.state === "PENDING") {
      return <p className="mt-1 text-xs text-zinc-600 dark:text-zinc-400">Waiting for a person’s decision.</p>;
    }
    return (
      <p className={`mt-1 text-sm ${interrupt.decision?.approved === false || interrupt.state !== "RESOLVED" ? "text-red-800 dark:text-red-300" : "text-emerald-800 dark:text-emerald-300"}`}>
        {text}
      </p>
    );
  }
  return interrupt.kind === "INPUT"
    ? <QuestionForm interrupt={interrupt} decide={decide} />
    : <ApprovalForm interrupt={interrupt} decide={decide} />;
}

function ApprovalForm({ interrupt, decide }: { interrupt: InterruptInfo; decide: (interrupt: InterruptInfo, decision: DecisionInput) => Promise<boolean> }) {
  const [mode, setMode] = useState<"choose" | "deny" | "edit">("choose");
  const [reason, setReason] = useState("");
  const [edited, setEdited] = useState(() => JSON.stringify(interrupt.arguments ?? {}, null, 2));
  const [pending, setPending] = useState(false);
  const errorId = useId();
  let invalid: string | null = null;
  try {
    JSON.parse(edited);
  } catch (error) {
    invalid = (error as Error).message;
  }
  const submit = async (decision: DecisionInput) => {
    setPending(true);
    await decide(interrupt, decision);
    setPending(false);
  };
  return (
    <div role="group" aria-label={`Approve ${interrupt.toolName ?? "tool call"}?`} className={panelClass}>
      <p className="font-medium text-amber-950 dark:text-amber-100">
        Waiting for your approval{interrupt.reason ? `: ${interrupt.reason}` : "."}
      </p>
      {mode === "choose" && (
        <div className="flex flex-wrap gap-2">
          <Button look="primary" disabled={pending} onClick={() => void submit({ approved: true })}>Approve</Button>
          <Button disabled={pending} onClick={() => setMode("deny")}>Deny</Button>
          <Button look="quiet" disabled={pending} onClick={() => setMode("edit")}>Edit arguments</Button>
        </div>
      )}
      {mode === "deny" && (
        <form className="flex flex-wrap items-center gap-2" onSubmit={(event) => {
          event.preventDefault();
          void submit({ approved: false, ...(reason.trim() ? { reason: reason.trim() } : {}) });
        }}>
          <input aria-label="Reason (optional)" placeholder="Why not? (optional)" value={reason} autoFocus
            onChange={(event) => setReason(event.target.value)} className={`${inputClass} min-w-0 flex-1`} />
          <Button look="danger" type="submit" disabled={pending}>Deny</Button>
          <Button look="quiet" onClick={() => setMode("choose")}>Cancel</Button>
        </form>
      )}
      {mode === "edit" && (
        <form className="flex flex-col gap-2" onSubmit={(event) => {
          event.preventDefault();
          if (!invalid) void submit({ approved: true, editedArguments: JSON.parse(edited) as unknown });
        }}>
          <textarea aria-label="Arguments (JSON)" value={edited} rows={5} autoFocus spellCheck={false}
            aria-invalid={invalid !== null} aria-describedby={invalid ? errorId : undefined}
            onChange={(event) => setEdited(event.target.value)}
            className={`${inputClass} font-mono text-xs aria-[invalid=true]:border-red-600`} />
          {invalid && <p id={errorId} role="alert" className="text-xs text-red-800 dark:text-red-300">Not valid JSON: {invalid}</p>}
          <div className="flex gap-2">
            <Button look="primary" type="submit" disabled={pending || invalid !== null}>Approve with these arguments</Button>
            <Button look="quiet" onClick={() => setMode("choose")}>Cancel</Button>
          </div>
        </form>
      )}
    </div>
  );
}

function QuestionForm({ interrupt, decide }: { interrupt: InterruptInfo; decide: (interrupt: InterruptInfo, decision: DecisionInput) => Promise<boolean> }) {
  const [answer, setAnswer] = useState("");
  const [pending, setPending] = useState(false);
  const schema = interrupt.responseSchema as { type?: unknown } | null;
  // A schema asking for more than a string takes JSON (a bare word is sent as a string).
  const structured = schema !== null && typeof schema === "object" && schema.type !== undefined && schema.type !== "string";
  const submit = async (decision: DecisionInput) => {
    setPending(true);
    await decide(interrupt, decision);
    setPending(false);
  };
  const response = (): unknown => {
    if (!structured) return answer;
    try {
      return JSON.parse(answer) as unknown;
    } catch {
      return answer;
    }
  };
  return (
    <form aria-label="Answer the question" className={panelClass} onSubmit={(event) => {
      event.preventDefault();
      if (answer.trim()) void submit({ response: response() });
    }}>
      <p className="font-medium text-amber-950 dark:text-amber-100">{interrupt.prompt}</p>
      <div className="flex flex-wrap items-center gap-2">
        <input aria-label="Your answer" placeholder={structured ? "Your answer (JSON)" : "Your answer"} value={answer}
          onChange={(event) => setAnswer(event.target.value)} className={`${inputClass} min-w-0 flex-1`} />
        <Button look="primary" type="submit" disabled={pending || !answer.trim()}>Send answer</Button>
        <Button look="quiet" disabled={pending} onClick={() => void submit({ approved: false })}>Decline</Button>
      </div>
    </form>
  );
}
