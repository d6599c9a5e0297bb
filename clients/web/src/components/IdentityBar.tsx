import { useState, type FormEvent } from "react";

import type { Identity } from "../identity";

/** Who the app acts as: a pasted token (jwt mode) or the dev identity headers, switchable. */
export function IdentityBar({ auth, identity, onChange }: {
  auth: "dev" | "jwt";
  identity: Identity;
  onChange: (identity: Identity) => void;
}) {
  const [editing, setEditing] = useState(false);
  if (auth === "jwt") {
    return (
      <form className="identity" onSubmit={(event: FormEvent<HTMLFormElement>) => {
        event.preventDefault();
        const token = String(new FormData(event.currentTarget).get("token") ?? "").trim();
        onChange(token ? { Authorization: `Bearer ${token}` } : {});
      }}>
        <label>Token <input name="token" type="password" defaultValue={(identity.Authorization ?? "").replace(/^Bearer\s+/i, "")} /></label>
        <button type="submit">Sign in</button>
      </form>
    );
  }
  const user = identity["X-User-Id"] || "dev";
  const tenant = identity["X-Tenant-Id"] || "default";
  if (!editing) {
    return (
      <span className="identity">
        Signed in as <strong>{user}</strong> in {tenant}
        <button type="button" onClick={() => setEditing(true)}>Switch user</button>
      </span>
    );
  }
  return (
    <form className="identity" onSubmit={(event: FormEvent<HTMLFormElement>) => {
      event.preventDefault();
      const form = new FormData(event.currentTarget);
      const value = (name: string) => String(form.get(name) ?? "").trim();
      onChange({ "X-User-Id": value("user"), "X-Tenant-Id": value("tenant"), "X-Team-Id": value("team"), "X-Roles": value("roles") });
      setEditing(false);
    }}>
      <label>User <input name="user" defaultValue={identity["X-User-Id"] ?? ""} /></label>
      <label>Tenant <input name="tenant" defaultValue={identity["X-Tenant-Id"] ?? ""} /></label>
      <label>Team <input name="team" defaultValue={identity["X-Team-Id"] ?? ""} /></label>
      <label>Roles <input name="roles" defaultValue={identity["X-Roles"] ?? ""} /></label>
      <button type="submit">Use this identity</button>
    </form>
  );
}
