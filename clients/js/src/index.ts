/** chatql's TypeScript client: typed operations, the stream reducer and follower, the stream writer. */
export * from "./reducer.js";
export * from "./follower.js";
export * from "./client.js";
export * from "./producer.js";
export * from "./websocket.js";
// The typed documents (generated from schema.graphql) and their result and variables types.
export {
  ChatsDocument, ChatPageDocument, ChatDocument, MessagesDocument, MessageTreeDocument,
  ChatEventsDocument, ChatStreamDocument, CreateChatDocument, UpdateChatDocument,
  DeleteChatDocument, AppendMessagesDocument, StartStreamDocument, PushChunksDocument,
  EndStreamDocument, StopStreamDocument, EditMessageDocument, RegenerateDocument,
  FileDocument, RateMessageDocument, TypedDocumentString,
} from "./generated/operations.js";
export type {
  ChatSummaryFieldsFragment, MessageFieldsFragment, ChunkFieldsFragment, FileFieldsFragment,
  ChatsQueryVariables, ChatsQuery, ChatPageQueryVariables, ChatPageQuery,
  ChatQueryVariables, ChatQuery, MessagesQueryVariables, MessagesQuery,
  MessageTreeQueryVariables, MessageTreeQuery, ChatEventsSubscriptionVariables,
  ChatEventsSubscription, ChatStreamSubscriptionVariables, ChatStreamSubscription,
  CreateChatMutationVariables, CreateChatMutation, UpdateChatMutationVariables,
  UpdateChatMutation, DeleteChatMutationVariables, DeleteChatMutation,
  AppendMessagesMutationVariables, AppendMessagesMutation, StartStreamMutationVariables,
  StartStreamMutation, PushChunksMutationVariables, PushChunksMutation,
  EndStreamMutationVariables, EndStreamMutation, StopStreamMutationVariables,
  StopStreamMutation, EditMessageMutationVariables, EditMessageMutation,
  RegenerateMutationVariables, RegenerateMutation, FileQueryVariables, FileQuery,
  RateMessageMutationVariables, RateMessageMutation,
} from "./generated/operations.js";
export type * as Schema from "./generated/schema.js";
