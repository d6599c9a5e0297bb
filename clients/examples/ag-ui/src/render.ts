// The conversation as DOM: the agent's AG-UI messages (`agent.messages`, kept by
// @ag-ui/client as the run's events arrive) and the interrupts a run ended with.
// No state of its own: each call draws everything anew from what it is given.
import type { Interrupt, Message, ToolCall } from "@ag-ui/core";

/** One person's decision on an interrupt: the `payload` of its resume entry, or cancelled. */
export type Decision = { status: "resolved"; payload: unknown } | { status: "cancelled" };

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<HTMLElementTagNameMap[K]> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

function textOf(content: Message["content"]): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
  return content === undefined ? "" : JSON.stringify(content);
}

/** A reply's tool calls, one row each: the tool, its arguments as they stream, its result. */
class ToolTable {
  readonly table = element("table", {}, element("caption", { textContent: "Tool calls" }));
  private readonly results = new Map<string, HTMLTableCellElement>();

  constructor() {
    const head = element("tr", {}, element("th", { textContent: "Tool", scope: "col" }),
      element("th", { textContent: "Arguments", scope: "col" }), element("th", { textContent: "Result", scope: "col" }));
    this.table.append(element("thead", {}, head), element("tbody"));
  }

  call(call: ToolCall): void {
    const result = element("td", { textContent: "…" });
    this.results.set(call.id, result);
    this.table.tBodies[0].append(element("tr", {},
      element("td", {}, element("code", { textContent: call.function.name })),
      element("td", {}, element("code", { textContent: call.function.arguments })),
      result));
  }

  /** True when the call is one of this table's. */
  result(toolCallId: string, content: string): boolean {
    const cell = this.results.get(toolCallId);
    if (cell === undefined) return false;
    cell.replaceChildren(element("code", { textContent: content }));
    return true;
  }
}

/**
 * The conversation: each of the person's messages an article named "user", the
 * messages after it (thinking, text, tool calls and results) one article named
 * "assistant", its text as paragraphs and its tool calls as the rows of a table.
 */
export function renderMessages(log: HTMLElement, messages: readonly Message[]): void {
  const articles: HTMLElement[] = [];
  let reply: { article: HTMLElement; tools: ToolTable | null } | null = null;
  const open = () => {
    if (reply === null) {
      const article = element("article", {}, element("h2", { textContent: "Agent" }));
      article.setAttribute("aria-label", "assistant");
      articles.push(article);
      reply = { article, tools: null };
    }
    return reply;
  };
  for (const message of messages) {
    switch (message.role) {
      case "user": {
        const article = element("article", {}, element("h2", { textContent: "You" }), element("p", { className: "text", textContent: textOf(message.content) }));
        article.setAttribute("aria-label", "user");
        articles.push(article);
        reply = null;
        break;
      }
      case "reasoning":
        open().article.append(element("details", { open: true }, element("summary", { textContent: "Thinking" }), message.content));
        break;
      case "assistant": {
        const current = open();
        if (message.content) current.article.append(element("p", { className: "text", textContent: message.content }));
        for (const call of message.toolCalls ?? []) {
          if (current.tools === null) {
            current.tools = new ToolTable();
            current.article.append(current.tools.table);
          }
          current.tools.call(call);
        }
        break;
      }
      case "tool": {
        const current = open();
        if (!current.tools?.result(message.toolCallId, textOf(message.content))) {
          current.article.append(element("p", { className: "text", textContent: `Result: ${textOf(message.content)}` }));
        }
        break;
      }
      default:
        break; // system, developer and activity messages are not shown
    }
  }
  log.replaceChildren(...articles);
}

/** The tool call an interrupt is about, as `name(arguments)`, if the messages have it. */
function callOf(messages: readonly Message[], toolCallId: string | undefined): string | null {
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    const call = message.toolCalls?.find((c) => c.id === toolCallId);
    if (call) return `${call.function.name}(${call.function.arguments})`;
  }
  return null;
}

/**
 * What the agent asks: for a tool approval, the call with Approve and Deny; for a
 * question, its prompt with an answer box, Answer and Decline. `decide` gets each
 * decision once.
 */
export function renderInterrupts(
  list: HTMLElement,
  interrupts: readonly Interrupt[],
  messages: readonly Message[],
  decide: (interrupt: Interrupt, decision: Decision) => void,
): void {
  const items = interrupts.map((interrupt) => {
    const buttons = (...pairs: [string, () => Decision][]) =>
      element("div", { className: "decision" }, ...pairs.map(([label, decision]) =>
        element("button", {
          type: "button",
          textContent: label,
          onclick: (event: MouseEvent) => {
            for (const button of (event.currentTarget as HTMLElement).parentElement?.querySelectorAll("button") ?? []) button.disabled = true;
            decide(interrupt, decision());
          },
        })));
    if (interrupt.reason === "tool_approval") {
      const call = callOf(messages, interrupt.toolCallId) ?? "a tool call";
      return element("div", {},
        element("p", {}, "Run ", element("code", { textContent: call }), "?"),
        ...(interrupt.message ? [element("p", { textContent: `Why: ${interrupt.message}` })] : []),
        buttons(["Approve", () => ({ status: "resolved", payload: true })],
          ["Deny", () => ({ status: "resolved", payload: false })]));
    }
    const answer = element("input", { id: `answer-${interrupt.id}`, autocomplete: "off" });
    return element("div", {},
      element("label", { htmlFor: answer.id, textContent: interrupt.message ?? "The agent asks for an answer" }),
      answer,
      buttons(["Answer", () => ({ status: "resolved", payload: answer.value })],
        ["Decline", () => ({ status: "cancelled" })]));
  });
  list.replaceChildren(...items);
  (list.parentElement as HTMLElement).hidden = interrupts.length === 0;
}
