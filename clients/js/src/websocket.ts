/**
 * Finding a WebSocket implementation: the runtime's own (browsers, Deno, Bun, Node 22+),
 * else the `ws` package in Node (loaded through Node's own `require`, so bundlers for
 * browsers never see it), else an error that says what to install.
 */

/** Raised when no WebSocket implementation is available. */
export class WebSocketMissingError extends Error {
  constructor() {
    super(
      "No WebSocket implementation: this runtime has no global WebSocket (Node.js before 22). " +
        "Install the `ws` package (npm install ws), or pass one as `webSocketImpl` " +
        "in the ChatqlClient options.",
    );
    this.name = "WebSocketMissingError";
  }
}

interface NodeProcess {
  getBuiltinModule?: (name: string) => unknown;
}

interface NodeModuleBuiltin {
  createRequire(from: string): (id: string) => unknown;
}

/** `ws` from the importer's node_modules, when this is Node and it is installed. */
function nodeWs(): unknown {
  const process = (globalThis as { process?: NodeProcess }).process;
  const builtin = process?.getBuiltinModule?.("node:module") as NodeModuleBuiltin | undefined;
  if (builtin === undefined) return undefined;
  try {
    const ws = builtin.createRequire(import.meta.url)("ws") as { WebSocket?: unknown; default?: unknown };
    return ws.WebSocket ?? ws.default ?? ws;
  } catch {
    return undefined;
  }
}

/** The WebSocket constructor to use; throws {@link WebSocketMissingError} when there is none. */
export function findWebSocket(): unknown {
  const global = (globalThis as { WebSocket?: unknown }).WebSocket;
  if (typeof global === "function") return global;
  const ws = nodeWs();
  if (typeof ws === "function") return ws;
  throw new WebSocketMissingError();
}
