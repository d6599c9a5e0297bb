/**
 * The app's buttons: one look per purpose (primary, plain, quiet, danger) and icon
 * buttons whose name shows as a tooltip (Radix Tooltip) on hover and keyboard focus.
 */
import * as Tooltip from "@radix-ui/react-tooltip";
import { forwardRef, type ButtonHTMLAttributes, type ReactNode } from "react";

const looks = {
  primary: "bg-zinc-900 text-white hover:bg-zinc-700 dark:bg-zinc-100 dark:text-zinc-900 dark:hover:bg-zinc-300",
  plain: "border border-zinc-300 bg-white hover:bg-zinc-100 dark:border-zinc-600 dark:bg-zinc-800 dark:hover:bg-zinc-700",
  quiet: "hover:bg-zinc-100 dark:hover:bg-zinc-800",
  danger: "text-red-700 hover:bg-red-50 dark:text-red-300 dark:hover:bg-red-950",
} as const;

export type Look = keyof typeof looks;

export function buttonClass(look: Look = "plain", extra = ""): string {
  return `inline-flex cursor-pointer items-center justify-center gap-1.5 rounded-lg px-3 py-1.5 text-sm font-medium disabled:cursor-not-allowed disabled:opacity-50 ${looks[look]} ${extra}`;
}

export const Button = forwardRef<HTMLButtonElement, ButtonHTMLAttributes<HTMLButtonElement> & { look?: Look }>(
  function Button({ look = "plain", className = "", type = "button", ...rest }, ref) {
    return <button ref={ref} type={type} className={buttonClass(look, className)} {...rest} />;
  },
);

const iconClass = "inline-flex size-8 shrink-0 cursor-pointer items-center justify-center rounded-lg text-zinc-700 hover:bg-zinc-100 disabled:cursor-not-allowed disabled:opacity-50 dark:text-zinc-300 dark:hover:bg-zinc-800";

/**
 * An icon button for each message's actions: named by `label`, its tip the browser's
 * own (`title`) — a long chat has hundreds of these, and a tooltip each would cost
 * every one of them a component tree.
 */
export function ActionButton({ label, tooltip, children, className = "", ...rest }: ButtonHTMLAttributes<HTMLButtonElement> & { label: string; tooltip?: string; children: ReactNode }) {
  return (
    <button type="button" aria-label={label} title={tooltip ?? label} className={`${iconClass} ${className}`} {...rest}>
      {children}
    </button>
  );
}

/** An icon button named by `label` (its accessible name, and its tooltip unless `tooltip` says it shorter). */
export const IconButton = forwardRef<HTMLButtonElement, ButtonHTMLAttributes<HTMLButtonElement> & { label: string; tooltip?: string; children: ReactNode }>(
  function IconButton({ label, tooltip, children, className = "", type = "button", ...rest }, ref) {
    return (
      <Tooltip.Root>
        <Tooltip.Trigger asChild>
          <button ref={ref} type={type} aria-label={label} className={`${iconClass} ${className}`} {...rest}>
            {children}
          </button>
        </Tooltip.Trigger>
        <Tooltip.Portal>
          <Tooltip.Content sideOffset={4} className="z-50 rounded-md bg-zinc-900 px-2 py-1 text-xs text-white dark:bg-zinc-100 dark:text-zinc-900">
            {tooltip ?? label}
          </Tooltip.Content>
        </Tooltip.Portal>
      </Tooltip.Root>
    );
  },
);

export const inputClass =
  "rounded-lg border border-zinc-300 bg-white px-3 py-1.5 text-sm placeholder:text-zinc-500 dark:border-zinc-600 dark:bg-zinc-800 dark:placeholder:text-zinc-400";
