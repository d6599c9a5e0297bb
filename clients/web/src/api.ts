/**
 * The app's requests: @chatql/client's typed documents run as they are; the app's own
 * (generated into ./generated from ./operations) go through the same client, typed by
 * their document.
 */
import type { ChatqlClient } from "@chatql/client";
import type { DocumentTypeDecoration } from "@graphql-typed-document-node/core";

export function run<TResult, TVariables>(
  client: ChatqlClient,
  document: DocumentTypeDecoration<TResult, TVariables>,
  variables: TVariables,
): Promise<TResult> {
  return client.request<TResult>(String(document), variables as Record<string, unknown>);
}

/** A fresh id for an idempotent write (appendId), so a retried send writes once. */
export function writeId(): string {
  return crypto.randomUUID();
}

/** The text of a message's content (strings as they are, anything else as JSON). */
export function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined || value === null) return "";
  return JSON.stringify(value, null, 2);
}
