/**
 * The chunk reducer: how a live stream's chunks merge into messages.
 *
 * Exactly the service's rules (the same JSON conformance cases run against both):
 *
 * - A chunk without `messageId` is a message of its own. A non-delta chunk creates the
 *   message, or replaces an existing one's `type` and `props` (its role, block and
 *   thread stay those of the chunk that created it).
 * - A delta chunk edits message `messageId` at `deltaPath` (dotted; digit segments
 *   index lists; default `content`; the empty path is the whole props). Its value is
 *   the chunk's `props` entry named by the path's last segment (the whole `props` for
 *   the empty path). `append` (the default) concatenates strings or extends lists,
 *   creating the value when missing; `replace` and `set` put the value, creating
 *   missing objects on the way; `merge` shallow-merges an object into the object there.
 *   Anything else is `INVALID_DELTA` and changes nothing.
 * - `type: "event"` chunks never change messages.
 *
 * Everything here is pure: a new state is returned and the old one is left as it was,
 * so React can compare by reference and a refused batch needs no undo. Only the objects
 * on the edited path are copied, so appending to a long message costs the same at its
 * end as at its start.
 */

export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

export type Role = "USER" | "ASSISTANT" | "SYSTEM" | "TOOL";
export type DeltaAction = "append" | "replace" | "merge" | "set";
export type ReducerErrorCode = "INVALID_DELTA" | "INVALID_ARGUMENT";

export const DELTA_ACTIONS: readonly DeltaAction[] = ["append", "replace", "merge", "set"];
const ROLES: readonly string[] = ["USER", "ASSISTANT", "SYSTEM", "TOOL"];
const MAX_TYPE = 64;
const MAX_NAME = 200;
const DEFAULT_PATH = "content";

/** A chunk that cannot apply; `code` is the service's `extensions.code` for it. */
export class ReducerError extends Error {
  readonly code: ReducerErrorCode;

  constructor(code: ReducerErrorCode, message: string) {
    super(message);
    this.name = "ReducerError";
    this.code = code;
  }
}

/** The fields of a chunk the reducer reads: a wire `Chunk` or a producer `ChunkInput`. */
export interface ChunkFields {
  readonly type: string;
  readonly messageId?: string | null;
  readonly chunkId?: string | null;
  readonly blockId?: string | null;
  readonly threadId?: string | null;
  readonly role?: string | null;
  readonly props?: unknown;
  readonly delta?: boolean | null;
  readonly deltaPath?: string | null;
  readonly deltaAction?: string | null;
}

/** A message as merged so far. */
export interface MessageState {
  readonly id: string;
  readonly type: string;
  readonly role: string;
  readonly props: JsonObject;
  readonly blockId: string | null;
  readonly threadId: string | null;
}

/** Messages by id, in order of first arrival (a `Map` keeps insertion order). */
export type MessagesView = ReadonlyMap<string, MessageState>;

export const EMPTY_VIEW: MessagesView = new Map();

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function own(object: JsonObject, key: string): Json | undefined {
  return Object.prototype.hasOwnProperty.call(object, key) ? object[key] : undefined;
}

/** `{...object, [key]: value}`; a computed key never reaches `__proto__`'s setter. */
function withKey(object: JsonObject, key: string, value: Json): JsonObject {
  return { ...object, [key]: value };
}

function kindOf(value: Json | undefined): string {
  if (value === undefined || value === null) return "NoneType";
  if (Array.isArray(value)) return "list";
  if (typeof value === "string") return "str";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  return "dict";
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

function listIndex(list: readonly Json[], segment: string, path: string): number {
  if (!/^[0-9]+$/.test(segment) || Number(segment) >= list.length) {
    throw new ReducerError(
      "INVALID_DELTA",
      `deltaPath '${path}': '${segment}' is not an index of that list`,
    );
  }
  return Number(segment);
}

/** A deep copy of a JSON value (chunk props are never shared with the state). */
export function copyJson(value: Json): Json {
  if (Array.isArray(value)) return value.map(copyJson);
  if (isObject(value)) {
    const copy: JsonObject = {};
    for (const key of Object.keys(value)) {
      Object.defineProperty(copy, key, {
        value: copyJson(value[key] as Json), enumerable: true, writable: true, configurable: true,
      });
    }
    return copy;
  }
  return value;
}

function apply(
  current: Json | undefined,
  action: string,
  value: Json,
  path: string,
): Json {
  const missing = current === undefined || current === null;
  if (action === "append") {
    if (typeof value === "string" && (missing || typeof current === "string")) {
      return missing ? value : (current as string) + value;
    }
    if (Array.isArray(value) && (missing || Array.isArray(current))) {
      return missing ? value : [...(current as Json[]), ...value];
    }
    throw new ReducerError(
      "INVALID_DELTA",
      `deltaPath '${path}': cannot append a ${kindOf(value)} to a ${kindOf(current)}`,
    );
  }
  if (action === "replace" || action === "set") return value;
  if (action === "merge") {
    if (!isObject(value) || !(missing || isObject(current))) {
      throw new ReducerError("INVALID_DELTA", `deltaPath '${path}': merge needs an object into an object`);
    }
    return { ...((missing ? {} : current) as JsonObject), ...value };
  }
  throw new ReducerError("INVALID_DELTA", `unknown deltaAction '${action}'`);
}

/** `container` with `segments[at:]` edited; copies only the objects on the path. */
function editAt(
  container: Json,
  segments: readonly string[],
  at: number,
  action: string,
  value: Json,
  path: string,
): Json {
  const segment = segments[at] as string;
  const last = at === segments.length - 1;
  if (Array.isArray(container)) {
    const index = listIndex(container, segment, path);
    const child = container[index] as Json;
    const next = last ? apply(child, action, value, path) : editAt(child, segments, at + 1, action, value, path);
    const copy = container.slice();
    copy[index] = next;
    return copy;
  }
  if (isObject(container)) {
    const child = own(container, segment);
    let next: Json;
    if (last) {
      next = apply(child, action, value, path);
    } else {
      const through = child === undefined || child === null ? {} : child;
      next = editAt(through, segments, at + 1, action, value, path);
    }
    return withKey(container, segment, next);
  }
  throw new ReducerError("INVALID_DELTA", `deltaPath '${path}' runs through a ${kindOf(container)}`);
}

/**
 * `props` after one delta (a new object; `props` is unchanged). Throws
 * {@link ReducerError} `INVALID_DELTA` when the delta cannot apply.
 */
export function applyDelta(
  props: JsonObject,
  deltaPath: string | null | undefined,
  deltaAction: string | null | undefined,
  chunkProps: unknown,
): JsonObject {
  const action = deltaAction || "append";
  const path = deltaPath ?? DEFAULT_PATH;
  const given: JsonObject = isObject(chunkProps) ? chunkProps : {};
  const segments = path === "" ? [] : path.split(".");
  if (segments.length === 0) {
    if (action !== "merge" && action !== "replace" && action !== "set") {
      throw new ReducerError("INVALID_DELTA", "append needs a deltaPath: the message props are an object");
    }
    const whole = copyJson(given) as JsonObject;
    return action === "merge" ? { ...props, ...whole } : whole;
  }
  const lastSegment = segments[segments.length - 1] as string;
  const entry = own(given, lastSegment);
  if (entry === undefined) {
    throw new ReducerError("INVALID_DELTA", `deltaPath '${path}': the chunk's props have no '${lastSegment}' entry`);
  }
  return editAt(props, segments, 0, action, copyJson(entry), path) as JsonObject;
}

function isDelta(chunk: ChunkFields): boolean {
  return Boolean(chunk.delta) && chunk.type !== "event";
}

/** The message after `chunk` (`message` undefined: the chunk creates it). */
export function mergeChunk(message: MessageState | undefined, chunk: ChunkFields & { messageId: string }): MessageState {
  const props = isObject(chunk.props) ? chunk.props : {};
  const delta = isDelta(chunk);
  if (message === undefined) {
    const created: MessageState = {
      id: chunk.messageId,
      type: chunk.type,
      role: chunk.role ?? "ASSISTANT",
      props: delta ? {} : (copyJson(props) as JsonObject),
      blockId: chunk.blockId ?? null,
      threadId: chunk.threadId ?? null,
    };
    if (!delta) return created;
    message = created;
  } else if (!delta) {
    return { ...message, type: chunk.type, props: copyJson(props) as JsonObject };
  }
  return { ...message, props: applyDelta(message.props, chunk.deltaPath, chunk.deltaAction, props) };
}

/**
 * The view after one published chunk (events change nothing). A `snapshot` chunk
 * replaces the whole message. Throws {@link ReducerError} and leaves `view` as it was
 * when the chunk cannot apply.
 */
export function applyChunk(view: MessagesView, chunk: ChunkFields & { readonly snapshot?: boolean | null }): MessagesView {
  const id = chunk.messageId;
  if (chunk.type === "event" || id === null || id === undefined) return view;
  const current = chunk.snapshot ? undefined : view.get(id);
  const next = new Map(view);
  next.set(id, mergeChunk(current, { ...chunk, messageId: id }));
  return next;
}

/** Checks the service makes before a batch applies (`INVALID_ARGUMENT`/`INVALID_DELTA`). */
export function checkChunk(chunk: ChunkFields, index: number): void {
  const where = `chunk ${index}`;
  if (typeof chunk.type !== "string" || codePoints(chunk.type) < 1 || codePoints(chunk.type) > MAX_TYPE) {
    throw new ReducerError("INVALID_ARGUMENT", `${where}: type must be 1-${MAX_TYPE} characters`);
  }
  if (chunk.role !== null && chunk.role !== undefined && !ROLES.includes(chunk.role)) {
    throw new ReducerError("INVALID_ARGUMENT", `${where}: role must be one of ${ROLES.join(", ")}`);
  }
  if (chunk.props !== null && chunk.props !== undefined && !isObject(chunk.props)) {
    throw new ReducerError("INVALID_ARGUMENT", `${where}: props must be a JSON object`);
  }
  for (const name of ["chunkId", "messageId", "blockId", "threadId"] as const) {
    const value = chunk[name];
    if (value !== null && value !== undefined && (codePoints(value) < 1 || codePoints(value) > MAX_NAME)) {
      throw new ReducerError("INVALID_ARGUMENT", `${where}: ${name} must be 1-${MAX_NAME} characters`);
    }
  }
  if (isDelta(chunk)) {
    const action = chunk.deltaAction || "append";
    if (!(DELTA_ACTIONS as readonly string[]).includes(action)) {
      throw new ReducerError(
        "INVALID_DELTA",
        `${where}: unknown deltaAction '${action}'; use one of ${DELTA_ACTIONS.join(", ")}`,
      );
    }
  }
}

/** What a producer-side batch works on: the stream's messages and bookkeeping. */
export interface BatchState {
  readonly seq: number;
  readonly messages: MessagesView;
  /** producer message id -> message id in `messages` */
  readonly aliases: ReadonlyMap<string, string>;
  readonly seenChunks: ReadonlySet<string>;
}

export const EMPTY_BATCH_STATE: BatchState = {
  seq: 0, messages: EMPTY_VIEW, aliases: new Map(), seenChunks: new Set(),
};

export interface BatchOutcome {
  readonly state: BatchState;
  readonly accepted: number;
  readonly duplicates: number;
}

/**
 * A `pushChunks` batch applied as the service applies it: checked first, chunk ids
 * repeated within the stream skipped as duplicates, every accepted chunk taking the
 * next `seq`, and all of it or (on any error, thrown) none of it.
 */
export function applyBatch(
  state: BatchState,
  chunks: readonly ChunkFields[],
  makeId: () => string,
): BatchOutcome {
  chunks.forEach(checkChunk);
  let { seq, messages } = state;
  const aliases = new Map(state.aliases);
  const seen = new Set(state.seenChunks);
  let duplicates = 0;
  for (const chunk of chunks) {
    if (chunk.chunkId !== null && chunk.chunkId !== undefined) {
      if (seen.has(chunk.chunkId)) {
        duplicates += 1;
        continue;
      }
      seen.add(chunk.chunkId);
    }
    seq += 1;
    if (chunk.type === "event") continue;
    let id: string;
    if (chunk.messageId !== null && chunk.messageId !== undefined) {
      const known = aliases.get(chunk.messageId);
      id = known ?? makeId();
      if (known === undefined) aliases.set(chunk.messageId, id);
    } else {
      id = makeId();
    }
    messages = applyChunk(messages, { ...chunk, messageId: id });
  }
  return {
    state: { seq, messages, aliases, seenChunks: seen },
    accepted: seq - state.seq,
    duplicates,
  };
}
