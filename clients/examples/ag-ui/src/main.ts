// An AG-UI page: the protocol's own client (@ag-ui/client's HttpAgent) against
// chatql's POST /ag-ui. The thread is a chatql chat; a run sends the person's message
// and follows the reply's events; a run that ends with the `interrupt` outcome (the
// agent asks to run a tool) shows Approve / Deny, and the decision starts the next run
// with `resume`.
import { HttpAgent, randomUUID } from "@ag-ui/client";
import type { Interrupt, ResumeEntry, RunAgentInput, UserMessage } from "@ag-ui/core";

import { type Decision, renderInterrupts, renderMessages } from "./render";

// ?thread=<id> names the chat (a new one per page load without it); ?assistant=<id>
// the assistant that answers (default "demo"); ?user=<id> the identity sent as
// X-User-Id (chatql's dev mode; a real deployment sends a bearer token instead).
const params = new URLSearchParams(location.search);
if (!params.has("thread")) {
  params.set("thread", randomUUID());
  history.replaceState(null, "", `?${params}`);
}
const threadId = params.get("thread") as string;
const assistantId = params.get("assistant") ?? "demo";
const headers = { "X-User-Id": params.get("user") ?? "alice" };

const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const log = byId<HTMLElement>("log");
const status = byId<HTMLParagraphElement>("status");
const error = byId<HTMLParagraphElement>("error");
const interruptList = byId<HTMLDivElement>("interrupts");
const form = byId<HTMLFormElement>("composer");
const box = byId<HTMLInputElement>("message");
const send = byId<HTMLButtonElement>("send");

// The person's last message of this thread, so a reload can ask chatql where the
// thread is: posting a message chatql already stored answers with MESSAGES_SNAPSHOT
// (and the reply still being written, if any) instead of appending it again.
const lastKey = `chatql-ag-ui:${threadId}`;
const lastSent = (): UserMessage | null => JSON.parse(sessionStorage.getItem(lastKey) ?? "null") as UserMessage | null;

const agent = new HttpAgent({ url: "/ag-ui", headers, threadId });
let interrupts: Interrupt[] = [];
const decisions = new Map<string, Decision>();
let running = false;

function draw(): void {
  renderMessages(log, agent.messages);
  renderInterrupts(interruptList, interrupts, agent.messages, decide);
  // A thread with open interrupts takes only their answers (the client refuses a run
  // that leaves one unanswered).
  send.disabled = running || interrupts.length > 0;
}

agent.subscribe({ onMessagesChanged: () => renderMessages(log, agent.messages) });

/** One run: the reply's events update `agent.messages`; its end says what comes next. */
async function run(extra: Pick<RunAgentInput, "resume"> = {}): Promise<void> {
  running = true;
  interrupts = [];
  error.textContent = "";
  status.textContent = "The agent is answering…";
  draw();
  let outcome = "failed";
  try {
    await agent.runAgent({ forwardedProps: { assistantId }, ...extra }, {
      onRunFinishedEvent(finished) {
        outcome = finished.outcome;
        if (finished.outcome === "interrupt") interrupts = finished.interrupts;
      },
      onRunErrorEvent({ event }) {
        error.textContent = `The run failed: ${event.message}`;
      },
    });
  } catch (failure) {
    if (!error.textContent) error.textContent = `The run failed: ${failure instanceof Error ? failure.message : String(failure)}`;
  } finally {
    running = false;
    status.textContent = {
      success: "Ready.",
      interrupt: "Waiting for your decision.",
      cancelled: "The reply was stopped.",
    }[outcome] ?? "Ready.";
    draw();
  }
}

/** A decision on one interrupt; when every open one has its answer, the next run resumes. */
function decide(interrupt: Interrupt, decision: Decision): void {
  decisions.set(interrupt.id, decision);
  if (!interrupts.every((open) => decisions.has(open.id))) return;
  const resume: ResumeEntry[] = interrupts.map((open) => ({ interruptId: open.id, ...(decisions.get(open.id) as Decision) }));
  decisions.clear();
  void run({ resume });
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const content = box.value.trim();
  if (!content || send.disabled) return;
  const message: UserMessage = { id: randomUUID(), role: "user", content };
  sessionStorage.setItem(lastKey, JSON.stringify(message));
  agent.addMessage(message);
  box.value = "";
  void run();
});

// A reload: the thread as chatql has it, then whatever of the reply is still coming.
const previous = lastSent();
if (previous !== null) {
  agent.setMessages([previous]);
  void run();
} else {
  draw();
}
