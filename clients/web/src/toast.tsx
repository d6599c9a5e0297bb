/**
 * Short notices in a corner (Radix Toast): "Copied", a link shared, and every error a
 * request returns. `useToast()` hands out `notify(text, kind)`.
 */
import * as Toast from "@radix-ui/react-toast";
import { createContext, useCallback, useContext, useMemo, useRef, useState, type ReactNode } from "react";

type Kind = "info" | "error";

interface Notice {
  readonly id: number;
  readonly text: string;
  readonly kind: Kind;
}

export interface Notifier {
  notify(text: string, kind?: Kind): void;
  /** An error as a toast (its message). */
  fail(error: unknown): void;
}

const Context = createContext<Notifier>({ notify: () => undefined, fail: () => undefined });

export function useToast(): Notifier {
  return useContext(Context);
}

export function ToastProvider({ children }: { children: ReactNode }) {
  const [notices, setNotices] = useState<readonly Notice[]>([]);
  const next = useRef(0);
  const notify = useCallback((text: string, kind: Kind = "info") => {
    const id = ++next.current;
    setNotices((shown) => [...shown.filter((notice) => notice.text !== text), { id, text, kind }].slice(-3));
  }, []);
  const notifier = useMemo<Notifier>(() => ({
    notify,
    fail: (error: unknown) => notify(error instanceof Error ? error.message : String(error), "error"),
  }), [notify]);
  const close = (id: number) => setNotices((shown) => shown.filter((notice) => notice.id !== id));
  return (
    <Context.Provider value={notifier}>
      <Toast.Provider swipeDirection="right" duration={5000}>
        {children}
        {notices.map((notice) => (
          <Toast.Root key={notice.id} type={notice.kind === "error" ? "foreground" : "background"}
            duration={notice.kind === "error" ? 8000 : 3000}
            onOpenChange={(open) => !open && close(notice.id)}
            className={`flex items-start gap-3 rounded-lg border px-4 py-3 text-sm shadow-lg ${notice.kind === "error"
              ? "border-red-300 bg-red-50 text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100"
              : "border-zinc-200 bg-white text-zinc-900 dark:border-zinc-700 dark:bg-zinc-800 dark:text-zinc-100"}`}>
            <Toast.Description className="flex-1">{notice.text}</Toast.Description>
            <Toast.Close aria-label="Dismiss" className="cursor-pointer rounded px-1 text-base leading-none">×</Toast.Close>
          </Toast.Root>
        ))}
        <Toast.Viewport className="fixed right-0 bottom-0 z-50 m-0 flex w-96 max-w-full list-none flex-col gap-2 p-4 outline-none" />
      </Toast.Provider>
    </Context.Provider>
  );
}
