/**
 * Who the app acts as. In dev mode: the identity headers the page request carried
 * (or `dev` in tenant `default`), switchable by the person and kept in localStorage.
 * In jwt mode: a bearer token the person pastes, kept for the browser session.
 */
import type { PageConfig } from "./config";

export type Identity = Readonly<Record<string, string>>;

const KEY = "chatql.identity";
const TOKEN_KEY = "chatql.token";

export function initialIdentity(config: PageConfig): Identity {
  if (config.auth === "jwt") {
    const token = sessionStorage.getItem(TOKEN_KEY);
    return token ? { Authorization: `Bearer ${token}` } : {};
  }
  const saved = localStorage.getItem(KEY);
  if (saved) {
    try {
      return JSON.parse(saved) as Identity;
    } catch {
      localStorage.removeItem(KEY);
    }
  }
  return { ...config.identity };
}

export function saveIdentity(config: PageConfig, identity: Identity): void {
  if (config.auth === "jwt") {
    const token = (identity.Authorization ?? "").replace(/^Bearer\s+/i, "");
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } else {
    localStorage.setItem(KEY, JSON.stringify(identity));
  }
}

/** Only the non-empty headers (an empty X-Team-Id would name an empty team). */
export function headersOf(identity: Identity): Identity {
  return Object.fromEntries(Object.entries(identity).filter(([, value]) => value.trim() !== ""));
}
