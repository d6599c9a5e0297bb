/** chatql's TypeScript client: typed operations, the stream reducer and follower, the stream writer. */
export * from "./reducer.js";
export * from "./follower.js";
export * from "./client.js";
export * from "./producer.js";
export * from "./websocket.js";
export type * as Operations from "./generated/operations.js";
export * as documents from "./generated/operations.js";
export type * as Schema from "./generated/schema.js";
