import { formatSize } from "../api";
import type { MessageFileFragment } from "../generated/operations";
import { FileIcon } from "./icons";

export type MessageFile = MessageFileFragment;

/** A file a message references as shown: stored (with its address) or just sent (its name only). */
export interface ShownFile {
  readonly id: string;
  readonly filename: string;
  readonly mediaType: string;
  readonly size?: number | null;
  readonly url?: string | null;
}

const chipClass = "inline-flex max-w-64 items-center gap-2 rounded-lg border border-zinc-200 bg-white px-2.5 py-1.5 text-sm dark:border-zinc-700 dark:bg-zinc-900";

/** A message's files: images as thumbnails (opened full size), the others as chips that download. */
export function MessageFiles({ files, align = "start" }: { files: readonly ShownFile[]; align?: "start" | "end" }) {
  if (files.length === 0) return null;
  return (
    <ul aria-label="Attachments" className={`flex max-w-[85%] flex-wrap gap-2 ${align === "end" ? "justify-end" : ""}`}>
      {files.map((file) => (
        <li key={file.id}>
          {file.mediaType.startsWith("image/") && file.url ? (
            <a href={file.url} target="_blank" rel="noreferrer" title={file.filename}
              className="block overflow-hidden rounded-lg border border-zinc-200 dark:border-zinc-700">
              <img src={file.url} alt={file.filename} loading="lazy" className="max-h-48 min-h-16 max-w-64 min-w-16 object-contain" />
            </a>
          ) : file.url ? (
            <a href={file.url} download={file.filename} title={`Download ${file.filename}`} className={`${chipClass} hover:bg-zinc-50 dark:hover:bg-zinc-800`}>
              <FileIcon />
              <span className="sr-only">Download </span>
              <span className="truncate">{file.filename}</span>
              {file.size ? <span className="shrink-0 text-xs text-zinc-600 dark:text-zinc-400">{formatSize(file.size)}</span> : null}
            </a>
          ) : (
            <span className={chipClass}><FileIcon /><span className="truncate">{file.filename}</span></span>
          )}
        </li>
      ))}
    </ul>
  );
}
