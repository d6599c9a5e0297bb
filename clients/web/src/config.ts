/**
 * What the server tells a page (a JSON script the server writes into the HTML):
 * the authentication mode, in dev mode the identity headers the page request carried
 * (as a proxy in front would set them), and the largest file it takes
 * (`CHATQL_FILE_MAX_BYTES`; null when an older server does not say).
 */
export interface PageConfig {
  readonly auth: "dev" | "jwt";
  readonly identity: Readonly<Record<string, string>>;
  readonly files: { readonly maxBytes: number | null };
}

export function pageConfig(): PageConfig {
  const element = document.getElementById("chatql-config");
  try {
    const parsed = JSON.parse(element?.textContent ?? "{}") as Partial<PageConfig>;
    const maxBytes = parsed.files?.maxBytes;
    return {
      auth: parsed.auth === "jwt" ? "jwt" : "dev",
      identity: parsed.identity ?? {},
      files: { maxBytes: typeof maxBytes === "number" && maxBytes > 0 ? maxBytes : null },
    };
  } catch {
    return { auth: "dev", identity: {}, files: { maxBytes: null } };
  }
}

export function webSocketUrl(path: string): string {
  const url = new URL(path, location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.toString();
}
