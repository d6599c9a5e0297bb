/**
 * What the server tells a page (a JSON script the server writes into the HTML):
 * the authentication mode and, in dev mode, the identity headers the page request
 * carried (as a proxy in front would set them).
 */
export interface PageConfig {
  readonly auth: "dev" | "jwt";
  readonly identity: Readonly<Record<string, string>>;
}

export function pageConfig(): PageConfig {
  const element = document.getElementById("chatql-config");
  try {
    const parsed = JSON.parse(element?.textContent ?? "{}") as Partial<PageConfig>;
    return { auth: parsed.auth === "jwt" ? "jwt" : "dev", identity: parsed.identity ?? {} };
  } catch {
    return { auth: "dev", identity: {} };
  }
}

export function webSocketUrl(path: string): string {
  const url = new URL(path, location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.toString();
}
