import { UpdateChatDocument, type ChatqlClient } from "@chatql/client";
import * as DropdownMenu from "@radix-ui/react-dropdown-menu";
import { memo, useRef, useState, type FormEvent, type ReactNode } from "react";

import type { ChatDetails } from "../thread";
import { useToast } from "../toast";
import { Button, IconButton, inputClass } from "./controls";
import { MoreIcon, PinIcon } from "./icons";

const itemClass = "flex cursor-pointer items-center rounded-md px-3 py-1.5 text-sm outline-none select-none data-[disabled]:cursor-not-allowed data-[disabled]:opacity-50 data-[highlighted]:bg-zinc-100 dark:data-[highlighted]:bg-zinc-700";

/**
 * The chat's title, pin and a menu (rename, share, export, start over, delete); below it the
 * tags and the usage. Memoised: an answer streaming below does not draw it again.
 */
export const ChatHeader = memo(function ChatHeader({ client, chat, menu, streaming, onChanged, onPinned, onStartOver, onExport, onShare, onDelete }: {
  client: ChatqlClient;
  chat: ChatDetails;
  menu: ReactNode;
  streaming: boolean;
  onChanged: () => Promise<void>;
  onPinned: () => void;
  onStartOver: () => Promise<void>;
  onExport: () => Promise<void>;
  onShare: () => Promise<void>;
  onDelete: () => Promise<void>;
}) {
  const [renaming, setRenaming] = useState(false);
  const [tagging, setTagging] = useState(false);
  const toast = useToast();
  const menuButton = useRef<HTMLButtonElement>(null);
  // A menu item that opens a form keeps the focus there when the menu closes.
  const keepFocus = useRef(false);
  const title = chat.title || "Untitled chat";
  const update = async (input: { title?: string; pinned?: boolean; tags?: string[] }) => {
    try {
      await client.request(UpdateChatDocument, { id: chat.id, input });
      await onChanged();
      return true;
    } catch (error) {
      toast.fail(error);
      return false;
    }
  };
  const rename = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const value = String(new FormData(event.currentTarget).get("title") ?? "").trim();
    if (value && (await update({ title: value }))) {
      setRenaming(false);
      setTimeout(() => menuButton.current?.focus());
    }
  };
  const addTag = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const value = String(new FormData(form).get("tag") ?? "").trim();
    if (value && !chat.tags.includes(value) && (await update({ tags: [...chat.tags, value] }))) form.reset();
  };
  const { usage } = chat;
  const secondary = "text-xs text-zinc-600 dark:text-zinc-400";
  return (
    <header className="shrink-0 border-b border-zinc-200 px-3 py-2 dark:border-zinc-800">
      <div className="flex min-h-10 items-center gap-1.5">
        {menu}
        {renaming ? (
          <form onSubmit={(event) => void rename(event)} className="flex min-w-0 flex-1 items-center gap-2">
            <input name="title" aria-label="Chat title" defaultValue={chat.title ?? ""} autoFocus className={`${inputClass} min-w-0 flex-1`}
              onKeyDown={(event) => event.key === "Escape" && setRenaming(false)} />
            <Button look="primary" type="submit">Save title</Button>
            <Button onClick={() => setRenaming(false)}>Cancel</Button>
          </form>
        ) : (
          <h1 className="min-w-0 flex-1 truncate text-base font-semibold" title={title}>{title}</h1>
        )}
        {streaming && <span className="rounded-full bg-emerald-100 px-2 py-0.5 text-xs font-medium text-emerald-900 dark:bg-emerald-900 dark:text-emerald-100" role="status">Streaming…</span>}
        <IconButton label={chat.pinned ? "Pinned" : "Pin"} aria-pressed={chat.pinned}
          className="aria-pressed:text-amber-700 dark:aria-pressed:text-amber-300"
          onClick={() => void update({ pinned: !chat.pinned }).then((done) => done && onPinned())}>
          <PinIcon />
        </IconButton>
        <DropdownMenu.Root modal={false}>
          <DropdownMenu.Trigger asChild>
            <IconButton label="Chat actions" ref={menuButton}><MoreIcon /></IconButton>
          </DropdownMenu.Trigger>
          <DropdownMenu.Portal>
            <DropdownMenu.Content align="end" sideOffset={4}
              onCloseAutoFocus={(event) => {
                if (keepFocus.current) event.preventDefault();
                keepFocus.current = false;
              }}
              className="z-50 min-w-44 rounded-lg border border-zinc-200 bg-white p-1 shadow-lg dark:border-zinc-700 dark:bg-zinc-800">
              <DropdownMenu.Item className={itemClass} onSelect={() => {
                keepFocus.current = true;
                setRenaming(true);
              }}>Rename</DropdownMenu.Item>
              <DropdownMenu.Item className={itemClass} onSelect={() => {
                keepFocus.current = true;
                setTagging(true);
              }}>Add a tag</DropdownMenu.Item>
              <DropdownMenu.Item className={itemClass} onSelect={() => void onShare()}>Share</DropdownMenu.Item>
              <DropdownMenu.Item className={itemClass} onSelect={() => void onExport()}>Export</DropdownMenu.Item>
              <DropdownMenu.Item className={itemClass} disabled={streaming} onSelect={() => void onStartOver()}>Start over</DropdownMenu.Item>
              <DropdownMenu.Separator className="my-1 h-px bg-zinc-200 dark:bg-zinc-700" />
              <DropdownMenu.Item className={`${itemClass} text-red-700 dark:text-red-300`} onSelect={() => void onDelete()}>Delete</DropdownMenu.Item>
            </DropdownMenu.Content>
          </DropdownMenu.Portal>
        </DropdownMenu.Root>
      </div>
      <div className="flex flex-wrap items-center gap-x-3 gap-y-1 pt-1">
        <ul className="flex flex-wrap items-center gap-1" aria-label="Tags">
          {chat.tags.map((tag) => (
            <li key={tag} className="inline-flex items-center rounded-full bg-zinc-100 pl-2 text-xs dark:bg-zinc-800">
              {tag}
              <button type="button" aria-label={`Remove tag ${tag}`} className="cursor-pointer rounded-full px-1.5 hover:bg-zinc-200 dark:hover:bg-zinc-700"
                onClick={() => void update({ tags: chat.tags.filter((t) => t !== tag) })}>×</button>
            </li>
          ))}
        </ul>
        {tagging && (
          <form onSubmit={(event) => void addTag(event)} className="flex items-center gap-1">
            <input name="tag" aria-label="New tag" placeholder="Add a tag" size={10} autoFocus className={`${inputClass} py-0.5 text-xs`}
              onKeyDown={(event) => event.key === "Escape" && setTagging(false)} />
            <Button type="submit" className="px-2 py-0.5 text-xs">Add tag</Button>
          </form>
        )}
        <span className={`${secondary} ml-auto`} aria-label="Usage">
          Usage: {usage.promptTokens} prompt + {usage.completionTokens} completion tokens
        </span>
      </div>
    </header>
  );
});
