/**
 * chatql messages as the AI SDK's `UIMessage`s.
 *
 * A person's message (role `USER`) is one user `UIMessage`; the messages an agent wrote in
 * reply (`text`, `thinking`, `tool_call`, the `TOOL` results, any custom type) up to the
 * next person's message are the parts of one assistant `UIMessage`, whose id is the id of
 * its first chatql message. Parts: `text` → text, `thinking` → reasoning, a `tool_call`
 * (props `{id, name, arguments}`) with its result (props `tool_call_id` naming the call)
 * → a `tool-<name>` part, any other type → a `data-<type>` part carrying the props.
 *
 * Given the chat's interrupts (`Chat.interrupts`), a tool call that asked for approval
 * takes the AI SDK's approval states: `approval-requested` while pending,
 * `approval-responded` once approved (then `output-available` with its result),
 * `output-denied` when denied, expired or cancelled — its `approval.id` is the
 * interrupt's id, what `addToolApprovalResponse` answers.
 */

import type { UIMessage } from "ai";

/** The fields of a stored message these functions read. */
export interface StoredMessage {
  readonly id: string;
  readonly role: string;
  readonly type: string;
  readonly props: unknown;
  readonly parentId?: string | null;
}

type Part = UIMessage["parts"][number];

/** The fields of an interrupt (`Chat.interrupts`) the approval states are read from. */
export interface InterruptView {
  readonly id: string;
  readonly state: string;
  readonly decision?: { readonly approved?: boolean | null; readonly reason?: string | null } | null;
}

/** Options of {@link toUIMessages}. */
export interface ToUIMessagesOptions {
  /** The chat's interrupts: tool calls that asked for approval show its state. */
  readonly interrupts?: readonly InterruptView[];
}

type Approval = { id: string; approved?: boolean; reason?: string };

/** A tool part's state and approval for the interrupt of its call, if it asked. */
function approvalState(interrupt: InterruptView | undefined): { state: string; approval: Approval } | undefined {
  if (interrupt === undefined) return undefined;
  const reason = interrupt.decision?.reason ?? undefined;
  if (interrupt.state === "PENDING") return { state: "approval-requested", approval: { id: interrupt.id } };
  if (interrupt.state === "RESOLVED" && interrupt.decision?.approved !== false) {
    return { state: "approval-responded", approval: { id: interrupt.id, approved: true, ...(reason ? { reason } : {}) } };
  }
  const why = interrupt.state === "RESOLVED" ? reason : interrupt.state.toLowerCase();
  return { state: "output-denied", approval: { id: interrupt.id, approved: false, ...(why ? { reason: why } : {}) } };
}
type Props = Readonly<Record<string, unknown>>;

function propsOf(message: { readonly props: unknown }): Props {
  const props = message.props;
  return typeof props === "object" && props !== null && !Array.isArray(props) ? (props as Props) : {};
}

/** The text a message carries (`content`, else `text`). */
export function textOf(message: { readonly props: unknown }): string {
  const props = propsOf(message);
  const content = props.content ?? props.text;
  return typeof content === "string" ? content : content === undefined ? "" : JSON.stringify(content);
}

/** A tool call's arguments as an object when they are complete JSON, else the raw text. */
export function parseArguments(text: string): unknown {
  if (text === "") return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The call a tool result answers (`tool_call_id`, `toolCallId`, `callId` or `id`). */
export function resultCallId(message: { readonly props: unknown }): string | undefined {
  const props = propsOf(message);
  const id = props.tool_call_id ?? props.toolCallId ?? props.callId ?? props.id;
  return typeof id === "string" ? id : undefined;
}

/** A tool call's id and name (`props.id` / `props.name`, else the message id). */
export function toolCallOf(message: StoredMessage | { readonly id: string; readonly props: unknown }): {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly arguments: string;
} {
  const props = propsOf(message);
  const args = props.arguments;
  return {
    toolCallId: typeof props.id === "string" ? props.id : message.id,
    toolName: typeof props.name === "string" ? props.name : "tool",
    arguments: typeof args === "string" ? args : args === undefined ? "" : JSON.stringify(args),
  };
}

/** Whether a message is a tool result (role `TOOL` or type `tool_result`). */
export function isToolResult(message: { readonly role: string; readonly type: string }): boolean {
  return message.role === "TOOL" || message.type === "tool_result";
}

/** The UI role of a chatql role. */
export function uiRole(role: string): UIMessage["role"] {
  return role === "USER" ? "user" : role === "SYSTEM" ? "system" : "assistant";
}

/** The parts of one UI message made of these chatql messages (in order). */
export function partsOf(messages: readonly StoredMessage[], interrupts: ReadonlyMap<string, InterruptView> = new Map()): Part[] {
  const parts: Part[] = [];
  const tools = new Map<string, number>();
  for (const message of messages) {
    if (message.type === "text" || message.type === "user_input") {
      parts.push({ type: "text", text: textOf(message), state: "done" });
    } else if (message.type === "thinking") {
      parts.push({ type: "reasoning", id: message.id, text: textOf(message), state: "done" });
    } else if (message.type === "tool_call") {
      const call = toolCallOf(message);
      tools.set(call.toolCallId, parts.length);
      const asked = approvalState(interrupts.get(message.id));
      parts.push({
        type: `tool-${call.toolName}`, toolCallId: call.toolCallId, state: asked?.state ?? "input-available",
        input: parseArguments(call.arguments), providerExecuted: true, ...(asked ? { approval: asked.approval } : {}),
      } as Part);
    } else if (isToolResult(message) && tools.has(resultCallId(message) ?? "")) {
      const at = tools.get(resultCallId(message) ?? "") as number;
      const call = parts[at] as Part & { input: unknown };
      const props = propsOf(message);
      parts[at] = { ...call, state: "output-available", output: props.content ?? props } as Part;
    } else {
      parts.push({ type: `data-${message.type}`, id: message.id, data: message.props } as Part);
    }
  }
  return parts;
}

/**
 * Groups messages (in order along one branch) into turns: a person's message alone,
 * or the run of messages an agent wrote until the next person's message.
 */
export function turnsOf<M extends StoredMessage>(messages: readonly M[]): M[][] {
  const turns: M[][] = [];
  let current: M[] | null = null;
  for (const message of messages) {
    const role = uiRole(message.role);
    const previous = current?.[0];
    if (current !== null && previous !== undefined && role === "assistant" && uiRole(previous.role) === "assistant") {
      current.push(message);
    } else {
      current = [message];
      turns.push(current);
    }
  }
  return turns;
}

/**
 * Stored messages of one branch (oldest first, e.g. a `messages` page of the active
 * branch) as the AI SDK's `UIMessage[]`, ready for `useChat({ messages })`.
 */
export function toUIMessages(messages: readonly StoredMessage[], options: ToUIMessagesOptions = {}): UIMessage[] {
  const interrupts = new Map((options.interrupts ?? []).map((interrupt) => [interrupt.id, interrupt]));
  return turnsOf(messages).map((turn) => {
    const first = turn[0] as StoredMessage;
    return { id: first.id, role: uiRole(first.role), parts: partsOf(turn, interrupts) };
  });
}

/** The text of a `UIMessage` (its text parts joined), as a person's message is stored. */
export function uiMessageText(message: Pick<UIMessage, "parts">): string {
  return message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
}
