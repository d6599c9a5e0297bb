import * as Dialog from "@radix-ui/react-dialog";
import type { FormEvent } from "react";

import type { Identity } from "../identity";
import type { ThemeChoice } from "../theme";
import { Button, inputClass } from "./controls";

/**
 * Who the app acts as (a pasted token in jwt mode; the dev identity headers otherwise)
 * and the theme, in a dialog.
 */
export function SettingsDialog({ open, onOpenChange, auth, identity, onChange, theme, onTheme }: {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  auth: "dev" | "jwt";
  identity: Identity;
  onChange: (identity: Identity) => void;
  theme: ThemeChoice;
  onTheme: (choice: ThemeChoice) => void;
}) {
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const value = (name: string) => String(form.get(name) ?? "").trim();
    if (auth === "jwt") {
      const token = value("token");
      onChange(token ? { Authorization: `Bearer ${token}` } : {});
    } else {
      onChange({ "X-User-Id": value("user"), "X-Tenant-Id": value("tenant"), "X-Team-Id": value("team"), "X-Roles": value("roles") });
    }
    onOpenChange(false);
  };
  const field = (label: string, name: string, value: string, type = "text") => (
    <label className="flex flex-col gap-1 text-sm">
      {label}
      <input name={name} type={type} defaultValue={value} className={inputClass} />
    </label>
  );
  return (
    <Dialog.Root open={open} onOpenChange={onOpenChange}>
      <Dialog.Portal>
        <Dialog.Overlay className="fixed inset-0 z-40 bg-black/40" />
        <Dialog.Content className="fixed top-1/2 left-1/2 z-50 w-[min(28rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 rounded-2xl bg-white p-5 shadow-xl dark:bg-zinc-900">
          <Dialog.Title className="text-lg font-semibold">Settings</Dialog.Title>
          <Dialog.Description className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
            {auth === "jwt" ? "The token the app signs in with (kept for this browser session)." : "The identity the app acts as (development mode)."}
          </Dialog.Description>
          <form onSubmit={submit} className="mt-4 flex flex-col gap-3">
            {auth === "jwt" ? (
              field("Token", "token", (identity.Authorization ?? "").replace(/^Bearer\s+/i, ""), "password")
            ) : (
              <div className="grid grid-cols-2 gap-3">
                {field("User", "user", identity["X-User-Id"] ?? "")}
                {field("Tenant", "tenant", identity["X-Tenant-Id"] ?? "")}
                {field("Team", "team", identity["X-Team-Id"] ?? "")}
                {field("Roles", "roles", identity["X-Roles"] ?? "")}
              </div>
            )}
            <label className="flex flex-col gap-1 text-sm">
              Theme
              <select value={theme} onChange={(event) => onTheme(event.target.value as ThemeChoice)} className={inputClass}>
                <option value="system">As the system</option>
                <option value="light">Light</option>
                <option value="dark">Dark</option>
              </select>
            </label>
            <div className="mt-2 flex justify-end gap-2">
              <Dialog.Close asChild><Button>Cancel</Button></Dialog.Close>
              <Button look="primary" type="submit">{auth === "jwt" ? "Sign in" : "Use this identity"}</Button>
            </div>
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
