/** chatql's TypeScript client: the stream reducer, the stream follower and React hooks. */
export * from "./reducer.js";
export * from "./follower.js";
export * from "./client.js";
export type * as Schema from "./generated/schema.js";
