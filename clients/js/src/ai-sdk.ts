/** chatql for the AI SDK: `toUIMessages`, the WebSocket `ChatTransport` and the `streamText` feeder. */
export * from "./ui-messages.js";
export * from "./ui-chunks.js";
export * from "./transport.js";
export * from "./stream-text.js";
