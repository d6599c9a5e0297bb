import { forwardRef, memo, useEffect, useId, useLayoutEffect, useRef, useState, type ClipboardEvent, type DragEvent, type KeyboardEvent } from "react";

import { formatSize, tooLarge, type UploadedFile, type Uploader } from "../api";
import { useToast } from "../toast";
import { CloseIcon, FileIcon, PaperclipIcon, SendIcon, StopIcon } from "./icons";

/** A file in the composer: uploading (with its progress), then uploaded (its stored id). */
interface Attachment {
  readonly key: number;
  readonly file: File;
  /** An image's preview (an object URL of the file itself). */
  readonly preview: string | null;
  readonly progress: number;
  readonly uploaded: UploadedFile | null;
}

/**
 * Where the person writes: Enter sends, Shift+Enter breaks the line. The text is the
 * composer's own state, whatever happens to the chat meanwhile. Sending is off while a
 * reply streams; Stop takes the send button's place then. With `upload`, files join the
 * message: the attach button, a pasted image, or files dropped on the composer, each
 * uploaded at once (its progress shown) and sent with the text; one larger than the server
 * takes is refused before any upload, the limit named.
 */
export const Composer = memo(forwardRef<HTMLTextAreaElement, {
  streaming: boolean;
  stopping: boolean;
  onSend: (text: string, files: readonly UploadedFile[]) => Promise<boolean>;
  onStop: () => void;
  autoFocus?: boolean;
  placeholder?: string;
  upload?: Uploader;
}>(function Composer({ streaming, stopping, onSend, onStop, autoFocus = false, placeholder, upload }, ref) {
  const [text, setText] = useState("");
  const [attachments, setAttachments] = useState<readonly Attachment[]>([]);
  const [dragging, setDragging] = useState(false);
  const box = useRef<HTMLTextAreaElement | null>(null);
  const picker = useRef<HTMLInputElement | null>(null);
  const nextKey = useRef(0);
  const toast = useToast();
  const hint = useId();
  const uploading = attachments.some((attachment) => attachment.uploaded === null);
  const ready = attachments.filter((attachment) => attachment.uploaded !== null);

  // The previews' object URLs go with the composer.
  const previews = useRef(new Set<string>());
  useEffect(() => () => previews.current.forEach((url) => URL.revokeObjectURL(url)), []);
  const drop = (key: number) => setAttachments((current) => current.filter((attachment) => {
    if (attachment.key === key && attachment.preview) {
      URL.revokeObjectURL(attachment.preview);
      previews.current.delete(attachment.preview);
    }
    return attachment.key !== key;
  }));

  const add = (files: readonly File[]) => {
    if (!upload) return;
    for (const file of files) {
      // Larger than the server takes: said at once, nothing uploaded.
      const refused = tooLarge(file, upload.maxBytes);
      if (refused) {
        toast.notify(refused, "error");
        continue;
      }
      const key = ++nextKey.current;
      const preview = file.type.startsWith("image/") ? URL.createObjectURL(file) : null;
      if (preview) previews.current.add(preview);
      setAttachments((current) => [...current, { key, file, preview, progress: 0, uploaded: null }]);
      const change = (patch: Partial<Attachment>) =>
        setAttachments((current) => current.map((attachment) => attachment.key === key ? { ...attachment, ...patch } : attachment));
      upload(file, (progress) => change({ progress }))
        .then((uploaded) => change({ uploaded, progress: 1 }))
        .catch((error: unknown) => {
          toast.fail(error);
          drop(key);
        });
    }
  };

  // Emptied as the message goes (the chat shows it at once), and given back when the send
  // fails; one send at a time.
  const sending = useRef(false);
  const send = async () => {
    const value = text.trim();
    if ((!value && ready.length === 0) || uploading || streaming || sending.current) return;
    sending.current = true;
    const kept = { text, attachments };
    setText("");
    setAttachments([]);
    let sent = false;
    try {
      sent = await onSend(value, ready.map((attachment) => attachment.uploaded as UploadedFile));
    } finally {
      sending.current = false;
    }
    if (sent) {
      for (const attachment of kept.attachments) {
        if (!attachment.preview) continue;
        URL.revokeObjectURL(attachment.preview);
        previews.current.delete(attachment.preview);
      }
    } else {
      setText((now) => (now === "" ? kept.text : now));
      setAttachments((now) => [...kept.attachments, ...now]);
    }
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send();
    }
  };
  const onPaste = (event: ClipboardEvent<HTMLTextAreaElement>) => {
    if (!upload) return;
    const files = [...event.clipboardData.files];
    if (files.length === 0) return;
    event.preventDefault();
    add(files);
  };
  const dragHasFiles = (event: DragEvent) => [...event.dataTransfer.types].includes("Files");
  // Grows with its text, up to about ten lines.
  // (Emptied, as a message goes, it takes its one-line height without being measured: no
  // layout forced in the frame that answers Enter.)
  useLayoutEffect(() => {
    const element = box.current;
    if (!element) return;
    if (text === "") {
      element.style.height = "";
      return;
    }
    element.style.height = "auto";
    element.style.height = `${Math.min(element.scrollHeight, 240)}px`;
  }, [text]);
  const limit = upload?.maxBytes ? ` (up to ${formatSize(upload.maxBytes)} each)` : "";
  const canSend = !uploading && (text.trim() !== "" || ready.length > 0);
  return (
    <form aria-label="Message composer" className="mx-auto w-full max-w-3xl px-3 pb-3 sm:px-4" onSubmit={(event) => {
      event.preventDefault();
      void send();
    }}
      onDragOver={(event) => {
        if (!upload || !dragHasFiles(event)) return;
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(event) => {
        if (!upload) return;
        event.preventDefault();
        setDragging(false);
        add([...event.dataTransfer.files]);
      }}>
      <div className={`flex flex-col gap-2 rounded-2xl border bg-white p-2 shadow-sm focus-within:border-zinc-500 dark:bg-zinc-800 dark:focus-within:border-zinc-400 ${dragging ? "border-blue-500 ring-2 ring-blue-300 dark:border-blue-400" : "border-zinc-300 dark:border-zinc-600"}`}>
        {attachments.length > 0 && (
          <ul aria-label="Files to send" className="flex flex-wrap gap-2 px-1 pt-1">
            {attachments.map((attachment) => {
              const name = attachment.file.name || "pasted file";
              return (
                <li key={attachment.key} className="relative flex max-w-60 items-center gap-2 rounded-lg border border-zinc-200 bg-zinc-50 py-1 pr-8 pl-1 text-sm dark:border-zinc-700 dark:bg-zinc-900">
                  {attachment.preview
                    ? <img src={attachment.preview} alt="" className="size-10 shrink-0 rounded object-cover" />
                    : <span className="flex size-10 shrink-0 items-center justify-center rounded bg-zinc-200 dark:bg-zinc-700"><FileIcon /></span>}
                  <span className="flex min-w-0 flex-col">
                    <span className="truncate font-medium">{name}</span>
                    <span className="text-xs text-zinc-600 dark:text-zinc-400">
                      {formatSize(attachment.file.size)}{attachment.uploaded ? "" : ` · uploading ${Math.round(attachment.progress * 100)}%`}
                    </span>
                    {!attachment.uploaded && (
                      <progress aria-label={`Uploading ${name}`} value={Math.round(attachment.progress * 100)} max={100} className="h-1 w-full" />
                    )}
                  </span>
                  <button type="button" aria-label={`Remove ${name}`} title="Remove" onClick={() => drop(attachment.key)}
                    className="absolute top-1 right-1 inline-flex size-6 cursor-pointer items-center justify-center rounded-full text-zinc-700 hover:bg-zinc-200 dark:text-zinc-300 dark:hover:bg-zinc-700">
                    <CloseIcon />
                  </button>
                </li>
              );
            })}
          </ul>
        )}
        <div className="flex items-end gap-2">
          {upload && (
            <>
              <input ref={picker} type="file" multiple className="hidden" tabIndex={-1}
                accept={upload.mediaTypes?.join(",")}
                onChange={(event) => {
                  add([...(event.target.files ?? [])]);
                  event.target.value = "";
                }} />
              <button type="button" aria-label="Attach files" title={`Attach files${limit}`} disabled={streaming} onClick={() => picker.current?.click()}
                className="inline-flex size-9 shrink-0 cursor-pointer items-center justify-center rounded-full text-zinc-700 hover:bg-zinc-100 disabled:cursor-not-allowed disabled:opacity-40 dark:text-zinc-300 dark:hover:bg-zinc-700">
                <PaperclipIcon />
              </button>
            </>
          )}
          <textarea ref={(element) => {
            box.current = element;
            if (typeof ref === "function") ref(element);
            else if (ref) ref.current = element;
          }} aria-label="Message" placeholder={placeholder ?? "Write a message"}
            aria-describedby={hint}
            value={text} rows={1} autoFocus={autoFocus} onChange={(event) => setText(event.target.value)} onKeyDown={onKeyDown}
            onPaste={onPaste}
            disabled={streaming}
            className="max-h-60 min-h-10 flex-1 resize-none bg-transparent px-2 py-2 text-base placeholder:text-zinc-500 focus-visible:outline-none disabled:opacity-60 dark:placeholder:text-zinc-400" />
          {streaming ? (
            <button type="button" onClick={onStop} disabled={stopping} aria-label="Stop"
              className="inline-flex size-9 shrink-0 cursor-pointer items-center justify-center rounded-full bg-zinc-900 text-white disabled:opacity-50 dark:bg-zinc-100 dark:text-zinc-900">
              <StopIcon />
            </button>
          ) : (
            <button type="submit" disabled={!canSend} aria-label="Send"
              className="inline-flex size-9 shrink-0 cursor-pointer items-center justify-center rounded-full bg-zinc-900 text-white disabled:cursor-not-allowed disabled:opacity-40 dark:bg-zinc-100 dark:text-zinc-900">
              <SendIcon />
            </button>
          )}
        </div>
      </div>
      <p id={hint} className="mt-1.5 hidden text-center text-xs text-zinc-600 sm:block dark:text-zinc-400">
        Enter sends · Shift+Enter for a new line{upload ? ` · paste or drop files to attach${limit}` : ""}
      </p>
    </form>
  );
}));
