import { forwardRef, useState, type KeyboardEvent } from "react";

/**
 * Where the person writes: Enter sends, Shift+Enter breaks the line. Sending is off while
 * a reply streams; Stop sits beside it then.
 */
export const Composer = forwardRef<HTMLTextAreaElement, {
  streaming: boolean;
  stopping: boolean;
  onSend: (text: string) => Promise<boolean>;
  onStop: () => void;
}>(function Composer({ streaming, stopping, onSend, onStop }, ref) {
  const [text, setText] = useState("");
  const [sending, setSending] = useState(false);
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
  return (
    <form className="composer" aria-label="Message composer" onSubmit={(event) => {
      event.preventDefault();
      void send();
    }}>
      <textarea ref={ref} aria-label="Message" placeholder="Write a message (Enter sends, Shift+Enter for a new line)"
        value={text} rows={2} onChange={(event) => setText(event.target.value)} onKeyDown={onKeyDown}
        disabled={streaming} />
      {streaming ? (
        <button type="button" onClick={onStop} disabled={stopping}>Stop</button>
      ) : (
        <button type="submit" disabled={sending || text.trim() === ""}>Send</button>
      )}
    </form>
  );
});
