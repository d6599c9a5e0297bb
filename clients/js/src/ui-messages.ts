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
 * Files: a person's message whose `content` is a list of parts (`{type: "text", text}`,
 * `{type: "file", fileId, mediaType, filename}`) gives text and file parts, and an
 * agent's `file` message (props `{fileId, mediaType, filename}`) a file part — the AI
 * SDK's `{type: "file", mediaType, filename, url}`, `url` the signed address of the
 * message's `files` (as fetched: `Message.files { id filename mediaType url }`). A file
 * the message's `files` do not hold (not fetched, or no longer readable) has no part (a
 * `file` message then stays a `data-file` part).
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
  /** The files the message references, with their signed addresses (`Message.files`). */
  readonly files?: readonly StoredFile[] | null;
}

/** The fields of a file (`File`) a file part is made from. */
export interface StoredFile {
  readonly id: string;
  readonly filename: string;
  readonly mediaType: string;
  /** A signed, short-lived address (`File.url`). */
  readonly url: string;
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

function isPart(value: unknown): value is Props & { readonly type: string } {
  return typeof value === "object" && value !== null && typeof (value as Props).type === "string";
}

/** The text a message carries (`content`, else `text`; of a list of parts, its text parts). */
export function textOf(message: { readonly props: unknown }): string {
  const props = propsOf(message);
  const content = props.content ?? props.text;
  if (Array.isArray(content) && content.every(isPart)) {
    return content.map((part) => (part.type === "text" && typeof part.text === "string" ? part.text : "")).join("");
  }
  return typeof content === "string" ? content : content === undefined ? "" : JSON.stringify(content);
}

type FilePart = Extract<Part, { type: "file" }>;

/** The AI SDK file part for a stored file reference (`{fileId | url, mediaType, filename}`). */
function filePart(reference: Props, files: readonly StoredFile[] | null | undefined): FilePart | undefined {
  const file = typeof reference.fileId === "string" ? files?.find((candidate) => candidate.id === reference.fileId) : undefined;
  const url = file?.url ?? (typeof reference.fileId !== "string" && typeof reference.url === "string" ? reference.url : undefined);
  if (url === undefined) return undefined;
  const mediaType = typeof reference.mediaType === "string" && reference.mediaType ? reference.mediaType : file?.mediaType ?? "application/octet-stream";
  const filename = typeof reference.filename === "string" ? reference.filename : file?.filename;
  return { type: "file", mediaType, ...(filename === undefined ? {} : { filename }), url };
}

/** A person's message's parts: its text, and its files when its content is a list of parts. */
function inputParts(message: StoredMessage): Part[] {
  const content = propsOf(message).content;
  if (!Array.isArray(content) || !content.every(isPart)) return [{ type: "text", text: textOf(message), state: "done" }];
  const parts: Part[] = [];
  for (const part of content) {
    if (part.type === "text" && typeof part.text === "string") {
      parts.push({ type: "text", text: part.text, state: "done" });
    } else if (part.type === "file") {
      const file = filePart(part, message.files);
      if (file !== undefined) parts.push(file);
    }
  }
  return parts;
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
      parts.push(...inputParts(message));
    } else if (message.type === "file" && filePart(propsOf(message), message.files) !== undefined) {
      parts.push(filePart(propsOf(message), message.files) as FilePart);
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

/** A part of a person's stored message (`props.content` as a list). */
export type StoredPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "file"; readonly fileId: string; readonly mediaType: string; readonly filename?: string }
  | { readonly type: "file"; readonly url: string; readonly mediaType: string; readonly filename?: string };

/** A file a message names before it is stored: by chatql file id, or by address (a URL or a data URL). */
export interface FileReference {
  readonly fileId?: string;
  readonly url?: string;
  readonly mediaType: string;
  readonly filename?: string;
}

/**
 * The id of the chatql file an address names: one of the service's own file addresses
 * (`…/files/{id}`, signed or not); undefined for any other address.
 */
export function fileIdOfUrl(url: string): string | undefined {
  if (url.startsWith("data:")) return undefined;
  let path: string;
  try {
    path = new URL(url, "http://localhost/").pathname;
  } catch {
    return undefined;
  }
  return /\/files\/([A-Za-z0-9_-]{1,64})$/.exec(path)?.[1];
}

/** A stored file part for a reference: a chatql file by id, else the address as it is. */
export function storedFilePart(reference: FileReference): StoredPart | undefined {
  const fileId = reference.fileId ?? (reference.url === undefined ? undefined : fileIdOfUrl(reference.url));
  const named = reference.filename === undefined ? {} : { filename: reference.filename };
  if (fileId !== undefined) return { type: "file", fileId, mediaType: reference.mediaType, ...named };
  if (reference.url !== undefined) return { type: "file", url: reference.url, mediaType: reference.mediaType, ...named };
  return undefined;
}

/** A person's `props.content`: the text alone as a string, or (with files) the list of parts. */
export function storedContent(parts: readonly StoredPart[]): string | StoredPart[] {
  if (parts.every((part) => part.type === "text")) return parts.map((part) => (part as { text: string }).text).join("");
  return [...parts];
}

/**
 * A person's UI message as stored content: its text, and its file parts — a part at one
 * of the service's file addresses (as `toUIMessages` or an upload gives) as a reference
 * `{type: "file", fileId, mediaType, filename}`, any other (a data URL, say) by its `url`.
 */
export function uiMessageContent(message: Pick<UIMessage, "parts">): string | StoredPart[] {
  const parts: StoredPart[] = [];
  for (const part of message.parts) {
    if (part.type === "text") parts.push({ type: "text", text: part.text });
    else if (part.type === "file") {
      const file = storedFilePart({ url: part.url, mediaType: part.mediaType, ...(part.filename === undefined ? {} : { filename: part.filename }) });
      if (file !== undefined) parts.push(file);
    }
  }
  return storedContent(parts);
}

/**
 * The content with its data-URL files uploaded (`upload` stores the bytes and answers the
 * file's id): the record keeps file ids, never bytes.
 */
export async function withUploadedFiles(
  content: string | StoredPart[],
  upload: (blob: Blob, filename: string | undefined, mediaType: string) => Promise<{ readonly id: string; readonly mediaType: string; readonly filename: string }>,
): Promise<string | StoredPart[]> {
  if (typeof content === "string") return content;
  return Promise.all(content.map(async (part) => {
    if (part.type !== "file" || !("url" in part) || !part.url.startsWith("data:")) return part;
    const blob = await (await fetch(part.url)).blob();
    const file = await upload(blob, part.filename, part.mediaType || blob.type);
    return { type: "file", fileId: file.id, mediaType: file.mediaType, filename: file.filename } as const;
  }));
}
