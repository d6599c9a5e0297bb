/**
 * What the server tells a page (a JSON script the server writes into the HTML):
 * the authentication mode, in dev mode the identity headers the page request carried
 * (as a proxy in front would set them), and the files it takes: the largest
 * (`CHATQL_FILE_MAX_BYTES`) and the media types (`CHATQL_FILE_TYPES`), each null when an
 * older server does not say.
 */
export interface PageConfig {
  readonly auth: "dev" | "jwt";
  readonly identity: Readonly<Record<string, string>>;
  readonly files: FilesConfig;
}

/** What files the server takes (the `fileLimits` query answers the same). */
export interface FilesConfig {
  /** The largest, in bytes; null: not said. */
  readonly maxBytes: number | null;
  /** The media types accepted (a file picker offers them); null: not said. */
  readonly mediaTypes: readonly string[] | null;
}

export function pageConfig(): PageConfig {
  const element = document.getElementById("chatql-config");
  try {
    const parsed = JSON.parse(element?.textContent ?? "{}") as Partial<PageConfig>;
    const maxBytes = parsed.files?.maxBytes;
    const mediaTypes = parsed.files?.mediaTypes;
    return {
      auth: parsed.auth === "jwt" ? "jwt" : "dev",
      identity: parsed.identity ?? {},
      files: {
        maxBytes: typeof maxBytes === "number" && maxBytes > 0 ? maxBytes : null,
        mediaTypes: Array.isArray(mediaTypes) && mediaTypes.every((type) => typeof type === "string") ? mediaTypes : null,
      },
    };
  } catch {
    return { auth: "dev", identity: {}, files: { maxBytes: null, mediaTypes: null } };
  }
}

export function webSocketUrl(path: string): string {
  const url = new URL(path, location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.toString();
}
