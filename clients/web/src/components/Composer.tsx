import { forwardRef, useId, useLayoutEffect, useRef, useState, type KeyboardEvent } from "react";

import { StopIcon, SendIcon } from "./icons";

/**
 * Where the person writes: Enter sends, Shift+Enter breaks the line. The text is the
 * composer's own state, whatever happens to the chat meanwhile. Sending is off while a
 * reply streams; Stop takes the send button's place then.
 */
export const Composer = forwardRef<HTMLTextAreaElement, {
  streaming: boolean;
  stopping: boolean;
  onSend: (text: string) => Promise<boolean>;
  onStop: () => void;
  autoFocus?: boolean;
  placeholder?: string;
}>(function Composer({ streaming, stopping, onSend, onStop, autoFocus = false, placeholder }, ref) {
  const [text, setText] = useState("");
  const [sending, setSending] = useState(false);
  const box = useRef<HTMLTextAreaElement | null>(null);
  const hint = useId();
  const send = async () => {
    const value = text.trim();
    if (!value || streaming || sending) return;
    setSending(true);
    const sent = await onSend(value);
    setSending(false);
    if (sent) setText("");
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send();
    }
  };
  // Grows with its text, up to about ten lines.
  useLayoutEffect(() => {
    const element = box.current;
    if (!element) return;
    element.style.height = "auto";
    element.style.height = `${Math.min(element.scrollHeight, 240)}px`;
  }, [text]);
  return (
    <form aria-label="Message composer" className="mx-auto w-full max-w-3xl px-3 pb-3 sm:px-4" onSubmit={(event) => {
      event.preventDefault();
      void send();
    }}>
      <div className="flex items-end gap-2 rounded-2xl border border-zinc-300 bg-white p-2 shadow-sm focus-within:border-zinc-500 dark:border-zinc-600 dark:bg-zinc-800 dark:focus-within:border-zinc-400">
        <textarea ref={(element) => {
          box.current = element;
          if (typeof ref === "function") ref(element);
          else if (ref) ref.current = element;
        }} aria-label="Message" placeholder={placeholder ?? "Write a message"}
          aria-describedby={hint}
          value={text} rows={1} autoFocus={autoFocus} onChange={(event) => setText(event.target.value)} onKeyDown={onKeyDown}
          disabled={streaming}
          className="max-h-60 min-h-10 flex-1 resize-none bg-transparent px-2 py-2 text-base placeholder:text-zinc-500 focus-visible:outline-none disabled:opacity-60 dark:placeholder:text-zinc-400" />
        {streaming ? (
          <button type="button" onClick={onStop} disabled={stopping} aria-label="Stop"
            className="inline-flex size-9 shrink-0 cursor-pointer items-center justify-center rounded-full bg-zinc-900 text-white disabled:opacity-50 dark:bg-zinc-100 dark:text-zinc-900">
            <StopIcon />
          </button>
        ) : (
          <button type="submit" disabled={sending || text.trim() === ""} aria-label="Send"
            className="inline-flex size-9 shrink-0 cursor-pointer items-center justify-center rounded-full bg-zinc-900 text-white disabled:cursor-not-allowed disabled:opacity-40 dark:bg-zinc-100 dark:text-zinc-900">
            <SendIcon />
          </button>
        )}
      </div>
      <p id={hint} className="mt-1.5 hidden text-center text-xs text-zinc-600 sm:block dark:text-zinc-400">Enter sends · Shift+Enter for a new line</p>
    </form>
  );
});
