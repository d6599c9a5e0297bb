/**
 * The app's requests: @chatql/client's typed documents run as they are; the app's own
 * (generated into ./generated from ./operations) go through the same client, typed by
 * their document.
 */
import type { ChatqlClient } from "@chatql/client";
import type { DocumentTypeDecoration } from "@graphql-typed-document-node/core";

import type { FilesConfig } from "./config";

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

/** A part of a message's `content` list (text, or a file referenced by id). */
export type ContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "file"; readonly fileId: string; readonly mediaType: string; readonly filename: string };

/** The text a message's content says: a string as it is; of a list of parts, its text parts. */
export function contentText(value: unknown): string {
  if (Array.isArray(value)) {
    return value
      .filter((part): part is { type: "text"; text: string } => typeof part === "object" && part !== null && (part as { type?: unknown }).type === "text")
      .map((part) => String(part.text ?? ""))
      .join("\n\n");
  }
  return textOf(value);
}

/** The file parts of a message's content (a list), in order. */
export function fileParts(value: unknown): Extract<ContentPart, { type: "file" }>[] {
  if (!Array.isArray(value)) return [];
  return value.filter((part): part is Extract<ContentPart, { type: "file" }> =>
    typeof part === "object" && part !== null && (part as { type?: unknown }).type === "file");
}

/** A content with its text replaced (file parts kept where they were). */
export function withText(value: unknown, text: string): unknown {
  if (!Array.isArray(value)) return text;
  const files = fileParts(value);
  return [{ type: "text", text }, ...files];
}

/** A message's content: the text alone, or with files a list of parts (the text first). */
export function composeContent(text: string, files: readonly UploadedFile[]): unknown {
  if (files.length === 0) return text;
  return [
    ...(text ? [{ type: "text", text }] : []),
    ...files.map((file) => ({ type: "file", fileId: file.id, mediaType: file.mediaType, filename: file.filename })),
  ];
}

/** A size for people: 512 B, 3.4 KB, 12 MB. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MB`;
}

/** What POST /files answers for a stored file. */
export interface UploadedFile {
  readonly id: string;
  readonly filename: string;
  readonly mediaType: string;
  readonly size: number;
  readonly sha256: string;
}

export interface Uploader {
  (file: File, onProgress: (fraction: number) => void): Promise<UploadedFile>;
  /** The largest file the server takes, in bytes (its page config); null: it did not say. */
  readonly maxBytes: number | null;
  /** The media types it accepts (its page config), for the file picker; null: not said. */
  readonly mediaTypes: readonly string[] | null;
}

/** Why the server would refuse `file` for its size (said before any upload), or null. */
export function tooLarge(file: File, maxBytes: number | null): string | null {
  if (maxBytes === null || file.size <= maxBytes) return null;
  return `${file.name || "pasted file"}: the file is larger than ${formatSize(maxBytes)}, the largest file this server takes`;
}

/**
 * Uploads a file to POST /files (its bytes as the body, its media type and name) with the
 * app's identity headers, reporting the upload's progress. A file larger than `maxBytes`
 * (the server's limit) rejects at once, sending nothing; a refused file rejects with
 * the server's message (a file too large, a media type not accepted).
 */
export function uploader(headers: Readonly<Record<string, string>>, files: FilesConfig): Uploader {
  const { maxBytes } = files;
  const upload = (file: File, onProgress: (fraction: number) => void) => new Promise<UploadedFile>((resolve, reject) => {
    const refused = tooLarge(file, maxBytes);
    if (refused) {
      reject(new Error(refused));
      return;
    }
    const request = new XMLHttpRequest();
    request.open("POST", `/files?filename=${encodeURIComponent(file.name || "pasted")}`);
    for (const [name, value] of Object.entries(headers)) request.setRequestHeader(name, value);
    request.setRequestHeader("Content-Type", file.type || "application/octet-stream");
    request.upload.onprogress = (event) => {
      if (event.lengthComputable && event.total > 0) onProgress(event.loaded / event.total);
    };
    request.onload = () => {
      let body: unknown = null;
      try {
        body = JSON.parse(request.responseText);
      } catch {
        body = null;
      }
      if (request.status >= 200 && request.status < 300 && body) {
        onProgress(1);
        resolve(body as UploadedFile);
        return;
      }
      // The server names its limit in bytes: said in a size people read.
      const message = (body as { errors?: { message?: string }[] } | null)?.errors?.[0]?.message
        ?.replace(/larger than (\d+) bytes/, (_, bytes: string) => `larger than ${formatSize(Number(bytes))}, the largest file this server takes`);
      reject(new Error(`${file.name}: ${message ?? (request.statusText || `upload failed (${request.status})`)}`));
    };
    request.onerror = () => reject(new Error(`${file.name}: the upload failed (network error)`));
    request.send(file);
  });
  return Object.assign(upload, { maxBytes, mediaTypes: files.mediaTypes });
}
